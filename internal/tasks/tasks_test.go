package tasks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// cancelled reports whether ctx is cancelled within a bounded time.
func cancelled(ctx context.Context) bool {
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-timer.C:
		return false
	}
}

// waitDone fails the test unless ctx is cancelled within a bounded time.
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	if !cancelled(ctx) {
		t.Fatal("context was not cancelled")
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		task, app, user string
		stopped         bool
	}{
		{"owner", "t1", "app", "alice", true},
		{"other user", "t1", "app", "bob", false},
		{"other app", "t1", "other", "alice", false},
		{"unknown task", "t2", "app", "alice", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewLocal()
			ctx, done := r.Register(t.Context(), Task{ID: "t1", AppID: "app", User: "alice"})
			defer done()
			if err := r.Stop(t.Context(), tt.task, tt.app, tt.user); err != nil {
				t.Fatalf("Stop returned %v", err)
			}
			if tt.stopped {
				waitDone(t, ctx)
				if !errors.Is(context.Cause(ctx), ErrStopped) {
					t.Fatalf("cause = %v, want ErrStopped", context.Cause(ctx))
				}
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("task cancelled by a non-matching stop: %v", context.Cause(ctx))
			}
		})
	}
}

func TestDoneDeregisters(t *testing.T) {
	t.Parallel()
	r := NewLocal()
	ctx, done := r.Register(t.Context(), Task{ID: "t", AppID: "a", User: "u"})
	if r.Len() != 1 {
		t.Fatalf("Len = %d", r.Len())
	}
	done()
	done() // idempotent
	if r.Len() != 0 {
		t.Fatalf("Len after done = %d", r.Len())
	}
	waitDone(t, ctx)
	if errors.Is(context.Cause(ctx), ErrStopped) {
		t.Fatal("done must not look like a user stop")
	}
	if err := r.Stop(t.Context(), "t", "a", "u"); err != nil {
		t.Fatal(err)
	}
}

func TestParentCancellation(t *testing.T) {
	t.Parallel()
	r := NewLocal()
	parent, cancel := context.WithCancel(t.Context())
	ctx, done := r.Register(parent, Task{ID: "t", AppID: "a", User: "u"})
	defer done()
	cancel()
	waitDone(t, ctx)
	if errors.Is(context.Cause(ctx), ErrStopped) {
		t.Fatal("client disconnect must not look like a user stop")
	}
}

func TestDuplicateIDs(t *testing.T) {
	t.Parallel()
	r := NewLocal()
	ctxA, doneA := r.Register(t.Context(), Task{ID: "t", AppID: "a", User: "alice"})
	ctxB, doneB := r.Register(t.Context(), Task{ID: "t", AppID: "a", User: "bob"})
	defer doneB()
	doneA()
	if r.Len() != 1 {
		t.Fatalf("Len = %d, want 1", r.Len())
	}
	_ = r.Stop(t.Context(), "t", "a", "bob")
	waitDone(t, ctxB)
	if !errors.Is(context.Cause(ctxA), context.Canceled) {
		t.Fatalf("A cause = %v", context.Cause(ctxA))
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	r := NewLocal()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			id := string(rune('a' + i%5))
			ctx, done := r.Register(t.Context(), Task{ID: id, AppID: "app", User: "u"})
			defer done()
			_ = r.Stop(t.Context(), id, "app", "u")
			if !cancelled(ctx) {
				t.Error("context was not cancelled")
			}
		})
	}
	wg.Wait()
	if r.Len() != 0 {
		t.Fatalf("Len = %d after all tasks finished", r.Len())
	}
}
