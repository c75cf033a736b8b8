// Package pubsubtest checks that a pubsub.PubSub keeps the package's contract; every
// implementation's tests run it.
package pubsubtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/pubsub"
)

// collector gathers what a subscription receives.
type collector struct {
	mu   sync.Mutex
	got  []string
	more chan struct{}
}

func newCollector() *collector { return &collector{more: make(chan struct{}, 1024)} }

func (c *collector) fn(p []byte) {
	c.mu.Lock()
	c.got = append(c.got, string(p))
	c.mu.Unlock()
	c.more <- struct{}{}
}

// wait waits for n messages in all, failing t after 10 s.
func (c *collector) wait(t *testing.T, n int) []string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		if len(c.got) >= n {
			out := append([]string(nil), c.got...)
			c.mu.Unlock()
			return out
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-timeout:
			t.Fatalf("received %v, want %d messages", c.got, n)
		}
	}
}

// Run checks the contract on two handles (a and b) of one bus: two replicas' clients of one
// Redis, or one Local twice.
func Run(t *testing.T, a, b pubsub.PubSub) {
	ctx := context.Background()
	t.Run("delivers in order to every subscriber of the channel", func(t *testing.T) {
		onA, onB, other := newCollector(), newCollector(), newCollector()
		for _, s := range []struct {
			ps pubsub.PubSub
			ch string
			c  *collector
		}{{a, "ch1", onA}, {b, "ch1", onB}, {b, "ch2", other}} {
			unsub, err := s.ps.Subscribe(ctx, s.ch, s.c.fn)
			if err != nil {
				t.Fatal(err)
			}
			defer unsub()
		}
		for i := range 20 {
			if err := b.Publish(ctx, "ch1", fmt.Appendf(nil, "m%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		// A message on ch2 after them: once it arrived, ch1's are all out too.
		if err := a.Publish(ctx, "ch2", []byte("x")); err != nil {
			t.Fatal(err)
		}
		for _, c := range []*collector{onA, onB} {
			got := c.wait(t, 20)
			for i, m := range got {
				if m != fmt.Sprintf("m%d", i) {
					t.Fatalf("message %d = %q; all: %v", i, m, got)
				}
			}
		}
		if got := other.wait(t, 1); len(got) != 1 || got[0] != "x" {
			t.Fatalf("ch2 got %v, want [x]", got)
		}
	})
	t.Run("unsubscribe stops delivery", func(t *testing.T) {
		gone, stays := newCollector(), newCollector()
		unsub, err := a.Subscribe(ctx, "ch3", gone.fn)
		if err != nil {
			t.Fatal(err)
		}
		unsub2, err := a.Subscribe(ctx, "ch3", stays.fn)
		if err != nil {
			t.Fatal(err)
		}
		defer unsub2()
		if err := b.Publish(ctx, "ch3", []byte("1")); err != nil {
			t.Fatal(err)
		}
		gone.wait(t, 1)
		stays.wait(t, 1)
		unsub()
		unsub() // idempotent
		if err := b.Publish(ctx, "ch3", []byte("2")); err != nil {
			t.Fatal(err)
		}
		stays.wait(t, 2)
		gone.mu.Lock()
		defer gone.mu.Unlock()
		if len(gone.got) != 1 {
			t.Fatalf("an ended subscription received %v", gone.got)
		}
	})
}
