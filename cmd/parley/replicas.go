package main

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/eventlog/redislog"
	"github.com/parleyhq/parley/internal/health"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/limiter/redislimiter"
	"github.com/parleyhq/parley/internal/pubsub"
	"github.com/parleyhq/parley/internal/pubsub/redispubsub"
	"github.com/parleyhq/parley/internal/quota"
	"github.com/parleyhq/parley/internal/quota/redisquota"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// eventsPoolSize bounds the Redis connections of the events operation's readers per replica:
// the events streams a replica serves at once (more wait up to the pool timeout, then end).
const eventsPoolSize = 512

// coordination is what replicas share: the per-app concurrency cap and the stop handles of
// running tasks, in-process for one process, in Redis with PARLEY_REDIS_URL (docs/replicas.md).
type coordination struct {
	limiter limiter.Limiter
	// quota counts against the rate limits of keys and apps.
	quota quota.Counter
	tasks tasks.Registry
	// events keeps the workflow runs' events for the events operation: nil (the server keeps
	// them in the process) without Redis.
	events eventlog.Log
	// checks are the readiness checks: the database, and Redis when configured.
	checks []health.Check
	// shared says whether replicas share the coordination (Redis).
	shared bool
	// ps is the pub/sub replicas share (Redis), nil in one process.
	ps pubsub.PubSub
	// pools are the Redis clients by name, for the metrics of their connection pools.
	pools map[string]interface{ PoolStats() *redis.PoolStats }
	close func()
}

func openCoordination(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (*coordination, error) {
	c := &coordination{checks: []health.Check{{Name: "database", Ping: st.Ping}}, close: func() {}}
	if cfg.RedisURL == "" {
		c.limiter, c.tasks, c.quota = limiter.NewLocal(), tasks.NewLocal(), quota.NewLocal()
		return c, nil
	}
	client, err := redisx.Open(ctx, cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	c.ps = redispubsub.New(client, cfg.RedisKeyPrefix)
	reg, err := tasks.NewShared(ctx, c.ps, log)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	// The events operation's readers block in XREAD, one connection each: they get a pool of
	// their own so that they never hold the connections admission and stop need.
	evOpt := *client.Options()
	evOpt.PoolSize = eventsPoolSize
	evClient := redis.NewClient(&evOpt)
	c.events = redislog.New(evClient, cfg.RedisKeyPrefix, eventlog.DefaultLimits, log)
	c.limiter = redislimiter.New(client, cfg.RedisKeyPrefix, redislimiter.WithLease(cfg.SlotLease), redislimiter.WithLogger(log))
	c.quota = redisquota.New(client, cfg.RedisKeyPrefix)
	c.tasks, c.shared = reg, true
	c.pools = map[string]interface{ PoolStats() *redis.PoolStats }{"main": client, "events": evClient}
	c.checks = append(c.checks, health.Check{Name: "redis", Ping: func(ctx context.Context) error { return redisx.Ping(ctx, client) }})
	c.close = func() {
		reg.Close()
		_ = evClient.Close()
		_ = client.Close()
	}
	return c, nil
}

// shareVectors makes the replicas announce changes of datasets' vectors to each other, so that
// each one's vector index catches up at once instead of at its next search of the dataset
// (docs/replicas.md). In one process it does nothing: the index sees its own changes at the
// next search. The returned function stops it.
func shareVectors(ctx context.Context, c *coordination, st *store.Store, vectors *vectorindex.Memory, log *slog.Logger) (func(), error) {
	if c.ps == nil {
		return func() {}, nil
	}
	sh, err := vectorindex.Share(ctx, vectors, c.ps, log)
	if err != nil {
		return nil, err
	}
	st.SetIndexChangeHook(sh.Changed)
	return func() {
		st.SetIndexChangeHook(nil)
		sh.Close()
	}, nil
}
