package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgConnectTimeout bounds the opening of a PostgreSQL connection when the URL sets no
// connect_timeout: a database host that stops answering fails requests in seconds instead of
// hanging them for the operating system's TCP timeout.
const pgConnectTimeout = 5 * time.Second

// IsUnavailable reports whether err says the database could not be reached: the connection
// was refused, dropped or timed out, or the server is starting or shutting down. The API
// answers such failures 503, and the replica recovers by itself when the database is back
// (the pool opens new connections). SQLite, a file, has no such failure.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &pe):
		// Class 08: connection exception; 57P01-57P03: the server is shutting down, crashed,
		// or not accepting connections yet.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return strings.Contains(err.Error(), "conn closed")
}

// Ping checks, within a bounded time, that the database answers (the readiness check).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	defer cancel()
	return s.db.PingContext(ctx)
}
