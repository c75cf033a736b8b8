package triggers_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/apps/dsl"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/triggers"
	"github.com/parleyhq/parley/internal/workflow/chatflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a store with the apps of the conformance exports imported and published, and the run
// engine that runs them.
type env struct {
	st     *store.Store
	reg    *apps.Registry
	engine *run.Engine
}

func newEnv(t *testing.T, e storetest.Engine) *env {
	t.Helper()
	st := testdb.Open(t, e)
	reg, err := apps.NewRegistry(nil, nil, func(n int) int { return n })
	if err != nil {
		t.Fatal(err)
	}
	reg = reg.WithStore(st)
	runner := chatflow.New(chatflow.Options{Store: st, Logger: quiet, Nodes: nodes.Registry(nodes.Deps{})})
	engine := run.New(run.Options{Store: st, Limiter: limiter.NewLocal(), Tasks: tasks.NewLocal(), Logger: quiet,
		Kinds: map[string]run.Kind{apps.ModeWorkflow: {Runner: runner, Workflow: true}}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = engine.Shutdown(ctx)
	})
	return &env{st: st, reg: reg, engine: engine}
}

// publish imports a conformance export and publishes it.
func (v *env) publish(t *testing.T, file string) *apps.App {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "conformance", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	res, err := dsl.Import(data, dsl.Env{}, dsl.Options{NodeTypes: nodes.Registry(nodes.Deps{}).Supports})
	if err != nil {
		t.Fatal(err)
	}
	a, err := v.reg.Create(ctx, res.App)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.reg.Publish(ctx, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	return p.App
}

// fakeQueue is a replica's queue for the scheduler, which writes its jobs itself.
type fakeQueue struct {
	owner string
	woken atomic.Int32
}

func (q *fakeQueue) Enqueue(context.Context, jobs.Job) error { return nil }
func (q *fakeQueue) Owner() string                           { return q.owner }
func (q *fakeQueue) Wake()                                   { q.woken.Add(1) }

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func TestSyncKeepsWebhookIDs(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		v := newEnv(t, e)
		a := v.publish(t, "triggers-webhook.yml")
		svc := triggers.New(triggers.Options{Store: v.st, Apps: v.reg, URL: "https://hooks.example.com/", Logger: quiet})
		first, err := svc.List(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != 4 {
			t.Fatalf("triggers: %+v", first)
		}
		for _, l := range first {
			if l.Kind != store.TriggerWebhook || len(l.WebhookID) != 24 || l.URL != "https://hooks.example.com/triggers/webhook/"+l.WebhookID {
				t.Fatalf("webhook %+v", l)
			}
		}
		// Published again (a new version with the same nodes): every webhook keeps its id.
		p, err := v.reg.Publish(ctx, a.Name)
		if err != nil {
			t.Fatal(err)
		}
		again, err := svc.List(ctx, p.App)
		if err != nil {
			t.Fatal(err)
		}
		for i := range again {
			if again[i].WebhookID != first[i].WebhookID || again[i].VersionID != p.VersionID {
				t.Fatalf("re-published: %+v, was %+v", again[i], first[i])
			}
		}
		// A webhook is found by its id; a paused one is not (but its debug URL is).
		h, err := svc.Webhook(ctx, first[0].WebhookID, false)
		if err != nil || h.Manifest.Method != "POST" || h.App.ID != a.ID {
			t.Fatalf("webhook: %+v %v", h, err)
		}
		if _, err := svc.SetPaused(ctx, p.App, first[0].NodeID, true); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Webhook(ctx, first[0].WebhookID, false); err == nil || !strings.Contains(err.Error(), "disabled") {
			t.Fatalf("paused: %v", err)
		}
		if _, err := svc.Webhook(ctx, first[0].WebhookID, true); err != nil {
			t.Fatalf("paused, debug: %v", err)
		}
		if _, err := svc.Webhook(ctx, "nope", false); err == nil {
			t.Fatal("an unknown id was found")
		}
		if _, err := svc.SetPaused(ctx, p.App, "nope", true); err == nil || !strings.Contains(err.Error(), first[0].NodeID) {
			t.Fatalf("an unknown node: %v", err)
		}
		// Deleted, the app's webhooks are gone.
		if err := v.reg.Delete(ctx, a.Name); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Webhook(ctx, first[1].WebhookID, false); err == nil {
			t.Fatal("the webhook of a deleted app was found")
		}
	})
}

func TestWebhookRunsOnceWithItsVariables(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		v := newEnv(t, e)
		a := v.publish(t, "triggers-webhook.yml")
		q := jobs.NewDurable(jobs.DurableOptions{Store: v.st, Poll: 20 * time.Millisecond, Logger: quiet})
		svc := triggers.New(triggers.Options{Store: v.st, Apps: v.reg, Runs: v.engine, Queue: q, Logger: quiet})
		q.Handle(triggers.JobKind, svc.HandleRun)
		list, err := svc.List(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		h, err := svc.Webhook(ctx, list[0].WebhookID, false)
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("POST", "/triggers/webhook/x?source=shop", strings.NewReader(`{"customer": "Ann", "quantity": 3}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Api-Key", "k1")
		data, err := triggers.Read(ctx, r, h.Manifest, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		runID, err := svc.Fire(ctx, h, data)
		if err != nil {
			t.Fatal(err)
		}
		qctx, stop := context.WithCancel(ctx)
		defer stop()
		if err := q.Start(qctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = q.Stop(context.Background()) }()
		var wr store.WorkflowRun
		deadline := time.Now().Add(10 * time.Second)
		for {
			wr, err = v.st.WorkflowRunByID(ctx, runID)
			if err == nil && wr.Status == "succeeded" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run did not finish: %+v %v", wr, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		var out map[string]any
		if err := json.Unmarshal(wr.Outputs, &out); err != nil {
			t.Fatal(err)
		}
		if wr.TriggeredFrom != store.TriggerWebhook || out["customer"] != "Ann" || out["quantity"] != float64(3) ||
			out["api_key"] != "k1" || out["source"] != "shop" || out["summary"] != "Ann ordered 3 (from shop)" {
			t.Fatalf("run %s: %s", wr.TriggeredFrom, wr.Outputs)
		}
		// The job runs again (a retry after a crash): the run it started is found, no other starts.
		payload, _ := json.Marshal(map[string]any{"app_id": a.ID, "node_id": h.Trigger.NodeID, "kind": "webhook",
			"workflow_run_id": runID, "inputs": map[string]any{}})
		if err := svc.HandleRun(ctx, jobs.Job{ID: "again", Kind: triggers.JobKind, Payload: payload}); err != nil {
			t.Fatal(err)
		}
		logs, total, err := v.st.WorkflowLogs(ctx, store.WorkflowLogFilter{AppID: a.ID, Limit: 10})
		if err != nil || total != 1 || logs[0].Run.TriggeredFrom != store.TriggerWebhook {
			t.Fatalf("logs: %d %+v %v", total, logs, err)
		}
	})
}

// TestTicksAreClaimedOnce ticks an every-second schedule on two replicas at once, second after
// second: each tick is claimed by one of them, exactly once, and queues one run.
func TestTicksAreClaimedOnce(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		v := newEnv(t, e)
		a := v.publish(t, "triggers-schedule.yml")
		start := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
		clk := &clock{now: start}
		var replicas [2]*triggers.Service
		for i := range replicas {
			replicas[i] = triggers.New(triggers.Options{Store: v.st, Apps: v.reg, Queue: &fakeQueue{owner: "replica-" + string(rune('a'+i))},
				Now: clk.Now, Logger: quiet})
		}
		// A replica finds the newly published app and syncs its triggers; the other finds them
		// synced.
		for _, r := range replicas {
			if err := r.SyncAll(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if ts, err := v.st.AppTriggers(ctx, a.ID); err != nil || len(ts) != 2 {
			t.Fatalf("synced: %+v %v", ts, err)
		}
		const seconds = 20
		for s := 1; s <= seconds; s++ {
			clk.Set(start.Add(time.Duration(s)*time.Second + 100*time.Millisecond))
			var wg sync.WaitGroup
			for _, r := range replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := r.Tick(ctx); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
		}
		ticks, err := v.st.ScheduleTicks(ctx, a.ID, "1762000000001", start)
		if err != nil {
			t.Fatal(err)
		}
		if len(ticks) != seconds {
			t.Fatalf("%d ticks claimed in %d seconds: %v", len(ticks), seconds, ticks)
		}
		for i, tk := range ticks {
			if want := start.Add(time.Duration(i+1) * time.Second); !tk.Equal(want) {
				t.Fatalf("tick %d is %s, want %s", i, tk, want)
			}
		}
		if n := runJobs(t, v.st); n != seconds {
			t.Fatalf("%d runs queued for %d ticks", n, seconds)
		}
	})
}

// runJobs counts the queued trigger runs.
func runJobs(t *testing.T, st *store.Store) int {
	t.Helper()
	counts, err := st.JobCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		if c.Kind == triggers.JobKind {
			n += c.Jobs
		}
	}
	return n
}

// TestMissedTicksAndPause: after an outage a schedule runs once, for the first tick it missed,
// and goes on from now (Dify's rule); paused, it does not tick; resumed, it ticks from its next
// tick, without the ones it missed.
func TestMissedTicksAndPause(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		v := newEnv(t, e)
		a := v.publish(t, "triggers-schedule.yml")
		start := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
		clk := &clock{now: start}
		q := &fakeQueue{owner: "r"}
		svc := triggers.New(triggers.Options{Store: v.st, Apps: v.reg, Queue: q, Now: clk.Now, Logger: quiet})
		const node = "1762000000001"
		if _, err := svc.Sync(ctx, a); err != nil {
			t.Fatal(err)
		}
		// An hour later (the server was down): one run, for the tick at start+1s.
		clk.Set(start.Add(time.Hour + 300*time.Millisecond))
		for range 3 {
			if err := svc.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		ticks, _ := v.st.ScheduleTicks(ctx, a.ID, node, start)
		if len(ticks) != 1 || !ticks[0].Equal(start.Add(time.Second)) || q.woken.Load() != 1 {
			t.Fatalf("after an outage: ticks %v, woken %d", ticks, q.woken.Load())
		}
		list, err := svc.List(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if next := list[0].Next; list[0].NodeID != node || next == nil || !next.Equal(start.Add(time.Hour+time.Second)) ||
			next.Location().String() != "Asia/Tokyo" {
			t.Fatalf("next tick %+v", list[0])
		}
		// The weekly schedule's next tick is Paris time, Monday or Friday at 9:30.
		if w := list[1].Next; w == nil || w.Format(time.RFC3339) != "2030-05-03T09:30:00+02:00" {
			t.Fatalf("weekly %+v", list[1])
		}
		// Paused: no tick.
		if _, err := svc.SetPaused(ctx, a, node, true); err != nil {
			t.Fatal(err)
		}
		clk.Set(start.Add(2 * time.Hour))
		if err := svc.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if ticks, _ = v.st.ScheduleTicks(ctx, a.ID, node, start); len(ticks) != 1 {
			t.Fatalf("paused, ticked: %v", ticks)
		}
		// Resumed: from the next tick on, without the ones missed while paused.
		if _, err := svc.SetPaused(ctx, a, node, false); err != nil {
			t.Fatal(err)
		}
		clk.Set(start.Add(2*time.Hour + 1500*time.Millisecond))
		if err := svc.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		ticks, _ = v.st.ScheduleTicks(ctx, a.ID, node, start)
		if len(ticks) != 2 || !ticks[1].Equal(start.Add(2*time.Hour+time.Second)) {
			t.Fatalf("resumed: %v", ticks)
		}
	})
}
