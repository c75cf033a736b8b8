// Package redisquota is the quota.Counter of replicas that share a Redis: a limit holds across
// all of them. A count is one Redis integer per key and window, which expires with its window;
// a take is a Lua script, so its check and its increment are one atomic step and a limit holds
// exactly however many requests race for it on however many replicas.
package redisquota

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/quota"
	"github.com/parleyhq/parley/internal/redisx"
)

// takeScript adds ARGV[1] to KEYS[1] unless the sum would pass ARGV[2]; a new count expires
// after ARGV[3] ms (its window's end, and a little more). It answers the count and 1 when it
// took, the count and 0 when it did not.
var takeScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v + n > tonumber(ARGV[2]) then
  return {v, 0}
end
v = redis.call('INCRBY', KEYS[1], n)
if v == n then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {v, 1}
`)

// addScript adds ARGV[1] to KEYS[1], setting its expiry (ARGV[2] ms) when it is new.
var addScript = redis.NewScript(`
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return v
`)

// Counter is the Redis quota.Counter. It is safe for concurrent use.
type Counter struct {
	c      redis.UniversalClient
	prefix string
	now    func() time.Time
}

var _ quota.Counter = (*Counter)(nil)

// New returns a counter keeping its counts under prefix ("parley:" gives "parley:quota:…").
func New(c redis.UniversalClient, prefix string) *Counter {
	return &Counter{c: c, prefix: prefix, now: time.Now}
}

// slack keeps a count a little past its window's end, so that a replica whose clock is behind
// still finds it.
const slack = 5 * time.Second

// key is the Redis key of key's count in the window of w that holds now, and how long it lives.
func (r *Counter) key(key string, w quota.Window) (string, time.Time, int64) {
	now := r.now()
	start, end := w.Bounds(now)
	return r.prefix + "quota:" + key + ":" + strconv.FormatInt(start.Unix(), 10), end, (end.Sub(now) + slack).Milliseconds()
}

// Take implements quota.Counter. It fails when Redis cannot be reached (an error wrapping
// redisx.ErrUnavailable): the caller then refuses, never admits past the limit.
func (r *Counter) Take(ctx context.Context, key string, w quota.Window, limit, n int64) (quota.Result, error) {
	k, end, ttl := r.key(key, w)
	res, err := takeScript.Run(ctx, r.c, []string{k}, n, limit, ttl).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("the script answered %v", res)
	}
	if err != nil {
		return quota.Result{}, fmt.Errorf("quota: take %q: %w", key, redisx.Classify(err))
	}
	allowed := res[1] == 1
	return quota.Result{Allowed: allowed, Limit: limit, Remaining: max(0, limit-res[0]), Reset: end}, nil
}

// Add implements quota.Counter.
func (r *Counter) Add(ctx context.Context, key string, w quota.Window, n int64) error {
	k, _, ttl := r.key(key, w)
	if err := addScript.Run(ctx, r.c, []string{k}, n, ttl).Err(); err != nil {
		return fmt.Errorf("quota: add to %q: %w", key, redisx.Classify(err))
	}
	return nil
}

// Used implements quota.Counter.
func (r *Counter) Used(ctx context.Context, key string, w quota.Window) (int64, time.Time, error) {
	k, end, _ := r.key(key, w)
	v, err := r.c.Get(ctx, k).Int64()
	if err == redis.Nil {
		return 0, end, nil
	}
	if err != nil {
		return 0, end, fmt.Errorf("quota: read %q: %w", key, redisx.Classify(err))
	}
	return v, end, nil
}
