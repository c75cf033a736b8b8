package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// at returns a fixed UTC time sec seconds after a base, for readable
// timestamps in tests.
func at(sec int64) time.Time {
	return time.Unix(1_700_000_000+sec, 0).UTC()
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func convID(c Conversation) string { return c.ID }

func TestConversationRoundTripAndIsolation(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)

		in := Conversation{
			AppID: f.app, EndUserID: f.alice.ID, Name: "New conversation",
			Inputs: json.RawMessage(`{"city":"Paris","n":1}`), Introduction: "Hi!", CreatedAt: at(10),
		}
		c, err := s.CreateConversation(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if c.ID == "" || c.Status != ConversationStatusNormal || !c.UpdatedAt.Equal(at(10)) {
			t.Fatalf("CreateConversation = %+v", c)
		}
		got, err := s.Conversation(ctx, f.app, f.alice.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("Conversation = %+v\nwant %+v", got, c)
		}
		// Empty inputs are stored as an object.
		empty, err := s.CreateConversation(ctx, Conversation{AppID: f.app, EndUserID: f.alice.ID})
		if err != nil || string(empty.Inputs) != "{}" {
			t.Fatalf("conversation without inputs = %+v, %v", empty, err)
		}

		// Nobody else sees it, and the errors do not say why.
		var msgs []string
		for name, lookup := range map[string]struct{ app, user, id string }{
			"other end user":            {f.app, f.bob.ID, c.ID},
			"other app":                 {f.otherApp, f.alice.ID, c.ID},
			"same session in other app": {f.otherApp, f.aliceInOtherApp.ID, c.ID},
		} {
			_, err := s.Conversation(ctx, lookup.app, lookup.user, lookup.id)
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", name, err)
				continue
			}
			msgs = append(msgs, err.Error())
		}
		if _, err := s.Conversation(ctx, f.app, f.alice.ID, NewID()); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown id: err = %v, want ErrNotFound", err)
		}
		if err := s.NameConversation(ctx, f.app, f.bob.ID, c.ID, "mine now"); !errors.Is(err, ErrNotFound) {
			t.Errorf("NameConversation by another user: err = %v, want ErrNotFound", err)
		}
		if _, err := s.RenameConversation(ctx, f.app, f.bob.ID, c.ID, "mine now"); !errors.Is(err, ErrNotFound) {
			t.Errorf("rename by another user: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteConversation(ctx, f.app, f.bob.ID, c.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("delete by another user: err = %v, want ErrNotFound", err)
		}
		if err := s.SetConversationStatus(ctx, f.otherApp, c.ID, ConversationStatusEnded); !errors.Is(err, ErrNotFound) {
			t.Errorf("status from another app: err = %v, want ErrNotFound", err)
		}

		// An end user cannot start a conversation in another app.
		for name, bad := range map[string]Conversation{
			"user of other app": {AppID: f.app, EndUserID: f.aliceInOtherApp.ID},
			"unknown user":      {AppID: f.app, EndUserID: NewID()},
			"unknown app":       {AppID: NewID(), EndUserID: f.alice.ID},
		} {
			if _, err := s.CreateConversation(ctx, bad); !errors.Is(err, ErrNotFound) {
				t.Errorf("create with %s: err = %v, want ErrNotFound", name, err)
			}
		}
		if _, err := s.CreateConversation(ctx, Conversation{ID: c.ID, AppID: f.app, EndUserID: f.alice.ID}); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate id: err = %v, want ErrConflict", err)
		}
		for name, bad := range map[string]Conversation{
			"bad status": {AppID: f.app, EndUserID: f.alice.ID, Status: "archived"},
			"bad inputs": {AppID: f.app, EndUserID: f.alice.ID, Inputs: json.RawMessage(`{"a":`)},
		} {
			if _, err := s.CreateConversation(ctx, bad); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("create with %s: err = %v, want a validation error", name, err)
			}
		}

		// Naming (the title job's rename) changes the name and nothing else a rename would not.
		if err := s.NameConversation(ctx, f.app, f.alice.ID, c.ID, "Named"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Conversation(ctx, f.app, f.alice.ID, c.ID); err != nil || got.Name != "Named" {
			t.Fatalf("named = %+v, %v", got, err)
		}
		// Rename moves updated_at to now; status changes leave it alone.
		before := time.Now().Add(-time.Second)
		renamed, err := s.RenameConversation(ctx, f.app, f.alice.ID, c.ID, "Trip to Paris")
		if err != nil {
			t.Fatal(err)
		}
		if renamed.Name != "Trip to Paris" || renamed.UpdatedAt.Before(before) || !renamed.CreatedAt.Equal(at(10)) {
			t.Fatalf("renamed = %+v", renamed)
		}
		if err := s.SetConversationStatus(ctx, f.app, c.ID, ConversationStatusEnded); err != nil {
			t.Fatal(err)
		}
		if err := s.SetConversationStatus(ctx, f.app, c.ID, "paused"); err == nil {
			t.Error("SetConversationStatus(paused): want error")
		}
		got, _ = s.Conversation(ctx, f.app, f.alice.ID, c.ID)
		if got.Status != ConversationStatusEnded || !got.UpdatedAt.Equal(renamed.UpdatedAt) {
			t.Errorf("after ending: %+v", got)
		}

		// Soft delete: gone for every lookup, row still there.
		if err := s.DeleteConversation(ctx, f.app, f.alice.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.Conversation(ctx, f.app, f.alice.ID, c.ID)
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted conversation: err = %v, want ErrNotFound", err)
		}
		msgs = append(msgs, err.Error())
		for _, m := range msgs[1:] {
			if m != msgs[0] {
				t.Errorf("not-found errors differ, which tells callers why: %q vs %q", msgs[0], m)
			}
		}
		if err := s.DeleteConversation(ctx, f.app, f.alice.ID, c.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: err = %v, want ErrNotFound", err)
		}
		if _, err := s.RenameConversation(ctx, f.app, f.alice.ID, c.ID, "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("rename deleted: err = %v, want ErrNotFound", err)
		}
		if err := s.NameConversation(ctx, f.app, f.alice.ID, c.ID, "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("name deleted: err = %v, want ErrNotFound", err)
		}
		if err := s.SetConversationStatus(ctx, f.app, c.ID, ConversationStatusNormal); !errors.Is(err, ErrNotFound) {
			t.Errorf("status of deleted: err = %v, want ErrNotFound", err)
		}
		var rows int
		if err := s.DB().QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM conversations WHERE id = ? AND deleted_at IS NOT NULL"), c.ID).Scan(&rows); err != nil || rows != 1 {
			t.Errorf("deleted row count = %d, %v; want the row kept", rows, err)
		}
	})
}

func TestListConversations(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)

		// Ties on both sort columns, so that the id tie-break matters.
		var mine []Conversation
		for i, ts := range []struct{ created, updated int64 }{
			{100, 500}, {100, 300}, {200, 300}, {300, 100}, {300, 400}, {300, 400},
		} {
			c, err := s.CreateConversation(ctx, Conversation{
				AppID: f.app, EndUserID: f.alice.ID, Name: fmt.Sprintf("c%d", i),
				CreatedAt: at(ts.created), UpdatedAt: at(ts.updated),
			})
			if err != nil {
				t.Fatal(err)
			}
			mine = append(mine, c)
		}
		// Noise that must never show up.
		for _, c := range []Conversation{
			{AppID: f.app, EndUserID: f.bob.ID, CreatedAt: at(250)},
			{AppID: f.otherApp, EndUserID: f.aliceInOtherApp.ID, CreatedAt: at(250)},
		} {
			if _, err := s.CreateConversation(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		deleted, err := s.CreateConversation(ctx, Conversation{AppID: f.app, EndUserID: f.alice.ID, CreatedAt: at(250)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteConversation(ctx, f.app, f.alice.ID, deleted.ID); err != nil {
			t.Fatal(err)
		}

		expected := func(sortBy string) []string {
			sorted := slices.Clone(mine)
			key := func(c Conversation) time.Time { return c.CreatedAt }
			if sortBy == SortByUpdatedAt || sortBy == SortByUpdatedAtDesc {
				key = func(c Conversation) time.Time { return c.UpdatedAt }
			}
			slices.SortFunc(sorted, func(a, b Conversation) int {
				return cmp.Or(key(a).Compare(key(b)), cmp.Compare(a.ID, b.ID))
			})
			if sortBy[0] == '-' {
				slices.Reverse(sorted)
			}
			return ids(sorted, convID)
		}

		for _, sortBy := range []string{SortByCreatedAt, SortByCreatedAtDesc, SortByUpdatedAt, SortByUpdatedAtDesc, ""} {
			want := expected(cmp.Or(sortBy, DefaultConversationSort))
			for _, limit := range []int{1, 2, 4, 6, 100} {
				t.Run(fmt.Sprintf("sort=%q/limit=%d", sortBy, limit), func(t *testing.T) {
					var got []string
					lastID := ""
					for page := 0; ; page++ {
						items, more, err := s.ListConversations(ctx, ConversationQuery{
							AppID: f.app, EndUserID: f.alice.ID, LastID: lastID, Limit: limit, SortBy: sortBy,
						})
						if err != nil {
							t.Fatalf("page %d: %v", page, err)
						}
						if len(items) > limit {
							t.Fatalf("page %d has %d items, limit %d", page, len(items), limit)
						}
						got = append(got, ids(items, convID)...)
						if wantMore := len(got) < len(want); more != wantMore {
							t.Fatalf("page %d: hasMore = %v, want %v (got %d of %d)", page, more, wantMore, len(got), len(want))
						}
						if !more {
							break
						}
						lastID = items[len(items)-1].ID
					}
					if !slices.Equal(got, want) {
						t.Errorf("order = %v\nwant    %v", got, want)
					}
				})
			}
		}

		// A touch moves a conversation to the front of -updated_at, and
		// never back.
		oldest := mine[3] // updated 100
		if err := s.TouchConversation(ctx, oldest.ID, at(1000)); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchConversation(ctx, oldest.ID, at(50)); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchConversation(ctx, NewID(), at(50)); err != nil {
			t.Fatalf("touch unknown: %v", err)
		}
		items, more, err := s.ListConversations(ctx, ConversationQuery{AppID: f.app, EndUserID: f.alice.ID, Limit: 1})
		if err != nil || len(items) != 1 || items[0].ID != oldest.ID || !items[0].UpdatedAt.Equal(at(1000)) || !more {
			t.Fatalf("after touch, first page = %+v, %v, %v", items, more, err)
		}

		// Cursors the caller may not use.
		for name, lastID := range map[string]string{
			"unknown":          NewID(),
			"deleted":          deleted.ID,
			"other user's":     mustFirstConversation(t, s, f.app, f.bob.ID),
			"other app's":      mustFirstConversation(t, s, f.otherApp, f.aliceInOtherApp.ID),
			"not even an uuid": "nope",
		} {
			_, _, err := s.ListConversations(ctx, ConversationQuery{AppID: f.app, EndUserID: f.alice.ID, LastID: lastID, Limit: 20})
			if !errors.Is(err, ErrCursorNotFound) || !errors.Is(err, ErrNotFound) {
				t.Errorf("last_id %s: err = %v, want ErrCursorNotFound wrapping ErrNotFound", name, err)
			}
		}
		for name, q := range map[string]ConversationQuery{
			"bad sort":   {AppID: f.app, EndUserID: f.alice.ID, Limit: 20, SortBy: "name"},
			"zero limit": {AppID: f.app, EndUserID: f.alice.ID},
		} {
			if _, _, err := s.ListConversations(ctx, q); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want a plain error", name, err)
			}
		}

		// A user with no conversations gets an empty page.
		stranger, err := s.EndUser(ctx, f.app, "stranger")
		if err != nil {
			t.Fatal(err)
		}
		items, more, err = s.ListConversations(ctx, ConversationQuery{AppID: f.app, EndUserID: stranger.ID, Limit: 20})
		if err != nil || len(items) != 0 || more {
			t.Errorf("stranger's list = %v, %v, %v", items, more, err)
		}
	})
}

func mustFirstConversation(t *testing.T, s *Store, appID, endUserID string) string {
	t.Helper()
	items, _, err := s.ListConversations(t.Context(), ConversationQuery{AppID: appID, EndUserID: endUserID, Limit: 1})
	if err != nil || len(items) == 0 {
		t.Fatalf("no conversation for %s/%s: %v", appID, endUserID, err)
	}
	return items[0].ID
}
