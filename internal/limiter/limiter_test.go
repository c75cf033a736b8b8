package limiter

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestAcquire(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		limit    int
		attempts int
		admitted int
	}{
		{"unlimited zero", 0, 100, 100},
		{"unlimited negative", -1, 10, 10},
		{"limit one", 1, 3, 1},
		{"limit three", 3, 5, 3},
		{"under limit", 5, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := NewLocal()
			admitted := 0
			for range tt.attempts {
				release, err := l.Acquire(t.Context(), "app", tt.limit)
				switch {
				case err == nil:
					admitted++
					defer release()
				case errors.Is(err, ErrLimitExceeded):
				default:
					t.Fatalf("unexpected error %v", err)
				}
			}
			if admitted != tt.admitted {
				t.Fatalf("admitted %d, want %d", admitted, tt.admitted)
			}
			if got := l.Active("app"); got != tt.admitted {
				t.Fatalf("Active = %d, want %d", got, tt.admitted)
			}
		})
	}
}

func TestReleaseIdempotent(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	r1, err := l.Acquire(t.Context(), "k", 2)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := l.Acquire(t.Context(), "k", 2)
	r1()
	r1()
	r1() // extra calls must not free r2's slot
	if got := l.Active("k"); got != 1 {
		t.Fatalf("Active = %d, want 1", got)
	}
	if _, err := l.Acquire(t.Context(), "k", 1); !errors.Is(err, ErrLimitExceeded) {
		t.Fatalf("r2 still holds the only slot, got %v", err)
	}
	r2()
	if got := l.Active("k"); got != 0 {
		t.Fatalf("Active = %d, want 0", got)
	}
	r3, err := l.Acquire(t.Context(), "k", 1)
	if err != nil {
		t.Fatalf("slot not given back: %v", err)
	}
	r3()
}

func TestKeysAreIndependent(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	ra, err := l.Acquire(t.Context(), "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ra()
	rb, err := l.Acquire(t.Context(), "b", 1)
	if err != nil {
		t.Fatalf("key b blocked by key a: %v", err)
	}
	rb()
}

func TestErrorNamesKeyAndLimit(t *testing.T) {
	t.Parallel()
	l := NewLocal()
	r, _ := l.Acquire(t.Context(), "app-1", 1)
	defer r()
	_, err := l.Acquire(t.Context(), "app-1", 1)
	if err == nil || err.Error() != `too many concurrent requests: "app-1" is at its limit of 1` {
		t.Fatalf("error = %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := NewLocal().Acquire(ctx, "k", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// TestConcurrentNeverExceedsLimit hammers one key and checks that the
// number of holders never goes above the limit.
func TestConcurrentNeverExceedsLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	l := NewLocal()
	var holders, peak atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 100 {
				release, err := l.Acquire(t.Context(), "k", limit)
				if err != nil {
					if !errors.Is(err, ErrLimitExceeded) {
						t.Error(err)
					}
					continue
				}
				n := holders.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				holders.Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Fatalf("peak %d holders, limit %d", p, limit)
	}
	if got := l.Active("k"); got != 0 {
		t.Fatalf("Active = %d after all releases", got)
	}
}
