package redislog_test

import (
	"context"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/eventlog/eventlogtest"
	"github.com/parleyhq/parley/internal/eventlog/redislog"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
)

// TestContract runs the eventlog contract with the writer and the reader on two clients of one
// Redis, as two replicas.
func TestContract(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T, lim eventlog.Limits) (eventlog.Log, eventlog.Log) {
		c1, prefix := redistest.Client(t)
		c2, err := redisx.Open(context.Background(), redistest.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c2.Close() })
		return redislog.New(c1, prefix, lim, nil), redislog.New(c2, prefix, lim, nil)
	})
}

// TestKeysExpireAfterTheSegmentEnds: a run's keys get the keep time when its segment ends.
func TestKeysExpireAfterTheSegmentEnds(t *testing.T) {
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	l := redislog.New(c, prefix, eventlog.Limits{Keep: 30 * time.Second}, nil)
	w, err := l.Begin(ctx, "r1", "")
	if err != nil {
		t.Fatal(err)
	}
	w.Append(eventlog.Entry{Event: "message", Data: []byte(`{}`)}, false)
	for _, k := range []string{prefix + "events:r1", prefix + "events:r1:seg"} {
		if ttl := c.TTL(ctx, k).Val(); ttl <= 30*time.Second {
			t.Fatalf("TTL of %s while running = %v; want the running TTL", k, ttl)
		}
	}
	w.End(true)
	for _, k := range []string{prefix + "events:r1", prefix + "events:r1:seg"} {
		if ttl := c.TTL(ctx, k).Val(); ttl <= 0 || ttl > 30*time.Second {
			t.Fatalf("TTL of %s after the end = %v; want at most the keep time", k, ttl)
		}
	}
}
