package store

import (
	"errors"
	"testing"
	"time"
)

func TestAnnotations(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		a, err := s.CreateAnnotation(ctx, Annotation{AppID: f.app, Question: "How do I reset my PASSWORD?", Answer: "Use the 100% link.", AccountID: "acc"})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.CreateAnnotation(ctx, Annotation{AppID: f.app, Question: "Opening hours?", Answer: "Nine_to_five."})
		if _, err := s.CreateAnnotation(ctx, Annotation{AppID: f.otherApp, Question: "password elsewhere", Answer: "x"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateAnnotation(ctx, Annotation{AppID: "no-such-app", Question: "q", Answer: "a"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("annotation of an unknown app: %v", err)
		}

		// Keyword: case ignored, LIKE's wildcards taken literally, other apps' left out.
		for kw, want := range map[string]int{"password": 1, "PassWord": 1, "%": 1, "_": 1, "": 2, "nothing": 0} {
			got, total, err := s.ListAnnotations(ctx, f.app, kw, 1, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != want || total != int64(want) {
				t.Errorf("keyword %q: %d rows, total %d, want %d", kw, len(got), total, want)
			}
		}
		page, total, _ := s.ListAnnotations(ctx, f.app, "", 2, 1)
		if total != 2 || len(page) != 1 || page[0].ID != a.ID {
			t.Fatalf("second page of one: %+v (total %d)", page, total)
		}

		// Reply setting and vectors: only vectors of the current model are searchable, and the
		// index version grows with every change.
		if _, err := s.AnnotationIndexVersion(ctx, f.app); !errors.Is(err, ErrNotFound) {
			t.Fatalf("index version without a setting: %v", err)
		}
		set := AnnotationSetting{AppID: f.app, Enabled: true, Provider: "p", Model: "m", ScoreThreshold: 0.8}
		if err := s.SaveAnnotationSetting(ctx, set); err != nil {
			t.Fatal(err)
		}
		v1, _ := s.AnnotationIndexVersion(ctx, f.app)
		todo, _ := s.AnnotationsWithoutVector(ctx, f.app, set.VectorModel(), 10)
		if len(todo) != 2 {
			t.Fatalf("without vector: %d", len(todo))
		}
		at := map[string]time.Time{a.ID: todo[0].UpdatedAt, b.ID: todo[1].UpdatedAt}
		if todo[0].ID != a.ID {
			at[a.ID], at[b.ID] = todo[1].UpdatedAt, todo[0].UpdatedAt
		}
		if err := s.SetAnnotationVectors(ctx, f.app, set.VectorModel(), map[string][]float32{a.ID: {1, 0}, b.ID: {0, 1}}, at); err != nil {
			t.Fatal(err)
		}
		v2, nodes, err := s.AnnotationVectors(ctx, f.app)
		if err != nil || v2 <= v1 || len(nodes) != 2 || nodes[0].NodeID != a.ID || nodes[0].Vector[0] != 1 {
			t.Fatalf("vectors: v%d→v%d %+v %v", v1, v2, nodes, err)
		}
		// Another model's vectors are not searched.
		set.Model = "m2"
		_ = s.SaveAnnotationSetting(ctx, set)
		if _, nodes, _ := s.AnnotationVectors(ctx, f.app); len(nodes) != 0 {
			t.Fatalf("vectors of another model: %+v", nodes)
		}
		set.Model = "m"
		_ = s.SaveAnnotationSetting(ctx, set)
		// An update drops the annotation's vector.
		upd, err := s.UpdateAnnotation(ctx, f.app, a.ID, "New question?", "New answer.")
		if err != nil || upd.Question != "New question?" || upd.Answer != "New answer." {
			t.Fatalf("update: %+v %v", upd, err)
		}
		if _, nodes, _ := s.AnnotationVectors(ctx, f.app); len(nodes) != 1 || nodes[0].NodeID != b.ID {
			t.Fatalf("vectors after an update: %+v", nodes)
		}
		if _, err := s.UpdateAnnotation(ctx, f.otherApp, a.ID, "q", "a"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update through another app: %v", err)
		}

		// Hits.
		if err := s.RecordAnnotationHit(ctx, AnnotationHit{AnnotationID: b.ID, AppID: f.app, MessageID: "m1", Question: "hours?", Score: 0.91, Source: "service-api"}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Annotation(ctx, f.app, b.ID)
		if n, _ := s.AnnotationHits(ctx, b.ID); got.HitCount != 1 || n != 1 {
			t.Fatalf("hit count %d, hits %d", got.HitCount, n)
		}
		if err := s.DeleteAnnotation(ctx, f.app, b.ID); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.AnnotationHits(ctx, b.ID); n != 0 {
			t.Fatalf("hits of a deleted annotation: %d", n)
		}
		if err := s.DeleteAnnotation(ctx, f.app, b.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}

		// Jobs: one of each action at a time; the rest is found again at start.
		j, started, err := s.StartAnnotationJob(ctx, AnnotationJob{AppID: f.app, Action: AnnotationActionEnable, Provider: "p", Model: "m", ScoreThreshold: 0.8})
		if err != nil || !started || j.Status != AnnotationJobWaiting {
			t.Fatalf("start: %+v %v %v", j, started, err)
		}
		again, started, _ := s.StartAnnotationJob(ctx, AnnotationJob{AppID: f.app, Action: AnnotationActionEnable})
		if started || again.ID != j.ID {
			t.Fatalf("second enable while the first waits: %+v started=%v", again, started)
		}
		if _, started, _ := s.StartAnnotationJob(ctx, AnnotationJob{AppID: f.app, Action: AnnotationActionDisable}); !started {
			t.Fatal("a disable job waited for the enable job")
		}
		if _, err := s.AnnotationJob(ctx, f.app, AnnotationActionDisable, j.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("enable job read as disable: %v", err)
		}
		if _, err := s.AnnotationJob(ctx, f.otherApp, AnnotationActionEnable, j.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("job read through another app: %v", err)
		}
		if un, _ := s.UnfinishedAnnotationJobs(ctx); len(un) != 2 {
			t.Fatalf("unfinished: %+v", un)
		}
		if err := s.SetAnnotationJobStatus(ctx, j.ID, AnnotationJobError, "model gone"); err != nil {
			t.Fatal(err)
		}
		done, _ := s.AnnotationJob(ctx, f.app, AnnotationActionEnable, j.ID)
		if done.Status != AnnotationJobError || done.Error != "model gone" {
			t.Fatalf("finished job: %+v", done)
		}
		if _, started, _ := s.StartAnnotationJob(ctx, AnnotationJob{AppID: f.app, Action: AnnotationActionEnable}); !started {
			t.Fatal("a new enable job after the first ended did not start")
		}
	})
}
