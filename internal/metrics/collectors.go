package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// RedisPools collects the connection pools' counters of Redis clients at each scrape, by pool
// name.
func RedisPools(pools map[string]interface{ PoolStats() *redis.PoolStats }) prometheus.Collector {
	return &redisPools{pools: pools}
}

var (
	redisConns = prometheus.NewDesc("parley_redis_pool_connections",
		"Connections of a Redis client's pool by state (idle, in_use).", []string{"pool", "state"}, nil)
	redisHits = prometheus.NewDesc("parley_redis_pool_hits_total",
		"Times a Redis client found an idle connection in its pool.", []string{"pool"}, nil)
	redisMisses = prometheus.NewDesc("parley_redis_pool_misses_total",
		"Times a Redis client found no idle connection in its pool and dialled one.", []string{"pool"}, nil)
	redisTimeouts = prometheus.NewDesc("parley_redis_pool_timeouts_total",
		"Times a Redis client waited for a connection in vain (the pool was exhausted).", []string{"pool"}, nil)
	redisStale = prometheus.NewDesc("parley_redis_pool_stale_connections_total",
		"Connections a Redis client closed as stale.", []string{"pool"}, nil)
)

type redisPools struct {
	pools map[string]interface{ PoolStats() *redis.PoolStats }
}

func (c *redisPools) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{redisConns, redisHits, redisMisses, redisTimeouts, redisStale} {
		ch <- d
	}
}

func (c *redisPools) Collect(ch chan<- prometheus.Metric) {
	for name, p := range c.pools {
		s := p.PoolStats()
		ch <- prometheus.MustNewConstMetric(redisConns, prometheus.GaugeValue, float64(s.IdleConns), name, "idle")
		ch <- prometheus.MustNewConstMetric(redisConns, prometheus.GaugeValue, float64(s.TotalConns)-float64(s.IdleConns), name, "in_use")
		ch <- prometheus.MustNewConstMetric(redisHits, prometheus.CounterValue, float64(s.Hits), name)
		ch <- prometheus.MustNewConstMetric(redisMisses, prometheus.CounterValue, float64(s.Misses), name)
		ch <- prometheus.MustNewConstMetric(redisTimeouts, prometheus.CounterValue, float64(s.Timeouts), name)
		ch <- prometheus.MustNewConstMetric(redisStale, prometheus.CounterValue, float64(s.StaleConns), name)
	}
}

// QueueCount is the jobs of one kind in one state (queued, running, failed) and, for queued
// ones, when the oldest of those already due became due (zero: none is due).
type QueueCount struct {
	Kind, State string
	Jobs        int
	OldestDue   time.Time
}

// JobQueue collects the durable job queue's depth by kind and state, and the lag of its
// oldest due job, at each scrape. counts reads them from the database (the queue is shared by
// every replica, so each replica reports the same figures): a failure leaves them out of that
// scrape.
func JobQueue(counts func(ctx context.Context) ([]QueueCount, error)) prometheus.Collector {
	return &jobQueue{counts: counts}
}

var (
	jobsDesc = prometheus.NewDesc("parley_jobs",
		"Background jobs in the queue by kind and state (queued, running, failed), shared by the replicas.", []string{"kind", "state"}, nil)
	jobsLagDesc = prometheus.NewDesc("parley_jobs_oldest_due_seconds",
		"How long the oldest due job of a kind has been waiting for a worker (0: none waits).", []string{"kind"}, nil)
)

type jobQueue struct {
	counts func(ctx context.Context) ([]QueueCount, error)
}

func (c *jobQueue) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- jobsLagDesc
}

func (c *jobQueue) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobsDesc, err)
		return
	}
	now := time.Now()
	lag := map[string]float64{}
	for _, q := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(q.Jobs), q.Kind, q.State)
		if _, ok := lag[q.Kind]; !ok {
			lag[q.Kind] = 0
		}
		if !q.OldestDue.IsZero() {
			lag[q.Kind] = max(lag[q.Kind], now.Sub(q.OldestDue).Seconds())
		}
	}
	for kind, s := range lag {
		ch <- prometheus.MustNewConstMetric(jobsLagDesc, prometheus.GaugeValue, s, kind)
	}
}
