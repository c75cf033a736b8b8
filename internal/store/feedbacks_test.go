package store

import (
	"errors"
	"slices"
	"testing"
)

func feedbackID(f Feedback) string { return f.ID }

// newMessages creates n messages in a fresh conversation of u.
func newMessages(t *testing.T, s *Store, app string, u EndUser, n int) []Message {
	t.Helper()
	conv := newConversation(t, s, app, u)
	out := make([]Message, n)
	for i := range out {
		m, err := s.CreateMessage(t.Context(), Message{AppID: app, ConversationID: conv.ID, EndUserID: u.ID, Query: "q"})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = m
	}
	return out
}

func TestFeedback(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		msgs := newMessages(t, s, f.app, f.alice, 6)
		m := msgs[0]

		liked, err := s.UpsertFeedback(ctx, Feedback{AppID: f.app, MessageID: m.ID, Rating: RatingLike, Content: "great", FromEndUserID: f.alice.ID})
		if err != nil {
			t.Fatal(err)
		}
		if liked.ID == "" || liked.ConversationID != m.ConversationID || liked.AppID != f.app || liked.FromSource != FeedbackFromUser ||
			liked.Content != "great" || liked.FromEndUserID != f.alice.ID || liked.FromAccountID != "" || liked.CreatedAt.IsZero() {
			t.Fatalf("first upsert = %+v", liked)
		}

		// A second rating replaces the first and keeps its identity.
		disliked, err := s.UpsertFeedback(ctx, Feedback{AppID: f.app, MessageID: m.ID, Rating: RatingDislike, FromEndUserID: f.alice.ID})
		if err != nil {
			t.Fatal(err)
		}
		if disliked.ID != liked.ID || !disliked.CreatedAt.Equal(liked.CreatedAt) || disliked.Rating != RatingDislike || disliked.Content != "" {
			t.Fatalf("second upsert = %+v, want id %s kept, rating dislike, no content", disliked, liked.ID)
		}
		admin, err := s.UpsertFeedback(ctx, Feedback{AppID: f.app, MessageID: m.ID, Rating: RatingLike, FromSource: FeedbackFromAdmin, FromAccountID: "acct-1"})
		if err != nil || admin.ID != liked.ID || admin.FromSource != FeedbackFromAdmin || admin.FromEndUserID != "" || admin.FromAccountID != "acct-1" {
			t.Fatalf("admin upsert = %+v, %v", admin, err)
		}

		byMsg, err := s.FeedbackForMessages(ctx, []string{m.ID, msgs[1].ID, NewID(), m.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(byMsg) != 1 || byMsg[m.ID] != admin {
			t.Fatalf("FeedbackForMessages = %+v, want only %s", byMsg, m.ID)
		}
		if empty, err := s.FeedbackForMessages(ctx, nil); err != nil || len(empty) != 0 {
			t.Errorf("FeedbackForMessages(nil) = %v, %v", empty, err)
		}

		// Errors.
		otherMsg := newMessages(t, s, f.otherApp, f.aliceInOtherApp, 1)[0]
		for name, tc := range map[string]struct {
			fb   Feedback
			want error
		}{
			"other app's message": {Feedback{AppID: f.app, MessageID: otherMsg.ID, Rating: RatingLike}, ErrNotFound},
			"unknown message":     {Feedback{AppID: f.app, MessageID: NewID(), Rating: RatingLike}, ErrNotFound},
			"unknown end user":    {Feedback{AppID: f.app, MessageID: msgs[1].ID, Rating: RatingLike, FromEndUserID: NewID()}, ErrNotFound},
			"bad rating":          {Feedback{AppID: f.app, MessageID: msgs[1].ID, Rating: "meh"}, nil},
			"bad source":          {Feedback{AppID: f.app, MessageID: msgs[1].ID, Rating: RatingLike, FromSource: "bot"}, nil},
		} {
			_, err := s.UpsertFeedback(ctx, tc.fb)
			switch {
			case err == nil:
				t.Errorf("%s: want error", name)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("%s: err = %v, want %v", name, err, tc.want)
			case tc.want == nil && errors.Is(err, ErrNotFound):
				t.Errorf("%s: err = %v, want a validation error", name, err)
			}
		}

		// Revoking: once, then ErrNotFound (→ 400 invalid_param).
		if err := s.DeleteFeedback(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteFeedback(ctx, m.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: err = %v, want ErrNotFound", err)
		}
		if byMsg, _ := s.FeedbackForMessages(ctx, []string{m.ID}); len(byMsg) != 0 {
			t.Errorf("feedback after delete: %+v", byMsg)
		}

		// The app's list: newest first, paged, other apps excluded.
		if _, err := s.UpsertFeedback(ctx, Feedback{AppID: f.otherApp, MessageID: otherMsg.ID, Rating: RatingLike}); err != nil {
			t.Fatal(err)
		}
		var created []Feedback
		for _, m := range msgs[1:] {
			fb, err := s.UpsertFeedback(ctx, Feedback{AppID: f.app, MessageID: m.ID, Rating: RatingDislike, FromEndUserID: f.alice.ID})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, fb)
		}
		want := ids(created, feedbackID)
		slices.Reverse(want) // newest first
		var got []string
		for page := 1; ; page++ {
			items, err := s.ListAppFeedbacks(ctx, f.app, page, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) == 0 {
				break
			}
			got = append(got, ids(items, feedbackID)...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ListAppFeedbacks pages = %v, want %v", got, want)
		}
		if items, err := s.ListAppFeedbacks(ctx, f.app, 1, 101); err != nil || len(items) != len(want) {
			t.Errorf("one big page: %d items, %v", len(items), err)
		}
		for _, pl := range [][2]int{{0, 20}, {1, 0}} {
			if _, err := s.ListAppFeedbacks(ctx, f.app, pl[0], pl[1]); err == nil {
				t.Errorf("ListAppFeedbacks(page %d, limit %d): want error", pl[0], pl[1])
			}
		}
	})
}
