// Package redispubsub is the pubsub.PubSub of replicas that share a Redis: Redis pub/sub
// channels named under the deployment's key prefix.
//
// A subscription holds a connection of its own. When Redis goes away, go-redis reconnects
// and subscribes again by itself; messages published meanwhile are lost, as the pubsub
// contract allows (and their publishers got an error).
package redispubsub

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/pubsub"
	"github.com/parleyhq/parley/internal/redisx"
)

// PubSub is the Redis pubsub.PubSub.
type PubSub struct {
	c      redis.UniversalClient
	prefix string
}

var _ pubsub.PubSub = (*PubSub)(nil)

// New returns a PubSub whose channels are prefix+"ch:"+name.
func New(c redis.UniversalClient, prefix string) *PubSub {
	return &PubSub{c: c, prefix: prefix}
}

func (p *PubSub) channel(name string) string { return p.prefix + "ch:" + name }

// Publish implements pubsub.PubSub.
func (p *PubSub) Publish(ctx context.Context, channel string, payload []byte) error {
	if err := p.c.Publish(ctx, p.channel(channel), payload).Err(); err != nil {
		return fmt.Errorf("pubsub: publish on %s: %w", channel, redisx.Classify(err))
	}
	return nil
}

// Subscribe implements pubsub.PubSub; it returns once Redis confirmed the subscription.
func (p *PubSub) Subscribe(ctx context.Context, channel string, fn func([]byte)) (func(), error) {
	ps := p.c.Subscribe(ctx, p.channel(channel))
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("pubsub: subscribe to %s: %w", channel, redisx.Classify(err))
	}
	msgs := ps.Channel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			fn([]byte(m.Payload))
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = ps.Close()
			<-done
		})
	}, nil
}
