// Package limiter bounds the number of concurrent requests per key, e.g.
// active generation requests per app (Dify's APP_MAX_ACTIVE_REQUESTS).
//
// Contract, shared by every implementation:
//
//   - Acquire either admits the request at once or fails at once with an
//     error wrapping ErrLimitExceeded (the API answers 429
//     too_many_requests); it never queues.
//   - limit <= 0 means unlimited: Acquire always succeeds. Such requests
//     are still counted, so lowering a limit later sees the true load.
//   - The returned release function gives the slot back. It is idempotent
//     and must be called exactly when the request ends, streaming included:
//     the slot is held for the whole stream, not just until the first byte
//     (Dify did not enforce its limit for streaming, langgenius/dify#35895).
//   - The limit is passed per call rather than configured per key, so a
//     configuration reload applies to the next request.
//
// [Local] is the in-process implementation. redislimiter implements the same
// interface for multi-replica deployments: a sorted set of leases per key
// with expiring scores, so that a crashed replica's slots time out.
package limiter

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrLimitExceeded means the key already has limit active requests.
var ErrLimitExceeded = errors.New("too many concurrent requests")

// Limiter admits or rejects concurrent requests per key.
type Limiter interface {
	// Acquire takes a slot for key if fewer than limit are in use (limit
	// <= 0: unlimited). It returns the function that gives the slot back.
	Acquire(ctx context.Context, key string, limit int) (release func(), err error)
}

// Local is the in-process Limiter. The zero value is not usable; call
// NewLocal.
type Local struct {
	mu     sync.Mutex
	active map[string]int
}

var _ Limiter = (*Local)(nil)

// NewLocal returns an in-process limiter with no active requests.
func NewLocal() *Local {
	return &Local{active: make(map[string]int)}
}

// Acquire implements Limiter. Besides ErrLimitExceeded it fails only when
// ctx is already done.
func (l *Local) Acquire(ctx context.Context, key string, limit int) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if limit > 0 && l.active[key] >= limit {
		return nil, fmt.Errorf("%w: %q is at its limit of %d", ErrLimitExceeded, key, limit)
	}
	l.active[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.active[key]--; l.active[key] <= 0 {
				delete(l.active, key)
			}
		})
	}, nil
}

// Active reports the number of requests holding a slot for key (for tests
// and metrics).
func (l *Local) Active(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active[key]
}
