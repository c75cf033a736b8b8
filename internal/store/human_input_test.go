package store

import (
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// pausedTrace is the traceparent of the span that paused a run pausedRun stores.
const pausedTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// pausedRun stores a paused run of a message of f with one waiting form per node.
func pausedRun(t *testing.T, s *Store, f chatFixture, nodes ...string) (WorkflowRun, []HumanInputForm) {
	t.Helper()
	ctx := t.Context()
	msg := newMessages(t, s, f.app, f.alice, 1)[0]
	r := WorkflowRun{ID: NewID(), AppID: f.app, WorkflowID: "v1", ConversationID: msg.ConversationID, MessageID: msg.ID,
		Status: "paused", Inputs: json.RawMessage(`{}`)}
	now := time.Now()
	var forms []HumanInputForm
	for _, n := range nodes {
		forms = append(forms, HumanInputForm{ID: NewID(), AppID: f.app, NodeID: n, Token: NewID(), Definition: json.RawMessage(`{}`),
			Expiration: now.Add(time.Hour), GlobalDeadline: now.Add(2 * time.Hour)})
	}
	if err := s.SaveRunSegment(ctx, RunSegment{Run: r, Forms: forms, TraceParent: pausedTrace,
		Pause: &WorkflowPause{WorkflowRunID: r.ID, State: json.RawMessage(`{"x":1}`), Context: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	return r, forms
}

// TestHumanInputDecisions: a submission racing the timer ends in exactly one decision, a claim
// of a paused run in exactly one resumption, and the stale-run sweep leaves paused messages
// alone while the global deadline stops their runs.
func TestHumanInputDecisions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)

		for round := range 20 {
			r, forms := pausedRun(t, s, f, "review")
			form := forms[0]
			var (
				wg                   sync.WaitGroup
				submitted, timedOut  bool
				errSubmit, errTimout error
			)
			wg.Add(2)
			at := time.Now()
			go func() {
				defer wg.Done()
				submitted, errSubmit = s.SubmitHumanInputForm(ctx, form.ID, "approve", json.RawMessage(`{"c":"x"}`), "rev", at)
			}()
			go func() {
				defer wg.Done()
				timedOut, errTimout = s.TimeOutHumanInputForm(ctx, form.ID, at)
			}()
			wg.Wait()
			if errSubmit != nil || errTimout != nil {
				t.Fatal(errSubmit, errTimout)
			}
			if submitted == timedOut {
				t.Fatalf("round %d: submitted %v, timed out %v: want exactly one", round, submitted, timedOut)
			}
			got, err := s.HumanInputFormByToken(ctx, form.Token)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: FormSubmitted, false: FormTimeout}[submitted]; got.Status != want {
				t.Fatalf("round %d: status %s, want %s", round, got.Status, want)
			}
			// A second submission loses.
			if ok, err := s.SubmitHumanInputForm(ctx, form.ID, "reject", nil, "rev", at); err != nil || ok {
				t.Fatalf("second submission: %v %v", ok, err)
			}
			// Two resumers claim the run: exactly one wins.
			var claims [2]bool
			wg.Add(2)
			for i := range claims {
				go func() {
					defer wg.Done()
					claims[i], _ = s.ClaimPausedRun(ctx, r.ID)
				}()
			}
			wg.Wait()
			if claims[0] == claims[1] {
				t.Fatalf("round %d: claims %v: want exactly one", round, claims)
			}
		}

		// A claim refreshes the heartbeat of the run's message: the sweep of interrupted answers
		// does not end a run that just resumed.
		r, forms := pausedRun(t, s, f, "x", "y")
		if _, err := s.exec(ctx, `UPDATE messages SET updated_at = ? WHERE id = ?`, time.Now().Add(-time.Hour).Unix(), r.MessageID); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.ClaimPausedRun(ctx, r.ID); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		if n, err := s.EndStaleMessages(ctx, time.Now().Add(-time.Minute), "gone"); err != nil {
			t.Fatal(err)
		} else if m, _ := s.Message(ctx, f.app, f.alice.ID, r.MessageID); m.Status != MessageStatusRunning {
			t.Fatalf("the resumed message was swept (%d ended): %s", n, m.Status)
		}
		// A run that finishes with a form still waiting expires it.
		r.Status = "succeeded"
		if err := s.SaveRunSegment(ctx, RunSegment{Run: r, Consumed: []string{forms[0].ID}}); err != nil {
			t.Fatal(err)
		}
		if y, _ := s.HumanInputFormByToken(ctx, forms[1].Token); y.Status != FormExpired {
			t.Fatalf("waiting form of a finished run: %s", y.Status)
		}

		// An expired form cannot be submitted.
		_, forms = pausedRun(t, s, f, "review")
		if ok, err := s.SubmitHumanInputForm(ctx, forms[0].ID, "approve", nil, "rev", time.Now().Add(3*time.Hour)); err != nil || ok {
			t.Fatalf("submitted after expiry: %v %v", ok, err)
		}

		// The stale sweep ends running messages but not paused ones; the global deadline stops
		// a paused run, expires its forms and ends its message stopped.
		r, forms = pausedRun(t, s, f, "a", "b")
		if _, err := s.EndStaleMessages(ctx, time.Now().Add(time.Hour), "gone"); err != nil {
			t.Fatal(err)
		}
		m, err := s.Message(ctx, f.app, f.alice.ID, r.MessageID)
		if err != nil || m.Status != MessageStatusRunning {
			t.Fatalf("paused message after the sweep: %+v %v", m, err)
		}
		due, err := s.DueHumanInputForms(ctx, time.Now().Add(3*time.Hour), 100)
		if err != nil || len(due) < 2 {
			t.Fatalf("due forms: %d %v", len(due), err)
		}
		if ok, err := s.ExpireHumanInputRun(ctx, r.ID, "Human input global timeout at node a", time.Now()); err != nil || !ok {
			t.Fatalf("expire: %v %v", ok, err)
		}
		if ok, err := s.ExpireHumanInputRun(ctx, r.ID, "again", time.Now()); err != nil || ok {
			t.Fatalf("expired twice: %v %v", ok, err)
		}
		got, _ := s.WorkflowRunByID(ctx, r.ID)
		m, _ = s.Message(ctx, f.app, f.alice.ID, r.MessageID)
		b, _ := s.HumanInputFormByToken(ctx, forms[1].Token)
		if got.Status != "stopped" || m.Status != MessageStatusStopped || b.Status != FormExpired {
			t.Fatalf("after expiry: run %s, message %s, form %s", got.Status, m.Status, b.Status)
		}
		if _, err := s.WorkflowPauseOf(ctx, r.ID); err == nil {
			t.Fatal("the pause of a stopped run is kept")
		}
	})
}

// TestHumanInputFormTimers: each waiting form is stored with its deadline job, due at the
// earlier of its timeout and the run's global deadline, which a worker claims only then.
func TestHumanInputFormTimers(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		_, forms := pausedRun(t, s, f, "a", "b")
		kinds := []string{JobKindHumanInputTimer}
		for _, form := range forms {
			j, err := s.GetJob(ctx, JobKindHumanInputTimer+":"+form.ID)
			if err != nil {
				t.Fatal(err)
			}
			if string(j.Payload) != form.ID || j.State != JobQueued || j.RunAfter.Unix() != form.Expiration.Unix() || j.TraceParent != pausedTrace {
				t.Fatalf("timer of form %s: %+v (expiration %v)", form.ID, j, form.Expiration)
			}
		}
		if j, err := s.ClaimJob(ctx, kinds, "w", forms[0].Expiration.Add(-time.Second), time.Minute); err != nil || j != nil {
			t.Fatalf("a timer was claimed before its deadline: %+v %v", j, err)
		}
		j, err := s.ClaimJob(ctx, kinds, "w", forms[0].Expiration.Add(time.Second), time.Minute)
		if err != nil || j == nil || j.Kind != JobKindHumanInputTimer {
			t.Fatalf("due timer: %+v %v", j, err)
		}
	})
}
