package jobs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

const waitLimit = 5 * time.Second

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// receive waits for one value or fails the test.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatal("timed out")
		var zero T
		return zero
	}
}

// stopWithin calls Stop with a generous deadline so a hang fails the test.
func stopWithin(t *testing.T, q *Local) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	return q.Stop(ctx)
}

func TestRunsJobs(t *testing.T) {
	t.Parallel()
	q := NewLocal(Options{Workers: 3, QueueSize: 10})
	got := make(chan string, 10)
	q.Handle("echo", func(_ context.Context, j Job) error {
		got <- string(j.Payload)
		return nil
	})
	payload := []byte("a")
	if err := q.Enqueue(t.Context(), Job{Kind: "echo", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	payload[0] = 'X' // Enqueue copied the payload
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"b", "c"} {
		if err := q.Enqueue(t.Context(), Job{Kind: "echo", Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range 3 {
		seen[receive(t, got)] = true
	}
	if !seen["a"] || !seen["b"] || !seen["c"] {
		t.Fatalf("ran %v", seen)
	}
	if err := stopWithin(t, q); err != nil {
		t.Fatal(err)
	}
}

func TestEnqueueErrors(t *testing.T) {
	t.Parallel()
	q := NewLocal(Options{Workers: 1, QueueSize: 2})
	q.Handle("k", func(context.Context, Job) error { return nil })
	if err := q.Enqueue(t.Context(), Job{Kind: "other"}); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("unknown kind: %v", err)
	}
	for range 2 {
		if err := q.Enqueue(t.Context(), Job{Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Enqueue(t.Context(), Job{Kind: "k"}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("full queue: %v", err)
	}
	if q.Len() != 2 {
		t.Fatalf("Len = %d", q.Len())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := q.Enqueue(ctx, Job{Kind: "k"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	// Stopping a queue that never started reports the lost jobs.
	if err := stopWithin(t, q); err == nil || !strings.Contains(err.Error(), "2 queued jobs discarded") {
		t.Fatalf("Stop before Start: %v", err)
	}
	if err := q.Enqueue(t.Context(), Job{Kind: "k"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Stop: %v", err)
	}
	if err := q.Start(t.Context()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Stop: %v", err)
	}
}

func TestStartTwice(t *testing.T) {
	t.Parallel()
	q := NewLocal(Options{})
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); err == nil {
		t.Fatal("second Start succeeded")
	}
	if err := stopWithin(t, q); err != nil {
		t.Fatal(err)
	}
	if err := stopWithin(t, q); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestHandlePanicsOnMisuse(t *testing.T) {
	t.Parallel()
	tests := map[string]func(q *Local){
		"empty kind":  func(q *Local) { q.Handle("", func(context.Context, Job) error { return nil }) },
		"nil handler": func(q *Local) { q.Handle("k", nil) },
		"duplicate": func(q *Local) {
			q.Handle("k", func(context.Context, Job) error { return nil })
			q.Handle("k", func(context.Context, Job) error { return nil })
		},
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			fn(NewLocal(Options{}))
		})
	}
}

func TestStopDrainsQueuedJobs(t *testing.T) {
	t.Parallel()
	q := NewLocal(Options{Workers: 1, QueueSize: 10})
	gate := make(chan struct{})
	started := make(chan struct{}, 10)
	var mu sync.Mutex
	ran := 0
	q.Handle("k", func(context.Context, Job) error {
		started <- struct{}{}
		<-gate
		mu.Lock()
		ran++
		mu.Unlock()
		return nil
	})
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := q.Enqueue(t.Context(), Job{Kind: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, started) // one job running, four queued
	stopped := make(chan error, 1)
	go func() { stopped <- stopWithin(t, q) }()
	close(gate)
	if err := receive(t, stopped); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if ran != 5 {
		t.Fatalf("ran %d jobs, want 5", ran)
	}
}

func TestStopDeadlineCancelsHandlers(t *testing.T) {
	t.Parallel()
	q := NewLocal(Options{Workers: 1, QueueSize: 10})
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	q.Handle("slow", func(ctx context.Context, _ Job) error {
		started <- struct{}{}
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	})
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := q.Enqueue(t.Context(), Job{Kind: "slow"}); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, started)
	// The drain deadline passes while the first job is still running.
	ctx, cancel := context.WithCancelCause(t.Context())
	deadline := errors.New("drain deadline")
	cancel(deadline)
	err := q.Stop(ctx)
	if !errors.Is(err, deadline) || !strings.Contains(err.Error(), "2 jobs still queued") {
		t.Fatalf("Stop: %v", err)
	}
	receive(t, cancelled)
	// Stopping again still reports the abandoned jobs.
	if err := stopWithin(t, q); err == nil || !strings.Contains(err.Error(), "still queued") {
		t.Fatalf("Stop after the workers ended: %v", err)
	}
}

func TestErrorsAndPanicsAreLogged(t *testing.T) {
	t.Parallel()
	log, buf := newLogger()
	q := NewLocal(Options{Workers: 1, QueueSize: 10, Logger: log})
	done := make(chan struct{}, 1)
	q.Handle("boom", func(context.Context, Job) error { panic("kaboom") })
	q.Handle("fail", func(context.Context, Job) error { return errors.New("upstream said no") })
	q.Handle("ok", func(context.Context, Job) error { done <- struct{}{}; return nil })
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"boom", "fail", "ok"} {
		if err := q.Enqueue(t.Context(), Job{Kind: k}); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, done) // the single worker survived the panic
	if err := stopWithin(t, q); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`msg="job panicked" kind=boom panic=kaboom stack=`, `msg="job failed" kind=fail error="upstream said no"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestStartContextCancelled(t *testing.T) {
	t.Parallel()
	q := NewLocal(Options{Workers: 2, QueueSize: 10})
	q.Handle("k", func(context.Context, Job) error { return nil })
	ctx, cancel := context.WithCancel(t.Context())
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	// Workers end on their own; Stop then reports nothing left behind.
	if err := stopWithin(t, q); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// TestConcurrentEnqueueAndStop checks that Enqueue racing Stop either
// succeeds or returns ErrClosed/ErrQueueFull, and never panics on a closed
// channel.
func TestConcurrentEnqueueAndStop(t *testing.T) {
	t.Parallel()
	q := NewLocal(Options{Workers: 4, QueueSize: 64})
	q.Handle("k", func(context.Context, Job) error { return nil })
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				err := q.Enqueue(t.Context(), Job{Kind: "k"})
				if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrQueueFull) {
					t.Error(err)
				}
			}
		})
	}
	stopErr := make(chan error, 1)
	go func() { stopErr <- stopWithin(t, q) }()
	wg.Wait()
	if err := receive(t, stopErr); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
