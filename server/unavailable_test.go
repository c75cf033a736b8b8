package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parleyhq/parley/internal/health"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/run"
)

const (
	msgDatabaseDown = "The service is temporarily unavailable: its database cannot be reached. Please try again later."
	msgRedisDown    = "The service is temporarily unavailable: the Redis server its replicas share cannot be reached. Please try again later."
)

// unavailableOutcomes are the errors of a dependency that cannot be reached, and of a server
// shutting down: 503 service_unavailable, naming which one or the shutdown.
func unavailableOutcomes() map[string]outcome {
	return map[string]outcome{
		"run.ErrShuttingDown": {run.ErrShuttingDown,
			wire{status: 503, code: "service_unavailable", msg: "The server is shutting down; the answer was not completed."}},
		"health.UnavailableError": {&health.UnavailableError{Dependency: "database", Err: errors.New("x")},
			wire{status: 503, code: "service_unavailable", msg: msgDatabaseDown}},
		"redisx.ErrUnavailable": {redisx.Classify(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
			wire{status: 503, code: "service_unavailable", msg: msgRedisDown}},
	}
}

// TestUnavailableIs503: a database or Redis that cannot be reached answers 503 with the
// contract's Error body naming which one — as returned and wrapped, never a 500 — while
// ordinary failures of the database stay 500. A run cut by shutdown, whose stream's error
// event goes through the same mapping, answers 503 naming the shutdown.
func TestUnavailableIs503(t *testing.T) {
	for name, o := range unavailableOutcomes() {
		for _, err := range []error{o.err, fmt.Errorf("handler: %w", o.err)} {
			got := mapError(err)
			if got.Status != o.want.status || got.Code != o.want.code || got.Message != o.want.msg || !errors.Is(got, err) {
				t.Errorf("%s: %d %s %q (cause kept: %v)", name, got.Status, got.Code, got.Message, errors.Is(got, err))
			}
		}
	}
	cases := map[string]struct {
		err  error
		want string
	}{
		"redis refused":       {redisx.Classify(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), msgRedisDown},
		"redis timeout":       {redisx.Classify(context.DeadlineExceeded), msgRedisDown},
		"postgres connect":    {&pgconn.ConnectError{}, msgDatabaseDown},
		"postgres dropped":    {fmt.Errorf("store: message: %w", pgconn.ErrConnClosed), msgDatabaseDown},
		"postgres shutdown":   {&pgconn.PgError{Code: "57P01"}, msgDatabaseDown},
		"postgres conn error": {&pgconn.PgError{Code: "08006"}, msgDatabaseDown},
	}
	for name, c := range cases {
		for _, err := range []error{c.err, fmt.Errorf("handler: %w", c.err)} {
			got := mapError(err)
			if got.Status != http.StatusServiceUnavailable || got.Code != "service_unavailable" || got.Message != c.want {
				t.Errorf("%s: %d %s %q", name, got.Status, got.Code, got.Message)
			}
		}
	}
	for name, err := range map[string]error{
		"unique violation": &pgconn.PgError{Code: "23505"},
		"syntax":           &pgconn.PgError{Code: "42601"},
		"plain":            errors.New("boom"),
		"remote refused":   &url.Error{Op: "Get", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
		"bare EOF":         io.ErrUnexpectedEOF,
		"redis script":     redisx.Classify(errors.New("ERR Error running script")),
	} {
		if got := mapError(err); got.Status != http.StatusInternalServerError {
			t.Errorf("%s: %d %s, want 500", name, got.Status, got.Code)
		}
	}
}
