package redislimiter_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/limiter/redislimiter"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
)

// twoReplicas returns two limiters with clients of their own on one Redis and one prefix, as
// two replicas would have.
func twoReplicas(t *testing.T, opts ...redislimiter.Option) (*redislimiter.Limiter, *redislimiter.Limiter) {
	t.Helper()
	c1, prefix := redistest.Client(t)
	c2, err := redisx.Open(context.Background(), redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Close() })
	return redislimiter.New(c1, prefix, opts...), redislimiter.New(c2, prefix, opts...)
}

// TestExactUnderLoad: many goroutines on two replicas race for a cap of 5; exactly 5 get in,
// the rest are refused with ErrLimitExceeded, and once they leave the next 5 get in.
func TestExactUnderLoad(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := context.Background()
	const limit, goroutines = 5, 80
	for round := range 3 {
		var admitted, refused atomic.Int64
		var mu sync.Mutex
		var releases []func()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range goroutines {
			l := a
			if i%2 == 1 {
				l = b
			}
			wg.Go(func() {
				<-start
				release, err := l.Acquire(ctx, "app-1", limit)
				switch {
				case err == nil:
					admitted.Add(1)
					mu.Lock()
					releases = append(releases, release)
					mu.Unlock()
				case errors.Is(err, limiter.ErrLimitExceeded):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if admitted.Load() != limit || refused.Load() != goroutines-limit {
			t.Fatalf("round %d: admitted %d, refused %d; want %d and %d", round, admitted.Load(), refused.Load(), limit, goroutines-limit)
		}
		if n, err := a.Active(ctx, "app-1"); err != nil || n != limit {
			t.Fatalf("round %d: active %d (%v), want %d", round, n, err, limit)
		}
		for _, r := range releases {
			r()
			r() // idempotent
		}
		if n, err := b.Active(ctx, "app-1"); err != nil || n != 0 {
			t.Fatalf("round %d: active after release %d (%v), want 0", round, n, err)
		}
	}
}

// TestKeysAreSeparateAndUnlimitedCounts: a key's cap does not touch another key, and an
// unlimited request is admitted but counted.
func TestKeysAreSeparateAndUnlimitedCounts(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := context.Background()
	r1, err := a.Acquire(ctx, "x", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r1()
	if _, err := b.Acquire(ctx, "x", 1); !errors.Is(err, limiter.ErrLimitExceeded) {
		t.Fatalf("second slot of x: %v, want ErrLimitExceeded", err)
	}
	r2, err := b.Acquire(ctx, "y", 1)
	if err != nil {
		t.Fatalf("y: %v", err)
	}
	defer r2()
	r3, err := b.Acquire(ctx, "x", 0)
	if err != nil {
		t.Fatalf("unlimited: %v", err)
	}
	defer r3()
	if n, _ := a.Active(ctx, "x"); n != 2 {
		t.Fatalf("active x = %d, want 2 (the unlimited request counts)", n)
	}
}

// TestLeaseIsRenewedWhileHeld: a slot held for several lease periods stays held, because its
// holder renews it.
func TestLeaseIsRenewedWhileHeld(t *testing.T) {
	a, b := twoReplicas(t, redislimiter.WithLease(time.Second))
	ctx := context.Background()
	release, err := a.Acquire(ctx, "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// Watch the other replica be refused across three lease periods: without renewal the
	// lease would have expired after the first.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := b.Acquire(ctx, "k", 1); err == nil {
			r()
			t.Fatal("the held slot was given to another request: its lease was not renewed")
		} else if !errors.Is(err, limiter.ErrLimitExceeded) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSlotOfAKilledHolderFrees: a process that holds a slot is killed with SIGKILL; its slot
// frees itself when the lease expires, and another replica takes it.
func TestSlotOfAKilledHolderFrees(t *testing.T) {
	prefix := redistest.Prefix(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldSlot$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REDISLIMITER_HOLD_PREFIX="+prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	held := false
	for sc.Scan() {
		if sc.Text() == "held" {
			held = true
			break
		}
	}
	if !held {
		t.Fatalf("the holder did not report its slot: %v", sc.Err())
	}
	c, err := redisx.Open(context.Background(), redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := redislimiter.New(c, prefix, redislimiter.WithLease(time.Second))
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "app", 1); !errors.Is(err, limiter.ErrLimitExceeded) {
		t.Fatalf("while the holder lives: %v, want ErrLimitExceeded", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for {
		release, err := l.Acquire(ctx, "app", 1)
		if err == nil {
			release()
			return
		}
		if !errors.Is(err, limiter.ErrLimitExceeded) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed holder's slot never freed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHelperHoldSlot is the holder process of TestSlotOfAKilledHolderFrees: it takes the one
// slot of "app" with a one-second lease, says so, and waits to be killed.
func TestHelperHoldSlot(t *testing.T) {
	prefix := os.Getenv("REDISLIMITER_HOLD_PREFIX")
	if prefix == "" {
		t.Skip("helper process")
	}
	c, err := redisx.Open(context.Background(), redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	l := redislimiter.New(c, prefix, redislimiter.WithLease(time.Second))
	if _, err := l.Acquire(context.Background(), "app", 1); err != nil {
		t.Fatal(err)
	}
	fmt.Println("held")
	select {}
}

// TestRedisDownRefuses: with Redis gone, Acquire fails at once with ErrUnavailable (never
// admits past the cap, never hangs), and works again when Redis is back.
func TestRedisDownRefuses(t *testing.T) {
	srv := redistest.StartServer(t)
	c, err := redisx.Open(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := redislimiter.New(c, "t:")
	ctx := context.Background()
	srv.Stop()
	if _, err := l.Acquire(ctx, "app", 1); !errors.Is(err, redisx.ErrUnavailable) {
		t.Fatalf("Acquire with Redis down = %v, want ErrUnavailable", err)
	}
	srv.Start(t)
	release, err := l.Acquire(ctx, "app", 1)
	if err != nil {
		t.Fatalf("Acquire after Redis came back: %v", err)
	}
	release()
}
