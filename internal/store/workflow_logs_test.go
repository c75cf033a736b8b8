package store

import (
	"encoding/json"
	"testing"
	"time"
)

// TestWorkflowLogs: a Workflow app's runs (those without a conversation) listed newest first with
// their end user, filtered by status, time, end user and a keyword matched literally and without
// regard to case; a Chatflow's run (with a conversation) and another app's are not listed.
func TestWorkflowLogs(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		// Each end user's messages belong to a conversation of theirs.
		convs := map[string]string{f.alice.ID: newConversation(t, s, f.app, f.alice).ID, f.bob.ID: newConversation(t, s, f.app, f.bob).ID,
			f.aliceInOtherApp.ID: newConversation(t, s, f.otherApp, f.aliceInOtherApp).ID}
		base := time.Now().Add(-time.Hour).Truncate(time.Second)
		add := func(app string, user EndUser, status, inputs string, at time.Time, withConv bool) WorkflowRun {
			t.Helper()
			m, err := s.CreateMessage(ctx, Message{AppID: app, ConversationID: convs[user.ID], EndUserID: user.ID, Status: MessageStatusNormal})
			if err != nil {
				t.Fatal(err)
			}
			r := WorkflowRun{ID: NewID(), AppID: app, WorkflowID: "v", MessageID: m.ID, Status: status,
				Inputs: json.RawMessage(inputs), Outputs: json.RawMessage(`{"out":"Done"}`), CreatedAt: at}
			if withConv {
				r.ConversationID = convs[user.ID]
			}
			if err := s.SaveWorkflowRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			return r
		}
		oldest := add(f.app, f.alice, "succeeded", `{"topic":"Tides"}`, base, false)
		failed := add(f.app, f.bob, "failed", `{"topic":"100% sure"}`, base.Add(time.Minute), false)
		newest := add(f.app, f.alice, "stopped", `{"topic":"waves"}`, base.Add(2*time.Minute), false)
		add(f.app, f.alice, "succeeded", `{"topic":"Tides"}`, base, true)                 // a Chatflow's run
		add(f.otherApp, f.aliceInOtherApp, "succeeded", `{"topic":"Tides"}`, base, false) // another app's

		ids := func(fl WorkflowLogFilter) ([]string, int) {
			t.Helper()
			fl.AppID = f.app
			if fl.Limit == 0 {
				fl.Limit = 20
			}
			logs, total, err := s.WorkflowLogs(ctx, fl)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range logs {
				out = append(out, l.Run.ID)
			}
			return out, total
		}
		for name, tc := range map[string]struct {
			f     WorkflowLogFilter
			want  []string
			total int
		}{
			"all":              {WorkflowLogFilter{}, []string{newest.ID, failed.ID, oldest.ID}, 3},
			"page":             {WorkflowLogFilter{Offset: 1, Limit: 1}, []string{failed.ID}, 3},
			"status":           {WorkflowLogFilter{Status: "failed"}, []string{failed.ID}, 1},
			"end user":         {WorkflowLogFilter{SessionID: "alice"}, []string{newest.ID, oldest.ID}, 2},
			"keyword, case":    {WorkflowLogFilter{Keyword: "tIDES"}, []string{oldest.ID}, 1},
			"keyword, literal": {WorkflowLogFilter{Keyword: "0% s"}, []string{failed.ID}, 1},
			"keyword, no wild": {WorkflowLogFilter{Keyword: "e_"}, nil, 0},
			"keyword, user":    {WorkflowLogFilter{Keyword: "BOB"}, []string{failed.ID}, 1},
			"keyword, outputs": {WorkflowLogFilter{Keyword: "done"}, []string{newest.ID, failed.ID, oldest.ID}, 3},
			"before":           {WorkflowLogFilter{Before: base.Add(time.Minute)}, []string{oldest.ID}, 1},
			"after":            {WorkflowLogFilter{After: base}, []string{newest.ID, failed.ID}, 2},
		} {
			got, total := ids(tc.f)
			if total != tc.total || len(got) != len(tc.want) {
				t.Fatalf("%s: %v (%d), want %v (%d)", name, got, total, tc.want, tc.total)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("%s: %v, want %v", name, got, tc.want)
				}
			}
		}
		logs, _, err := s.WorkflowLogs(ctx, WorkflowLogFilter{AppID: f.app, Status: "failed", Limit: 1})
		if err != nil || len(logs) != 1 || logs[0].EndUserID != f.bob.ID || logs[0].EndUserSessionID != "bob" || logs[0].ID != failed.MessageID {
			t.Fatalf("log %+v, %v", logs, err)
		}
	})
}
