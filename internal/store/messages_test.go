package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

func msgID(m Message) string { return m.ID }

// newConversation starts a conversation for user u of app.
func newConversation(t *testing.T, s *Store, app string, u EndUser) Conversation {
	t.Helper()
	c, err := s.CreateConversation(t.Context(), Conversation{AppID: app, EndUserID: u.ID, CreatedAt: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMessageRoundTrip(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)

		first, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, Query: "hi", CreatedAt: at(5)})
		if err != nil {
			t.Fatal(err)
		}
		if first.Status != MessageStatusRunning || first.Currency != DefaultCurrency || first.TotalPrice != "0" ||
			string(first.Inputs) != "{}" || string(first.Metadata) != "{}" {
			t.Fatalf("defaults: %+v", first)
		}
		// Creating a message touches the conversation in the same step.
		c, _ := s.Conversation(ctx, f.app, f.alice.ID, conv.ID)
		if !c.UpdatedAt.Equal(at(5)) {
			t.Errorf("conversation updated_at = %v, want %v", c.UpdatedAt, at(5))
		}

		in := Message{
			ID: NewID(), AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, ParentMessageID: first.ID,
			Query: "What's the weather?", Answer: "", Inputs: json.RawMessage(`{"city": "Paris"}`),
			MessageTokens: 1, MessageUnitPrice: "0.0015", AnswerUnitPrice: "0.002", PriceUnit: "0.001",
			TaskID: "task-1", ModelProvider: "openai", ModelID: "gpt-4o-mini",
			Metadata: json.RawMessage(`{"usage":{"prompt_tokens":1}}`), CreatedAt: at(7),
		}
		stored, err := s.CreateMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Message(ctx, f.app, f.alice.ID, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, stored) {
			t.Fatalf("Message = %+v\nwant %+v", got, stored)
		}
		if string(got.Inputs) != `{"city": "Paris"}` {
			t.Errorf("inputs not stored verbatim: %s", got.Inputs)
		}

		for name, lookup := range map[string]struct{ app, user string }{
			"other user": {f.app, f.bob.ID},
			"other app":  {f.otherApp, f.aliceInOtherApp.ID},
		} {
			if _, err := s.Message(ctx, lookup.app, lookup.user, in.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", name, err)
			}
		}

		base := Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID}
		with := func(edit func(*Message)) Message { m := base; edit(&m); return m }
		for name, tc := range map[string]struct {
			m    Message
			want error // nil: any non-sentinel error
		}{
			"other user's conversation": {with(func(m *Message) { m.EndUserID = f.bob.ID }), ErrNotFound},
			"other app":                 {with(func(m *Message) { m.AppID = f.otherApp }), ErrNotFound},
			"unknown conversation":      {with(func(m *Message) { m.ConversationID = NewID() }), ErrNotFound},
			"unknown parent":            {with(func(m *Message) { m.ParentMessageID = NewID() }), ErrNotFound},
			"duplicate id":              {with(func(m *Message) { m.ID = first.ID }), ErrConflict},
			"bad status":                {with(func(m *Message) { m.Status = "done" }), nil},
			"bad price":                 {with(func(m *Message) { m.TotalPrice = "1e-3" }), nil},
			"bad inputs":                {with(func(m *Message) { m.Inputs = json.RawMessage("[") }), nil},
			"bad metadata":              {with(func(m *Message) { m.Metadata = json.RawMessage("nope") }), nil},
		} {
			_, err := s.CreateMessage(ctx, tc.m)
			switch {
			case err == nil:
				t.Errorf("%s: want error", name)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("%s: err = %v, want %v", name, err, tc.want)
			case tc.want == nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict)):
				t.Errorf("%s: err = %v, want a validation error", name, err)
			}
		}
		if n, err := s.CountMessages(ctx, conv.ID); err != nil || n != 2 {
			t.Errorf("CountMessages = %d, %v; want 2 (failed creates leave nothing)", n, err)
		}
	})
}

// TestFinishMessageAfterClientLeft pins the contract documented on
// FinishMessage: the request context is cancelled when the client hangs up,
// so the caller detaches it with context.WithoutCancel, and the write lands.
func TestFinishMessageAfterClientLeft(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)
		m, err := s.CreateMessage(t.Context(), Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, Query: "q"})
		if err != nil {
			t.Fatal(err)
		}

		reqCtx, hangUp := context.WithCancel(t.Context())
		hangUp()
		result := MessageResult{
			Answer: "partial answer", Status: MessageStatusStopped,
			MessageTokens: 12, AnswerTokens: 3, TotalTokens: 15,
			MessageUnitPrice: "0.0015", AnswerUnitPrice: "0.002", PriceUnit: "0.001", TotalPrice: "0.0000240",
			Currency: "EUR", ProviderResponseLatency: 1.25,
			Metadata: json.RawMessage(`{"usage":{"total_tokens":15},"retriever_resources":[]}`),
		}
		// The request context itself is useless by now…
		if err := s.FinishMessage(reqCtx, m.ID, result); !errors.Is(err, context.Canceled) {
			t.Fatalf("FinishMessage with the cancelled request context: err = %v, want context.Canceled", err)
		}
		// …a detached one is not.
		if err := s.FinishMessage(context.WithoutCancel(reqCtx), m.ID, result); err != nil {
			t.Fatalf("FinishMessage with a detached context: %v", err)
		}
		got, err := s.Message(t.Context(), f.app, f.alice.ID, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Answer != result.Answer || got.Status != MessageStatusStopped || got.Error != "" ||
			got.MessageTokens != 12 || got.AnswerTokens != 3 || got.TotalTokens != 15 ||
			got.MessageUnitPrice != "0.0015" || got.AnswerUnitPrice != "0.002" || got.PriceUnit != "0.001" ||
			got.TotalPrice != "0.0000240" || got.Currency != "EUR" || got.ProviderResponseLatency != 1.25 ||
			string(got.Metadata) != string(result.Metadata) || got.Query != "q" || got.UpdatedAt.Before(got.CreatedAt) {
			t.Fatalf("after finish: %+v", got)
		}

		// The last write wins, and defaults apply again.
		if err := s.FinishMessage(t.Context(), m.ID, MessageResult{Status: MessageStatusError, Error: "upstream 500"}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Message(t.Context(), f.app, f.alice.ID, m.ID)
		if got.Status != MessageStatusError || got.Error != "upstream 500" || got.Answer != "" || got.TotalPrice != "0" ||
			got.Currency != DefaultCurrency || string(got.Metadata) != "{}" {
			t.Fatalf("after second finish: %+v", got)
		}

		for name, r := range map[string]MessageResult{
			"running":       {Status: MessageStatusRunning},
			"no status":     {},
			"bad price":     {Status: MessageStatusNormal, TotalPrice: "-1"},
			"bad metadata":  {Status: MessageStatusNormal, Metadata: json.RawMessage("{")},
			"unknown state": {Status: "finished"},
		} {
			if err := s.FinishMessage(t.Context(), m.ID, r); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want a validation error", name, err)
			}
		}
		if err := s.FinishMessage(t.Context(), NewID(), MessageResult{Status: MessageStatusNormal}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown message: err = %v, want ErrNotFound", err)
		}
	})
}

func TestListMessages(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)
		other := newConversation(t, s, f.app, f.alice)

		// Seven messages; several share a second, so the id tie-break
		// matters. Creation order is the expected order.
		var all []Message
		for i, sec := range []int64{10, 10, 10, 20, 30, 30, 40} {
			m, err := s.CreateMessage(ctx, Message{
				AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID,
				Query: fmt.Sprintf("q%d", i), CreatedAt: at(sec),
			})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, m)
		}
		stray, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: other.ID, EndUserID: f.alice.ID, CreatedAt: at(15)})
		if err != nil {
			t.Fatal(err)
		}
		want := ids(all, msgID)

		for _, limit := range []int{1, 2, 3, 7, 100} {
			t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
				// Walk back from the newest page, as a client scrolling up.
				var got []string
				firstID := ""
				for page := 0; ; page++ {
					items, more, err := s.ListMessages(ctx, MessageQuery{
						AppID: f.app, EndUserID: f.alice.ID, ConversationID: conv.ID, FirstID: firstID, Limit: limit,
					})
					if err != nil {
						t.Fatalf("page %d: %v", page, err)
					}
					pageIDs := ids(items, msgID)
					// Each page is the slice just older than what we have,
					// oldest first.
					end := len(want) - len(got)
					start := max(0, end-limit)
					if !slices.Equal(pageIDs, want[start:end]) {
						t.Fatalf("page %d = %v, want %v", page, pageIDs, want[start:end])
					}
					if wantMore := start > 0; more != wantMore {
						t.Fatalf("page %d: hasMore = %v, want %v", page, more, wantMore)
					}
					got = append(slices.Clone(pageIDs), got...)
					if !more {
						break
					}
					firstID = items[0].ID
				}
				if !slices.Equal(got, want) {
					t.Errorf("all pages = %v, want %v", got, want)
				}
			})
		}

		// FirstID must be a message of this conversation.
		for name, firstID := range map[string]string{
			"unknown":            NewID(),
			"other conversation": stray.ID,
			"garbage":            "1",
		} {
			_, _, err := s.ListMessages(ctx, MessageQuery{AppID: f.app, EndUserID: f.alice.ID, ConversationID: conv.ID, FirstID: firstID, Limit: 20})
			if !errors.Is(err, ErrCursorNotFound) || !errors.Is(err, ErrNotFound) {
				t.Errorf("first_id %s: err = %v, want ErrCursorNotFound", name, err)
			}
		}
		// The conversation must be the caller's: ErrNotFound, but not the
		// cursor error, so the server can answer "Conversation Not Exists.".
		for name, q := range map[string]MessageQuery{
			"other user": {AppID: f.app, EndUserID: f.bob.ID, ConversationID: conv.ID, Limit: 20},
			"other app":  {AppID: f.otherApp, EndUserID: f.aliceInOtherApp.ID, ConversationID: conv.ID, Limit: 20},
			"unknown":    {AppID: f.app, EndUserID: f.alice.ID, ConversationID: NewID(), Limit: 20},
		} {
			_, _, err := s.ListMessages(ctx, q)
			if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrCursorNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound without ErrCursorNotFound", name, err)
			}
		}
		if _, _, err := s.ListMessages(ctx, MessageQuery{AppID: f.app, EndUserID: f.alice.ID, ConversationID: conv.ID}); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("zero limit: err = %v, want a plain error", err)
		}

		// History for prompts: newest normal ones only, oldest first.
		finish := map[int]string{0: MessageStatusNormal, 1: MessageStatusNormal, 2: MessageStatusError, 3: MessageStatusNormal, 4: MessageStatusStopped, 5: MessageStatusNormal}
		for i, status := range finish {
			if err := s.FinishMessage(ctx, all[i].ID, MessageResult{Answer: "a", Status: status}); err != nil {
				t.Fatal(err)
			}
		}
		recent, err := s.RecentMessages(ctx, conv.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(recent, msgID), []string{all[1].ID, all[3].ID, all[5].ID}; !slices.Equal(got, want) {
			t.Errorf("RecentMessages(3) = %v, want %v", got, want)
		}
		recent, _ = s.RecentMessages(ctx, conv.ID, 100)
		if got, want := ids(recent, msgID), []string{all[0].ID, all[1].ID, all[3].ID, all[5].ID}; !slices.Equal(got, want) {
			t.Errorf("RecentMessages(100) = %v, want %v", got, want)
		}
		if recent, err := s.RecentMessages(ctx, conv.ID, 0); err != nil || len(recent) != 0 {
			t.Errorf("RecentMessages(0) = %v, %v", recent, err)
		}
		if n, err := s.CountMessages(ctx, conv.ID); err != nil || n != len(all) {
			t.Errorf("CountMessages = %d, %v; want %d", n, err, len(all))
		}
		if n, err := s.CountMessages(ctx, NewID()); err != nil || n != 0 {
			t.Errorf("CountMessages(unknown) = %d, %v", n, err)
		}

		// Deleting the conversation hides its messages everywhere.
		if err := s.DeleteConversation(ctx, f.app, f.alice.ID, conv.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Message(ctx, f.app, f.alice.ID, all[0].ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("message of deleted conversation: err = %v, want ErrNotFound", err)
		}
		if _, _, err := s.ListMessages(ctx, MessageQuery{AppID: f.app, EndUserID: f.alice.ID, ConversationID: conv.ID, Limit: 20}); !errors.Is(err, ErrNotFound) {
			t.Errorf("list of deleted conversation: err = %v, want ErrNotFound", err)
		}
		if _, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID}); !errors.Is(err, ErrNotFound) {
			t.Errorf("message into deleted conversation: err = %v, want ErrNotFound", err)
		}
	})
}

// TestStartConversation stores a conversation and its first message together, and nothing at
// all when either is refused.
func TestStartConversation(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		c, m, err := s.StartConversation(ctx,
			Conversation{AppID: f.app, EndUserID: f.alice.ID, Name: "New conversation", Inputs: []byte(`{"a":1}`)},
			Message{AppID: f.app, EndUserID: f.alice.ID, Query: "hi", TaskID: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if m.ConversationID != c.ID || m.Status != MessageStatusRunning {
			t.Fatalf("conversation %+v message %+v", c, m)
		}
		got, err := s.Message(ctx, f.app, f.alice.ID, m.ID)
		if err != nil || got.Query != "hi" {
			t.Fatalf("message: %+v %v", got, err)
		}
		if _, err := s.Conversation(ctx, f.app, f.alice.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		// Another app's end user: refused, and no conversation is left behind.
		before, _, _ := s.ListConversations(ctx, ConversationQuery{AppID: f.otherApp, EndUserID: f.aliceInOtherApp.ID, Limit: 10})
		_, _, err = s.StartConversation(ctx,
			Conversation{AppID: f.otherApp, EndUserID: f.alice.ID, Name: "x"},
			Message{AppID: f.otherApp, EndUserID: f.alice.ID, Query: "q"})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("foreign end user: %v", err)
		}
		// A message that cannot be stored rolls the conversation back.
		_, _, err = s.StartConversation(ctx,
			Conversation{AppID: f.app, EndUserID: f.bob.ID, Name: "y"},
			Message{AppID: f.app, EndUserID: f.bob.ID, Query: "q", ParentMessageID: "00000000-0000-0000-0000-000000000000"})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("bad parent: %v", err)
		}
		if list, _, _ := s.ListConversations(ctx, ConversationQuery{AppID: f.app, EndUserID: f.bob.ID, Limit: 10}); len(list) != 0 {
			t.Fatalf("conversation left behind: %+v", list)
		}
		if after, _, _ := s.ListConversations(ctx, ConversationQuery{AppID: f.otherApp, EndUserID: f.aliceInOtherApp.ID, Limit: 10}); len(after) != len(before) {
			t.Fatal("conversation left behind in the other app")
		}
	})
}

// TestFirstMessage: the oldest message of a conversation, and not-found for an empty,
// someone else's or a deleted conversation.
func TestFirstMessage(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		empty, err := s.CreateConversation(ctx, Conversation{AppID: f.app, EndUserID: f.alice.ID, Name: "e"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FirstMessage(ctx, f.app, f.alice.ID, empty.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("empty conversation: %v", err)
		}
		base := time.Now().Add(-time.Hour)
		c, _, err := s.StartConversation(ctx, Conversation{AppID: f.app, EndUserID: f.alice.ID, Name: "c"},
			Message{AppID: f.app, EndUserID: f.alice.ID, Query: "first", CreatedAt: base})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			if _, err := s.CreateMessage(ctx, Message{AppID: f.app, EndUserID: f.alice.ID, ConversationID: c.ID,
				Query: "later", CreatedAt: base.Add(time.Duration(i) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		m, err := s.FirstMessage(ctx, f.app, f.alice.ID, c.ID)
		if err != nil || m.Query != "first" {
			t.Fatalf("first message: %+v %v", m, err)
		}
		if _, err := s.FirstMessage(ctx, f.app, f.bob.ID, c.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another user's conversation: %v", err)
		}
		if err := s.DeleteConversation(ctx, f.app, f.alice.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FirstMessage(ctx, f.app, f.alice.ID, c.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted conversation: %v", err)
		}
	})
}
