package store

import (
	"errors"
	"slices"
	"testing"
)

// TestSites: an app has at most one site, found by app, code and id; an update changes its
// settings, code and version; a code in use is refused; deleting the app deletes its site.
func TestSites(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		app := mustApp(t, s, "site-app")
		other := mustApp(t, s, "site-other")
		m := Site{ID: NewID(), AppID: app, Code: "Code000000000001", Version: 1, Enabled: true, Title: "Help",
			DefaultLanguage: "en-US", ShowWorkflowSteps: true, AllowedOrigins: []string{"https://a.test"}, RequestsPerMinute: 60}
		if err := s.CreateSite(ctx, m); err != nil {
			t.Fatal(err)
		}
		dup := m
		dup.ID, dup.Code = NewID(), "Code000000000002"
		if err := s.CreateSite(ctx, dup); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second site of the app: %v", err)
		}
		dup.AppID, dup.Code = other, m.Code
		if err := s.CreateSite(ctx, dup); !errors.Is(err, ErrConflict) {
			t.Fatalf("a code in use: %v", err)
		}
		dup.AppID, dup.Code = "no-such-app", "Code000000000003"
		if err := s.CreateSite(ctx, dup); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an unknown app: %v", err)
		}
		got, err := s.SiteByCode(ctx, m.Code)
		if err != nil || got.ID != m.ID || got.AppID != app || got.Title != "Help" || !got.Enabled || !got.ShowWorkflowSteps ||
			got.PasscodeHash != nil || !slices.Equal(got.AllowedOrigins, m.AllowedOrigins) || got.RequestsPerMinute != 60 ||
			got.Version != 1 || got.CreatedAt.IsZero() {
			t.Fatalf("by code: %+v %v", got, err)
		}
		if _, err := s.SiteByCode(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown code: %v", err)
		}
		if _, err := s.SiteByApp(ctx, other); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an app without a site: %v", err)
		}
		got.Code, got.Version, got.Enabled, got.PasscodeHash = "Code000000000009", 2, false, []byte{1, 2, 3}
		got.AllowedOrigins, got.Copyright, got.ShowWorkflowSteps, got.RequestsPerMinute = nil, "ACME", false, 0
		if err := s.UpdateSite(ctx, got); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SiteByCode(ctx, m.Code); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the old code still finds the site: %v", err)
		}
		back, err := s.SiteByID(ctx, m.ID)
		if err != nil || back.Code != "Code000000000009" || back.Version != 2 || back.Enabled || !slices.Equal(back.PasscodeHash, []byte{1, 2, 3}) ||
			len(back.AllowedOrigins) != 0 || back.Copyright != "ACME" || back.ShowWorkflowSteps || back.RequestsPerMinute != 0 {
			t.Fatalf("after update: %+v %v", back, err)
		}
		back.PasscodeHash = nil
		if err := s.UpdateSite(ctx, back); err != nil {
			t.Fatal(err)
		}
		if b, _ := s.SiteByApp(ctx, app); b.PasscodeHash != nil {
			t.Fatalf("passcode not removed: %v", b.PasscodeHash)
		}
		second := Site{ID: NewID(), AppID: other, Code: "Code000000000010", Version: 1, Enabled: true}
		if err := s.CreateSite(ctx, second); err != nil {
			t.Fatal(err)
		}
		second.Code = "Code000000000009"
		if err := s.UpdateSite(ctx, second); !errors.Is(err, ErrConflict) {
			t.Fatalf("updating to a code in use: %v", err)
		}
		second.ID = "no-such-site"
		if err := s.UpdateSite(ctx, second); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an unknown site: %v", err)
		}
		if err := s.DeleteApp(ctx, app); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SiteByID(ctx, m.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the site of a deleted app: %v", err)
		}
	})
}

// TestPinnedConversations: pinning is per conversation of its end user; the list filters by it
// and pages through the pinned ones; another end user's conversation cannot be pinned.
func TestPinnedConversations(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		app := mustApp(t, s, "pin-app")
		u, err := s.EndUser(ctx, app, "alice")
		if err != nil {
			t.Fatal(err)
		}
		bob, err := s.EndUser(ctx, app, "bob")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range 3 {
			c, err := s.CreateConversation(ctx, Conversation{AppID: app, EndUserID: u.ID, Name: "c"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, c.ID)
		}
		for _, id := range ids[:2] {
			if err := s.PinConversation(ctx, app, u.ID, id, true); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PinConversation(ctx, app, u.ID, ids[0], true); err != nil {
			t.Fatalf("pinning twice: %v", err)
		}
		if err := s.PinConversation(ctx, app, bob.ID, ids[2], true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another end user's: %v", err)
		}
		list := func(pinned *bool, last string, limit int) ([]string, bool) {
			t.Helper()
			items, more, err := s.ListConversations(ctx, ConversationQuery{AppID: app, EndUserID: u.ID, Pinned: pinned,
				LastID: last, Limit: limit, SortBy: SortByCreatedAt})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, c := range items {
				out = append(out, c.ID)
			}
			return out, more
		}
		yes, no := true, false
		if got, _ := list(&yes, "", 10); len(got) != 2 || !slices.Contains(got, ids[0]) || !slices.Contains(got, ids[1]) {
			t.Fatalf("pinned: %v", got)
		}
		if got, _ := list(&no, "", 10); len(got) != 1 || got[0] != ids[2] {
			t.Fatalf("not pinned: %v", got)
		}
		if got, _ := list(nil, "", 10); len(got) != 3 {
			t.Fatalf("all: %v", got)
		}
		first, more := list(&yes, "", 1)
		if len(first) != 1 || !more {
			t.Fatalf("first page: %v %v", first, more)
		}
		if rest, more := list(&yes, first[0], 1); len(rest) != 1 || more || rest[0] == first[0] {
			t.Fatalf("second page: %v %v", rest, more)
		}
		if err := s.PinConversation(ctx, app, u.ID, ids[0], false); err != nil {
			t.Fatal(err)
		}
		if got, _ := list(&yes, "", 10); len(got) != 1 || got[0] != ids[1] {
			t.Fatalf("after unpin: %v", got)
		}
	})
}
