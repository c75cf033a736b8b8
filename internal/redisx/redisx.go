// Package redisx opens the Redis client Parley's multi-replica adapters share (the global
// concurrency cap, cross-replica stop, pub/sub), with bounded timeouts so that a Redis that
// is down or unreachable fails a request quickly instead of hanging it.
//
// Only wiring (cmd/parley) and the Redis adapters import this package; domain packages see
// the interfaces the adapters implement.
package redisx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/health"
)

// Timeouts and pool of the client. A command waits at most PoolTimeout for a connection and
// then ReadTimeout for its answer, so a Redis that stops answering costs a request about
// three seconds, never a hang.
const (
	DialTimeout  = 2 * time.Second
	ReadTimeout  = time.Second
	WriteTimeout = time.Second
	PoolTimeout  = 2 * time.Second
	// PoolSize bounds the connections of one replica (go-redis's default is 10 per CPU).
	PoolSize = 32
	// MaxRetries is one retry of a command that failed on a broken connection, so a Redis
	// restart costs the first command after it nothing.
	MaxRetries = 1
)

// DefaultPrefix starts every key and channel name Parley uses in Redis.
const DefaultPrefix = "parley:"

// ErrUnavailable is in the chain of the failures of commands that could not reach Redis
// (refused, reset, timed out), inside a *health.UnavailableError naming "redis": the API
// answers them 503, and /ready reports Redis down.
var ErrUnavailable = errors.New("redis unreachable")

// CheckURL accepts redis:// and rediss:// (TLS) URLs as go-redis parses them. The error
// never repeats the URL, which may hold a password.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "redis", "rediss":
	case "":
		return errors.New("missing scheme: want redis:// or rediss://")
	default:
		return fmt.Errorf("unsupported scheme %q: want redis:// or rediss://", u.Scheme)
	}
	if _, err := redis.ParseURL(raw); err != nil {
		return errors.New("not a URL go-redis accepts (redis://[user:password@]host:port[/db])")
	}
	return nil
}

// Open returns a client for the Redis at rawURL with Parley's timeouts and pool (options in
// the URL, such as ?dial_timeout=5s, override them) and checks that it answers.
func Open(ctx context.Context, rawURL string) (*redis.Client, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, errors.New("redis: invalid URL")
	}
	q := mustQuery(rawURL)
	if !q.Has("dial_timeout") {
		opt.DialTimeout = DialTimeout
	}
	if !q.Has("read_timeout") {
		opt.ReadTimeout = ReadTimeout
	}
	if !q.Has("write_timeout") {
		opt.WriteTimeout = WriteTimeout
	}
	if !q.Has("pool_timeout") {
		opt.PoolTimeout = PoolTimeout
	}
	if !q.Has("pool_size") {
		opt.PoolSize = PoolSize
	}
	if !q.Has("max_retries") {
		opt.MaxRetries = MaxRetries
	}
	c := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, DialTimeout+ReadTimeout)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis: connect to %s: %w", opt.Addr, Classify(err))
	}
	return c, nil
}

func mustQuery(raw string) url.Values {
	u, err := url.Parse(raw)
	if err != nil {
		return url.Values{}
	}
	return u.Query()
}

// Ping checks that Redis answers within a bounded time, for readiness checks.
func Ping(ctx context.Context, c redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout+ReadTimeout)
	defer cancel()
	return Classify(c.Ping(ctx).Err())
}

// Classify wraps err with ErrUnavailable when it says Redis could not be reached or did not
// answer in time (a network error, a dropped connection, a closed or exhausted pool, a
// server still loading its data), and returns other errors (nil, redis.Nil, a script error)
// unchanged.
func Classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, context.DeadlineExceeded),
		strings.HasPrefix(err.Error(), "LOADING"):
		return &health.UnavailableError{Dependency: "redis", Err: fmt.Errorf("%w: %w", ErrUnavailable, err)}
	}
	return err
}
