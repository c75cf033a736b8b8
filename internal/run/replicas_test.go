package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/limiter/redislimiter"
	"github.com/parleyhq/parley/internal/pubsub/redispubsub"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/tasks"
)

// redisReplica is an engine on the shared PostgreSQL database e whose cap and stop handles
// are in Redis under prefix, with a client of its own (counted by its hook, when given).
func redisReplica(tb testing.TB, e storetest.Engine, prefix string, hook redis.Hook) *engineEnv {
	tb.Helper()
	c, err := redisx.Open(context.Background(), redistest.URL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	if hook != nil {
		c.AddHook(hook)
	}
	reg, err := tasks.NewShared(context.Background(), redispubsub.New(c, prefix), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(reg.Close)
	return newEngineEnv(tb, e, func(o *Options) {
		o.Limiter = redislimiter.New(c, prefix)
		o.Tasks = reg
	})
}

// TestCapAndStopAcrossEngines: many requests race over two engines sharing PostgreSQL and
// Redis for an app capped at 5: exactly 5 runs start, every other request is refused with a
// LimitError; each run is then stopped through the engine that does not run it, and ends
// stopped; then the app admits 5 again.
func TestCapAndStopAcrossEngines(t *testing.T) {
	prefix := redistest.Prefix(t)
	e := storetest.NewEngine(t, storetest.Postgres)
	a, b := redisReplica(t, e, prefix, nil), redisReplica(t, e, prefix, nil)
	const limit, requests = 5, 60
	a.chat.MaxActiveRequests, b.chat.MaxActiveRequests = limit, limit
	ctx := context.Background()
	for round := range 2 {
		type started struct {
			run   *Run
			other *engineEnv
		}
		var mu sync.Mutex
		var runs []started
		var refused atomic.Int32
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i := range requests {
			env, other := a, b
			if i%2 == 1 {
				env, other = b, a
			}
			wg.Go(func() {
				<-gate
				r, err := env.engine.Start(ctx, Request{App: env.chat, User: "u1", Query: "q", Inputs: map[string]any{"topic": "x"}, Streaming: true})
				switch {
				case err == nil:
					mu.Lock()
					runs = append(runs, started{r, other})
					mu.Unlock()
				case errors.As(err, new(*LimitError)):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		close(gate)
		wg.Wait()
		if len(runs) != limit || refused.Load() != requests-limit {
			t.Fatalf("round %d: %d started, %d refused; want %d and %d", round, len(runs), refused.Load(), limit, requests-limit)
		}
		for _, s := range runs {
			if err := s.other.engine.Stop(ctx, s.run.TaskID, a.chat.ID, "u1"); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range runs {
			evs := collectEvents(t, s.run)
			if len(evs) == 0 || evs[len(evs)-1].Kind != EventMessageEnd {
				t.Fatalf("round %d: a run stopped from the other engine ended with %+v", round, evs)
			}
			waitDone(t, s.run)
		}
	}
}

// countHook counts the commands a client sends to Redis, pipelines included.
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// BenchmarkRedisRoundTripsPerChat reports the Redis commands one chat costs a replica (its
// cap slot taken and given back; a short answer never renews its lease), as redis-cmds/op.
func BenchmarkRedisRoundTripsPerChat(b *testing.B) {
	prefix := redistest.Prefix(b)
	e := storetest.NewEngine(b, storetest.Postgres)
	hook := &countHook{}
	env := redisReplica(b, e, prefix, hook)
	env.chat.MaxActiveRequests = 1
	ctx := context.Background()
	start := hook.n.Load()
	b.ResetTimer()
	for i := range b.N {
		r, err := env.engine.Start(ctx, Request{App: env.chat, User: "u1", Query: fmt.Sprint("q", i), Inputs: map[string]any{"topic": "x"}})
		if err != nil {
			b.Fatal(err)
		}
		if !env.give(step{end: true}) {
			b.Fatal("the job did not end")
		}
		for range r.Events() {
		}
		<-r.Done()
	}
	b.StopTimer()
	b.ReportMetric(float64(hook.n.Load()-start)/float64(b.N), "redis-cmds/op")
}
