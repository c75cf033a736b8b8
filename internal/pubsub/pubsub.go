// Package pubsub carries small messages between the parts of Parley that coordinate: a stop
// request to the replica that runs the task, and later events and cache invalidations.
//
// Contract, shared by every implementation:
//
//   - Delivery is at most once and only to subscriptions that exist when the message is
//     published: there is no history and no acknowledgement. Use it for signals whose loss a
//     caller can survive or retry, not for durable work (that is jobs' business).
//   - Subscribe returns once the subscription is in place: a message published after it
//     returns reaches the handler (while the backend is up).
//   - A subscription calls its handler from one goroutine, in publication order; the handler
//     must not block for long.
//   - Publish fails only when the backend cannot be reached (Redis: an error wrapping
//     redisx.ErrUnavailable).
//
// [Local] is the in-process implementation; redispubsub the one of replicas that share a
// Redis (its pub/sub channels, under the deployment's key prefix).
package pubsub

import (
	"context"
	"sync"
)

// PubSub publishes messages on named channels and delivers them to subscribers.
type PubSub interface {
	// Publish sends payload to the current subscribers of channel.
	Publish(ctx context.Context, channel string, payload []byte) error
	// Subscribe calls fn with every message published on channel from now until unsubscribe
	// is called.
	Subscribe(ctx context.Context, channel string, fn func(payload []byte)) (unsubscribe func(), err error)
}

// Local is the in-process PubSub. The zero value is ready to use.
type Local struct {
	mu   sync.Mutex
	subs map[string]map[*localSub]struct{}
}

type localSub struct {
	// mu serialises deliveries to one subscription, so its handler sees one message at a
	// time, in order.
	mu   sync.Mutex
	fn   func([]byte)
	gone bool
}

var _ PubSub = (*Local)(nil)

// NewLocal returns an in-process PubSub.
func NewLocal() *Local { return &Local{} }

// Publish implements PubSub: it calls the handlers of channel's subscribers before returning.
func (l *Local) Publish(ctx context.Context, channel string, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	subs := make([]*localSub, 0, len(l.subs[channel]))
	for s := range l.subs[channel] {
		subs = append(subs, s)
	}
	l.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		if !s.gone {
			s.fn(append([]byte(nil), payload...))
		}
		s.mu.Unlock()
	}
	return nil
}

// Subscribe implements PubSub.
func (l *Local) Subscribe(ctx context.Context, channel string, fn func([]byte)) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &localSub{fn: fn}
	l.mu.Lock()
	if l.subs == nil {
		l.subs = map[string]map[*localSub]struct{}{}
	}
	if l.subs[channel] == nil {
		l.subs[channel] = map[*localSub]struct{}{}
	}
	l.subs[channel][s] = struct{}{}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.subs[channel], s)
			if len(l.subs[channel]) == 0 {
				delete(l.subs, channel)
			}
			l.mu.Unlock()
			s.mu.Lock()
			s.gone = true
			s.mu.Unlock()
		})
	}, nil
}
