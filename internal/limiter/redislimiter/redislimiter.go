// Package redislimiter is the limiter.Limiter of replicas that share a Redis: the per-app
// concurrency cap holds across all of them.
//
// Each key is a sorted set of leases: a member per admitted request, scored by the time its
// lease expires (Redis's own clock, so replicas' clocks do not matter). Acquire, renew and
// release are Lua scripts, so a check and its update are one atomic step and the cap is exact
// under any concurrency. A replica renews the leases of its live requests every third of the
// lease; a replica that dies (kill -9, a lost host) stops renewing, and its slots free
// themselves when their leases expire — no slot leaks.
package redislimiter

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/redisx"
)

// DefaultLease is how long a slot outlives a replica that died holding it.
const DefaultLease = 30 * time.Second

// acquireScript admits ARGV[1] into the set KEYS[1] unless it already holds ARGV[2] (> 0)
// live leases; a lease lasts ARGV[3] ms. Expired leases are dropped first. The set itself
// expires a lease after its last change, so an idle app leaves nothing behind.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = tonumber(ARGV[2])
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
local lease = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
return 1
`)

// renewScript extends the lease ARGV[1] in KEYS[1] by ARGV[2] ms from now if it is still
// there; it answers 0 for a lease that expired (the slot may be someone else's by now).
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[1])
if redis.call('PTTL', KEYS[1]) < lease then
  redis.call('PEXPIRE', KEYS[1], lease)
end
return 1
`)

// Limiter is the Redis limiter.Limiter. It is safe for concurrent use.
type Limiter struct {
	c      redis.UniversalClient
	prefix string
	lease  time.Duration
	log    *slog.Logger
}

var _ limiter.Limiter = (*Limiter)(nil)

// Option configures a Limiter.
type Option func(*Limiter)

// WithLease sets how long a slot outlives a replica that died holding it (DefaultLease).
func WithLease(d time.Duration) Option { return func(l *Limiter) { l.lease = d } }

// WithLogger sets the logger of lost leases and failed releases.
func WithLogger(log *slog.Logger) Option { return func(l *Limiter) { l.log = log } }

// New returns a limiter keeping its slots under prefix ("parley:" gives "parley:slots:<key>").
func New(c redis.UniversalClient, prefix string, opts ...Option) *Limiter {
	l := &Limiter{c: c, prefix: prefix, lease: DefaultLease, log: slog.Default()}
	for _, o := range opts {
		o(l)
	}
	return l
}

func (l *Limiter) key(k string) string { return l.prefix + "slots:" + k }

// Acquire implements limiter.Limiter. Besides ErrLimitExceeded it fails when ctx is done or
// Redis cannot be reached (an error wrapping redisx.ErrUnavailable): the request is then
// refused, never admitted past the cap.
func (l *Limiter) Acquire(ctx context.Context, key string, limit int) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := uuid.NewString()
	k := l.key(key)
	ok, err := acquireScript.Run(ctx, l.c, []string{k}, id, max(limit, 0), l.lease.Milliseconds()).Int()
	if err != nil {
		return nil, fmt.Errorf("limiter: acquire a slot of %q: %w", key, redisx.Classify(err))
	}
	if ok == 0 {
		return nil, fmt.Errorf("%w: %q is at its limit of %d", limiter.ErrLimitExceeded, key, limit)
	}
	renewCtx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		l.renew(renewCtx, k, id)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopRenew()
			<-renewed
			rctx, cancel := context.WithTimeout(context.Background(), redisx.DialTimeout+redisx.ReadTimeout)
			defer cancel()
			if err := l.c.ZRem(rctx, k, id).Err(); err != nil {
				// The lease frees the slot when it expires.
				l.log.Warn("could not release a concurrency slot; it frees itself when its lease expires",
					"key", key, "lease", l.lease.String(), "error", redisx.Classify(err))
			}
		})
	}, nil
}

// renew extends the lease every third of it until ctx ends.
func (l *Limiter) renew(ctx context.Context, k, id string) {
	t := time.NewTicker(l.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := renewScript.Run(ctx, l.c, []string{k}, id, l.lease.Milliseconds()).Int()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// Redis is unreachable: try again at the next tick, while the lease lasts.
			l.log.Warn("could not renew a concurrency slot", "key", k, "error", redisx.Classify(err))
		case ok == 0:
			// The lease expired (Redis was unreachable for longer than it): the slot may
			// have gone to another request, so this one no longer counts against the cap.
			l.log.Warn("a concurrency slot's lease expired while its request ran", "key", k)
			return
		}
	}
}

// Active reports the live leases of key (for tests and metrics).
func (l *Limiter) Active(ctx context.Context, key string) (int, error) {
	now, err := l.c.Time(ctx).Result()
	if err != nil {
		return 0, redisx.Classify(err)
	}
	n, err := l.c.ZCount(ctx, l.key(key), fmt.Sprint(now.UnixMilli()+1), "+inf").Result()
	return int(n), redisx.Classify(err)
}
