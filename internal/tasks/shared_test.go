package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/pubsub"
	"github.com/parleyhq/parley/internal/pubsub/redispubsub"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
	"github.com/parleyhq/parley/internal/tasks"
)

// replicas returns two Shared registries on two handles of one bus.
func replicas(t *testing.T, busA, busB pubsub.PubSub) (*tasks.Shared, *tasks.Shared) {
	t.Helper()
	a, err := tasks.NewShared(t.Context(), busA, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b, err := tasks.NewShared(t.Context(), busB, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return a, b
}

func stoppedWithin(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return errors.Is(context.Cause(ctx), tasks.ErrStopped)
	case <-time.After(10 * time.Second):
		return false
	}
}

// checkCrossReplicaStop: a task registered on A is stopped by a request on B — only by one
// naming its app and user; foreign requests leave it running.
func checkCrossReplicaStop(t *testing.T, a, b *tasks.Shared) {
	ctx := t.Context()
	run, done := a.Register(ctx, tasks.Task{ID: "t1", AppID: "app", User: "alice"})
	defer done()
	for _, foreign := range [][3]string{{"t1", "app", "bob"}, {"t1", "other", "alice"}, {"t2", "app", "alice"}} {
		if err := b.Stop(ctx, foreign[0], foreign[1], foreign[2]); err != nil {
			t.Fatal(err)
		}
	}
	// Requests arrive in order: once a later one stopped its sentinel task, the foreign ones
	// above have been heard and ignored.
	sentinel, doneSentinel := a.Register(ctx, tasks.Task{ID: "s", AppID: "app", User: "alice"})
	defer doneSentinel()
	if err := b.Stop(ctx, "s", "app", "alice"); err != nil {
		t.Fatal(err)
	}
	if !stoppedWithin(sentinel) {
		t.Fatal("the sentinel task was not stopped")
	}
	if run.Err() != nil {
		t.Fatalf("a foreign stop request stopped the task: %v", context.Cause(run))
	}
	if err := b.Stop(ctx, "t1", "app", "alice"); err != nil {
		t.Fatal(err)
	}
	if !stoppedWithin(run) {
		t.Fatal("the task was not stopped from the other replica")
	}
	// A task of the replica that asked stops too.
	own, doneOwn := b.Register(ctx, tasks.Task{ID: "t3", AppID: "app", User: ""})
	defer doneOwn()
	if err := b.Stop(ctx, "t3", "app", ""); err != nil {
		t.Fatal(err)
	}
	if !stoppedWithin(own) {
		t.Fatal("the asking replica's own task was not stopped")
	}
}

func TestSharedOnLocalBus(t *testing.T) {
	bus := pubsub.NewLocal()
	a, b := replicas(t, bus, bus)
	checkCrossReplicaStop(t, a, b)
}

func TestSharedOnRedis(t *testing.T) {
	c1, prefix := redistest.Client(t)
	c2, err := redisx.Open(context.Background(), redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	a, b := replicas(t, redispubsub.New(c1, prefix), redispubsub.New(c2, prefix))
	checkCrossReplicaStop(t, a, b)
}

// TestSharedStopWithRedisDown: a stop request that cannot be published is an error wrapping
// redisx.ErrUnavailable (the API answers 503), and stops still work once Redis is back.
func TestSharedStopWithRedisDown(t *testing.T) {
	srv := redistest.StartServer(t)
	c, err := redisx.Open(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c2, err := redisx.Open(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	a, b := replicas(t, redispubsub.New(c, "t:"), redispubsub.New(c2, "t:"))
	srv.Stop()
	if err := b.Stop(t.Context(), "x", "app", "u"); !errors.Is(err, redisx.ErrUnavailable) {
		t.Fatalf("Stop with Redis down = %v, want ErrUnavailable", err)
	}
	srv.Start(t)
	run, done := a.Register(t.Context(), tasks.Task{ID: "t", AppID: "app", User: "u"})
	defer done()
	// The subscriptions come back by themselves; keep asking until A hears one.
	deadline := time.Now().Add(15 * time.Second)
	for run.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("A never heard a stop request after Redis came back")
		}
		_ = b.Stop(t.Context(), "t", "app", "u")
		select {
		case <-run.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !errors.Is(context.Cause(run), tasks.ErrStopped) {
		t.Fatalf("cause %v", context.Cause(run))
	}
}
