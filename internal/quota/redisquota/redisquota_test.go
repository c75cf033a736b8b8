package redisquota_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/quota"
	"github.com/parleyhq/parley/internal/quota/redisquota"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
)

// TestExactAcrossReplicas: goroutines on two replicas (clients of their own, one prefix) race
// for a limit and take exactly the limit; what is left and the used count agree; Add counts
// past the limit.
func TestExactAcrossReplicas(t *testing.T) {
	c1, prefix := redistest.Client(t)
	c2, err := redisx.Open(context.Background(), redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Close() })
	a, b := redisquota.New(c1, prefix), redisquota.New(c2, prefix)
	// The counts live in fixed windows (a minute starts on the minute): begin well inside one.
	if now := time.Now(); now.Second() >= 55 {
		time.Sleep(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	}
	ctx := context.Background()
	var took atomic.Int64
	var wg sync.WaitGroup
	for i := range 120 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			if r, err := c.Take(ctx, "rpm:key:1", quota.Minute, 25, 1); err != nil {
				t.Error(err)
			} else if r.Allowed {
				took.Add(1)
			}
		})
	}
	wg.Wait()
	if took.Load() != 25 {
		t.Fatalf("%d taken, want 25", took.Load())
	}
	if used, reset, err := b.Used(ctx, "rpm:key:1", quota.Minute); err != nil || used != 25 || reset.IsZero() {
		t.Fatalf("used %d until %v: %v", used, reset, err)
	}
	if r, _ := a.Take(ctx, "rpm:key:1", quota.Minute, 25, 1); r.Allowed || r.Remaining != 0 {
		t.Fatalf("past the limit: %+v", r)
	}
	if err := a.Add(ctx, "tpd:key:1", quota.Day, 500); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(ctx, "tpd:key:1", quota.Day, 700); err != nil {
		t.Fatal(err)
	}
	if used, _, _ := a.Used(ctx, "tpd:key:1", quota.Day); used != 1200 {
		t.Fatalf("used %d tokens", used)
	}
	if used, _, _ := a.Used(ctx, "never", quota.Day); used != 0 {
		t.Fatalf("an unknown key used %d", used)
	}
}
