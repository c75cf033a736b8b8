package store

import (
	"errors"
	"testing"
)

func TestAgents(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		a, err := s.CreateAgentApp(ctx, "Researcher", "agent", `{"name":"Researcher"}`, "Researcher", `{"draft":1}`)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateAgentApp(ctx, "Researcher", "agent", "{}", "x", "{}"); !errors.Is(err, ErrConflict) {
			t.Fatalf("duplicate name err = %v, want ErrConflict", err)
		}
		ag, err := s.BoundAgent(ctx, a.ID)
		if err != nil || ag.Draft != `{"draft":1}` || ag.Active != nil || ag.ActiveVersionID != "" || ag.Status != AgentActive {
			t.Fatalf("BoundAgent after import = %+v, %v; want an unpublished draft", ag, err)
		}

		rev := func() int64 {
			t.Helper()
			r, err := s.AppRevision(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		r0 := rev()
		v1, err := s.PublishAgent(ctx, a.ID)
		if err != nil || v1.Version != 1 || v1.Config != `{"draft":1}` {
			t.Fatalf("PublishAgent = %+v, %v", v1, err)
		}
		r1 := rev()
		if r1 <= r0 {
			t.Fatalf("revision %d after publish, was %d", r1, r0)
		}
		if err := s.SaveAgentDraft(ctx, a.ID, "Researcher", `{"draft":2}`); err != nil {
			t.Fatal(err)
		}
		if r2 := rev(); r2 <= r1 {
			t.Fatalf("revision %d after a draft edit, was %d", r2, r1)
		}
		ag, err = s.BoundAgent(ctx, a.ID)
		if err != nil || ag.Draft != `{"draft":2}` || ag.Active == nil || ag.Active.ID != v1.ID || ag.Active.Config != `{"draft":1}` {
			t.Fatalf("BoundAgent after a draft edit = %+v, %v; want draft 2, version 1 active", ag, err)
		}
		v2, err := s.PublishAgent(ctx, a.ID)
		if err != nil || v2.Version != 2 || v2.Config != `{"draft":2}` {
			t.Fatalf("second PublishAgent = %+v, %v", v2, err)
		}
		if ag, _ = s.BoundAgent(ctx, a.ID); ag.Active == nil || ag.Active.Version != 2 {
			t.Fatalf("active after second publish = %+v", ag.Active)
		}

		r3 := rev()
		if err := s.ArchiveAgent(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if rev() <= r3 {
			t.Fatal("archiving did not change the app's revision")
		}
		if _, err := s.BoundAgent(ctx, a.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("BoundAgent after archive err = %v, want ErrNotFound", err)
		}
		for name, err := range map[string]error{
			"publish": func() error { _, err := s.PublishAgent(ctx, a.ID); return err }(),
			"draft":   s.SaveAgentDraft(ctx, a.ID, "x", "{}"),
			"archive": s.ArchiveAgent(ctx, a.ID),
		} {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s without a bound agent err = %v, want ErrNotFound", name, err)
			}
		}
	})
}
