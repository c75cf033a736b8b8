package quota

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLocalWindows: a take within the limit is counted, one past it is not; the count starts
// again with the next window, a minute's after a minute and a day's at UTC midnight; Add counts
// past the limit; past windows are forgotten.
func TestLocalWindows(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 23, 59, 30, 0, time.UTC)
	l := NewLocal()
	l.now = func() time.Time { return now }
	for i := range 3 {
		if r, _ := l.Take(ctx, "k", Minute, 3, 1); !r.Allowed || r.Remaining != int64(2-i) || !r.Reset.Equal(now.Truncate(time.Minute).Add(time.Minute)) {
			t.Fatalf("take %d: %+v", i, r)
		}
	}
	if r, _ := l.Take(ctx, "k", Minute, 3, 1); r.Allowed || r.Remaining != 0 {
		t.Fatalf("past the limit: %+v", r)
	}
	if r, _ := l.Take(ctx, "k", Day, 10, 4); !r.Allowed || r.Remaining != 6 {
		t.Fatalf("the day's count is its own: %+v", r)
	}
	_ = l.Add(ctx, "k", Day, 100)
	if used, reset, _ := l.Used(ctx, "k", Day); used != 104 || !reset.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("used %d until %v", used, reset)
	}
	now = now.Add(45 * time.Second) // the next minute, and the next day
	if r, _ := l.Take(ctx, "k", Minute, 3, 3); !r.Allowed || r.Remaining != 0 {
		t.Fatalf("a new minute: %+v", r)
	}
	if used, _, _ := l.Used(ctx, "k", Day); used != 0 {
		t.Fatalf("a new day: used %d", used)
	}
	if len(l.counts) != 1 {
		t.Fatalf("past windows kept: %v", l.counts)
	}
}

// TestLocalExact: goroutines racing for a limit take exactly the limit.
func TestLocalExact(t *testing.T) {
	l := NewLocal()
	var took atomic.Int64
	// The counts live in fixed windows (a minute starts on the minute): begin well inside one.
	if now := time.Now(); now.Second() >= 55 {
		time.Sleep(now.Truncate(time.Minute).Add(time.Minute).Sub(now))
	}
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if r, err := l.Take(context.Background(), "k", Minute, 37, 1); err == nil && r.Allowed {
				took.Add(1)
			}
		})
	}
	wg.Wait()
	if took.Load() != 37 {
		t.Fatalf("%d taken, want 37", took.Load())
	}
}
