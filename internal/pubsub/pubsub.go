// Package pubsub fans messages out to the subscribers of a topic, e.g. the
// events of a workflow run to every client streaming it.
//
// Contract, shared by every implementation:
//
//   - Delivery is at most once and only to subscribers present when the
//     message is published; there is no history or replay (callers that
//     need catch-up read persisted state first, then subscribe).
//   - Each subscriber receives messages in publish order through a bounded
//     buffer. Publish never waits for a subscriber: a subscriber whose
//     buffer is full is disconnected, meaning its channel is closed and it
//     receives nothing more. Silently dropping one message could leave a
//     client with a stream that looks complete but is not (a missing
//     node_finished or message_end), whereas a closed stream is visible and
//     can be resumed from persisted state.
//   - A subscription ends, and its channel is closed, when the subscriber
//     calls its cancel function (idempotent), when the context passed to
//     Subscribe is done, or when it is disconnected for being slow.
//   - Messages are shared between subscribers: a receiver must not modify
//     the slice it receives. Publish copies msg, so the publisher may reuse
//     its buffer.
//
// [Local] is the in-process implementation; a Redis adapter implements the
// same interface for multi-replica deployments.
package pubsub

import (
	"context"
	"sync"
)

// DefaultBuffer is the per-subscriber buffer used when NewLocal is given a
// size <= 0.
const DefaultBuffer = 256

// PubSub publishes messages to topics and subscribes to them.
type PubSub interface {
	// Publish sends msg to the current subscribers of topic without
	// waiting for any of them.
	Publish(ctx context.Context, topic string, msg []byte) error
	// Subscribe returns a channel receiving the messages of topic until
	// the subscription ends, and a function that ends it.
	Subscribe(ctx context.Context, topic string) (<-chan []byte, func(), error)
}

// Local is the in-process PubSub. The zero value is not usable; call
// NewLocal.
type Local struct {
	buffer int

	mu     sync.Mutex
	topics map[string]map[*subscriber]struct{}
}

type subscriber struct {
	ch chan []byte
	// closed is guarded by Local.mu; every close of ch happens under it, so
	// a publisher never sends on a closed channel.
	closed bool
}

var _ PubSub = (*Local)(nil)

// NewLocal returns an in-process PubSub whose subscribers each buffer up to
// buffer messages (DefaultBuffer when buffer <= 0).
func NewLocal(buffer int) *Local {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	return &Local{buffer: buffer, topics: make(map[string]map[*subscriber]struct{})}
}

// Publish implements PubSub. It fails only when ctx is already done.
func (l *Local) Publish(ctx context.Context, topic string, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	subs := l.topics[topic]
	if len(subs) == 0 {
		return nil
	}
	m := append([]byte(nil), msg...)
	for s := range subs {
		select {
		case s.ch <- m:
		default:
			// Too slow: disconnect rather than block or skip (see the
			// package documentation).
			l.removeLocked(topic, s)
		}
	}
	return nil
}

// Subscribe implements PubSub. It fails only when ctx is already done.
func (l *Local) Subscribe(ctx context.Context, topic string) (<-chan []byte, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s := &subscriber{ch: make(chan []byte, l.buffer)}
	l.mu.Lock()
	subs := l.topics[topic]
	if subs == nil {
		subs = make(map[*subscriber]struct{})
		l.topics[topic] = subs
	}
	subs[s] = struct{}{}
	l.mu.Unlock()

	remove := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.removeLocked(topic, s)
	}
	stop := context.AfterFunc(ctx, remove)
	return s.ch, func() {
		stop()
		remove()
	}, nil
}

// removeLocked closes s and forgets it; it is a no-op for a subscriber
// already removed. l.mu must be held.
func (l *Local) removeLocked(topic string, s *subscriber) {
	if s.closed {
		return
	}
	s.closed = true
	close(s.ch)
	subs := l.topics[topic]
	delete(subs, s)
	if len(subs) == 0 {
		delete(l.topics, topic)
	}
}

// Subscribers reports the number of live subscriptions to topic (for tests
// and metrics).
func (l *Local) Subscribers(topic string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.topics[topic])
}
