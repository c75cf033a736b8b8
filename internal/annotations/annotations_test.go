package annotations

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
)

const testConfig = `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - {name: text-embedding-3-small, type: text-embedding, context_size: 8191, max_chunks: 2}
`

type env struct {
	svc   *Service
	st    *store.Store
	queue *inlineQueue
	app   *apps.App
}

// inlineQueue runs each job as it is queued, on the caller's goroutine, so that a test reads the
// job's outcome as soon as it was queued; while held it drops jobs instead, as a process that
// stops before running them would.
type inlineQueue struct {
	h    jobs.Handler
	hold bool
}

func (q *inlineQueue) Enqueue(ctx context.Context, j jobs.Job) error {
	if q.hold {
		return nil
	}
	return q.h(context.WithoutCancel(ctx), j)
}

// newEnv is the service over a real store, the fake upstream's embeddings and a queue that runs
// jobs at once.
func newEnv(t testing.TB, e storetest.Engine) *env {
	t.Helper()
	up, file := openaitest.NewConfigured(t, testConfig)
	st := testdb.Open(t, e)
	synced, err := st.SyncApps(context.Background(), []store.AppSpec{{Name: "bot", Mode: "chat"}})
	if err != nil {
		t.Fatal(err)
	}
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	q := &inlineQueue{}
	svc := New(Options{Store: st, Catalog: catalog, Models: registry.New(catalog.APIKey), Jobs: q,
		AccountID: "owner", AccountName: "Owner", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	q.h = svc.HandleJob
	return &env{svc: svc, st: st, queue: q, app: &apps.App{ID: synced["bot"].ID, Mode: apps.ModeChat}}
}

// done reads a job the queue ran; it must be over.
func (e *env) done(t *testing.T, action, id string) Job {
	t.Helper()
	j, err := e.svc.JobStatus(context.Background(), e.app.ID, action, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.AnnotationJobCompleted && j.Status != store.AnnotationJobError {
		t.Fatalf("job %s is still %s", id, j.Status)
	}
	return j
}

func TestReplyMatchesAboveTheThreshold(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		ctx := context.Background()
		// Three annotations: more than one embeddings batch (max_chunks 2).
		var ids []string
		for _, qa := range [][2]string{
			{"How do I reset my password?", "Use the reset link."},
			{"When is the office open?", "Nine to five."},
			{"Where do I park my bicycle?", "In the yard."},
		} {
			a, err := env.svc.Create(ctx, env.app.ID, qa[0], qa[1])
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, a.ID)
		}
		if _, ok, err := env.svc.Match(ctx, env.app, "How do I reset my password?"); ok || err != nil {
			t.Fatalf("matched before reply was on: %v %v", ok, err)
		}
		j, err := env.svc.SetReply(ctx, env.app.ID, "enable", ReplySettings{EmbeddingProvider: "openai", EmbeddingModel: "text-embedding-3-small", ScoreThreshold: 0.9})
		if err != nil || j.Status != store.AnnotationJobWaiting {
			t.Fatalf("SetReply = %+v, %v", j, err)
		}
		if got := env.done(t, "enable", j.ID); got.Status != store.AnnotationJobCompleted {
			t.Fatalf("enable = %+v", got)
		}
		if on, _ := env.svc.Enabled(ctx, env.app.ID); !on {
			t.Fatal("reply is not on after the job")
		}
		for i, q := range []string{"How do I reset my password?", "When is the office open?", "Where do I park my bicycle?"} {
			hit, ok, err := env.svc.Match(ctx, env.app, q)
			if err != nil || !ok || hit.ID != ids[i] || hit.Score < 0.99 || hit.AccountName != "Owner" {
				t.Fatalf("Match(%q) = %+v %v %v", q, hit, ok, err)
			}
		}
		// Close but under the threshold, and unrelated: no match.
		for _, q := range []string{"How do I reset my bicycle lock?", "penguins"} {
			if hit, ok, _ := env.svc.Match(ctx, env.app, q); ok {
				t.Errorf("Match(%q) = %+v, want none", q, hit)
			}
		}
		// An updated question matches with its new text only.
		if _, err := env.svc.Update(ctx, env.app.ID, ids[1], "What are the opening hours?", "Nine to six."); err != nil {
			t.Fatal(err)
		}
		if hit, ok, _ := env.svc.Match(ctx, env.app, "What are the opening hours?"); !ok || hit.Answer != "Nine to six." {
			t.Fatalf("updated annotation: %+v %v", hit, ok)
		}
		if _, ok, _ := env.svc.Match(ctx, env.app, "When is the office open?"); ok {
			t.Fatal("the old question of an updated annotation still matches")
		}
		if err := env.svc.Delete(ctx, env.app.ID, "\xff"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("delete of a non-UTF-8 id: %v", err)
		}
		// Off: nothing matches.
		j, _ = env.svc.SetReply(ctx, env.app.ID, "disable", ReplySettings{})
		env.done(t, "disable", j.ID)
		if _, ok, _ := env.svc.Match(ctx, env.app, "How do I reset my password?"); ok {
			t.Fatal("matched after reply was switched off")
		}
	})
}

// TestJobsSurviveARestart leaves a job behind as a stopped server would (queued, never run, still
// processing in the database) and starts a new service on the same database: Resume runs it.
func TestJobsSurviveARestart(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		ctx := context.Background()
		if _, err := env.svc.Create(ctx, env.app.ID, "Is there coffee?", "Always."); err != nil {
			t.Fatal(err)
		}
		// The queue drops the job: it is accepted and lost with the process.
		env.queue.hold = true
		j, err := env.svc.SetReply(ctx, env.app.ID, "enable", ReplySettings{EmbeddingProvider: "openai", EmbeddingModel: "text-embedding-3-small", ScoreThreshold: 0.9})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.st.SetAnnotationJobStatus(ctx, j.ID, store.AnnotationJobProcessing, ""); err != nil {
			t.Fatal(err)
		}
		// A second request while it is under way gets the same job, processing.
		again, _ := env.svc.SetReply(ctx, env.app.ID, "enable", ReplySettings{EmbeddingProvider: "openai", EmbeddingModel: "text-embedding-3-small", ScoreThreshold: 0.9})
		if again.ID != j.ID || again.Status != store.AnnotationJobProcessing {
			t.Fatalf("second enable = %+v", again)
		}

		restarted := newEnvOn(t, env)
		if err := restarted.svc.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if got := restarted.done(t, "enable", j.ID); got.Status != store.AnnotationJobCompleted {
			t.Fatalf("resumed job = %+v", got)
		}
		if _, ok, err := restarted.svc.Match(ctx, env.app, "Is there coffee?"); !ok || err != nil {
			t.Fatalf("no match after the resumed job: %v", err)
		}
	})
}

// newEnvOn is a new service and queue over env's store and upstream config, as after a restart.
func newEnvOn(t *testing.T, old *env) *env {
	t.Helper()
	q := &inlineQueue{}
	svc := New(Options{Store: old.st, Catalog: old.svc.catalog, Models: old.svc.models, Jobs: q,
		AccountID: "owner", AccountName: "Owner"})
	q.h = svc.HandleJob
	return &env{svc: svc, st: old.st, queue: q, app: old.app}
}

func TestJobErrors(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		ctx := context.Background()
		if _, err := env.svc.SetReply(ctx, env.app.ID, "toggle", ReplySettings{}); !errors.Is(err, ErrUnsupportedAction) {
			t.Fatalf("unknown action: %v", err)
		}
		if _, err := env.svc.JobStatus(ctx, env.app.ID, "enable", "no-such-job"); !errors.Is(err, ErrJobNotFound) {
			t.Fatalf("unknown job: %v", err)
		}
		for _, rs := range []ReplySettings{
			{EmbeddingProvider: "nobody", EmbeddingModel: "text-embedding-3-small"},
			{EmbeddingProvider: "openai", EmbeddingModel: "gpt-none"},
		} {
			j, err := env.svc.SetReply(ctx, env.app.ID, "enable", rs)
			if err != nil {
				t.Fatal(err)
			}
			got := env.done(t, "enable", j.ID)
			if got.Status != store.AnnotationJobError || got.Error == "" {
				t.Fatalf("enable with %+v = %+v", rs, got)
			}
			if on, _ := env.svc.Enabled(ctx, env.app.ID); on {
				t.Fatal("a failed enable switched reply on")
			}
		}
	})
}
