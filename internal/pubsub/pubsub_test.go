package pubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

const waitLimit = 5 * time.Second

// recv returns the next message, or ok=false when the channel is closed.
// It fails the test if nothing happens within waitLimit.
func recv(t *testing.T, ch <-chan []byte) (msg string, ok bool) {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case m, ok := <-ch:
		return string(m), ok
	case <-timer.C:
		t.Fatal("timed out waiting for a message")
		return "", false
	}
}

func expectMsgs(t *testing.T, ch <-chan []byte, want ...string) {
	t.Helper()
	for _, w := range want {
		got, ok := recv(t, ch)
		if !ok {
			t.Fatalf("channel closed, want %q", w)
		}
		if got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
}

// drained reads ch until it is closed, or gives up after waitLimit.
func drained(ch <-chan []byte) bool {
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return true
			}
		case <-timer.C:
			return false
		}
	}
}

func expectClosed(t *testing.T, ch <-chan []byte) {
	t.Helper()
	if m, ok := recv(t, ch); ok {
		t.Fatalf("got %q, want closed channel", m)
	}
}

func TestFanOutInOrder(t *testing.T) {
	t.Parallel()
	ps := NewLocal(8)
	ctx := t.Context()
	a, cancelA, err := ps.Subscribe(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	defer cancelA()
	b, cancelB, _ := ps.Subscribe(ctx, "run-1")
	defer cancelB()
	other, cancelOther, _ := ps.Subscribe(ctx, "run-2")
	defer cancelOther()

	buf := []byte("one")
	if err := ps.Publish(ctx, "run-1", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXX") // the publisher may reuse its buffer
	_ = ps.Publish(ctx, "run-1", []byte("two"))
	_ = ps.Publish(ctx, "run-2", []byte("elsewhere"))
	expectMsgs(t, a, "one", "two")
	expectMsgs(t, b, "one", "two")
	expectMsgs(t, other, "elsewhere")
}

func TestPublishWithoutSubscribers(t *testing.T) {
	t.Parallel()
	if err := NewLocal(0).Publish(t.Context(), "nobody", []byte("x")); err != nil {
		t.Fatal(err)
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	ps := NewLocal(1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ps.Publish(ctx, "t", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish: %v", err)
	}
	if _, _, err := ps.Subscribe(ctx, "t"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Subscribe: %v", err)
	}
}

func TestUnsubscribe(t *testing.T) {
	t.Parallel()
	ps := NewLocal(4)
	ch, cancel, _ := ps.Subscribe(t.Context(), "t")
	_ = ps.Publish(t.Context(), "t", []byte("before"))
	cancel()
	cancel() // idempotent
	if n := ps.Subscribers("t"); n != 0 {
		t.Fatalf("Subscribers = %d", n)
	}
	_ = ps.Publish(t.Context(), "t", []byte("after"))
	expectMsgs(t, ch, "before") // buffered messages stay readable
	expectClosed(t, ch)
}

func TestContextEndsSubscription(t *testing.T) {
	t.Parallel()
	ps := NewLocal(4)
	ctx, cancel := context.WithCancel(t.Context())
	ch, unsubscribe, _ := ps.Subscribe(ctx, "t")
	defer unsubscribe()
	cancel()
	expectClosed(t, ch)
	if n := ps.Subscribers("t"); n != 0 {
		t.Fatalf("Subscribers = %d", n)
	}
}

func TestSlowSubscriberIsDisconnected(t *testing.T) {
	t.Parallel()
	ps := NewLocal(2)
	ctx := t.Context()
	fast, cancelFast, _ := ps.Subscribe(ctx, "t")
	defer cancelFast()
	slow, cancelSlow, _ := ps.Subscribe(ctx, "t")
	defer cancelSlow()

	for i := range 3 {
		if err := ps.Publish(ctx, "t", fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatal(err)
		}
		expectMsgs(t, fast, fmt.Sprintf("m%d", i))
	}
	// The slow subscriber got what fitted in its buffer, then was closed.
	expectMsgs(t, slow, "m0", "m1")
	expectClosed(t, slow)
	if n := ps.Subscribers("t"); n != 1 {
		t.Fatalf("Subscribers = %d, want 1", n)
	}
	_ = ps.Publish(ctx, "t", []byte("m3"))
	expectMsgs(t, fast, "m3")
}

func TestPublishNeverBlocks(t *testing.T) {
	t.Parallel()
	ps := NewLocal(1)
	_, cancel, _ := ps.Subscribe(t.Context(), "t")
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			_ = ps.Publish(t.Context(), "t", []byte("x"))
		}
	}()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatal("Publish blocked on a subscriber that never reads")
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	ps := NewLocal(16)
	ctx := t.Context()
	published := make(chan struct{})
	var pubs, subs sync.WaitGroup
	for p := range 4 {
		pubs.Go(func() {
			for i := range 200 {
				_ = ps.Publish(ctx, fmt.Sprintf("t%d", i%3), fmt.Appendf(nil, "%d-%d", p, i))
			}
		})
	}
	for s := range 8 {
		subs.Go(func() {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			ch, unsubscribe, err := ps.Subscribe(sctx, fmt.Sprintf("t%d", s%3))
			if err != nil {
				t.Error(err)
				return
			}
			defer unsubscribe()
			// Read a few messages, or stop once publishing is over (a late
			// subscriber may get none).
		read:
			for range 10 {
				select {
				case _, ok := <-ch:
					if !ok {
						break read
					}
				case <-published:
					break read
				}
			}
			if s%2 == 0 {
				cancel()
			} else {
				unsubscribe()
			}
			if !drained(ch) { // closed by either path
				t.Error("subscription channel not closed")
			}
		})
	}
	pubs.Wait()
	close(published)
	subs.Wait()
	for i := range 3 {
		if n := ps.Subscribers(fmt.Sprintf("t%d", i)); n != 0 {
			t.Errorf("t%d has %d subscribers left", i, n)
		}
	}
}
