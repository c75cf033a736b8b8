package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"reflect"
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
//
// Only errors of the PostgreSQL driver count: a network error from anywhere else (a model
// provider, a remote file) is none of the database's business.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	var me *connError
	switch {
	case errors.As(err, &ce), errors.Is(err, driver.ErrBadConn), errors.Is(err, pgconn.ErrConnClosed):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The caller gave up (a client gone, a deadline of its own): the driver cut the
		// query short on purpose, which says nothing about the server.
		return false
	case errors.As(err, &me):
		// The driver's deadlines cut reads short only to cancel a query.
		return !me.Timeout()
	case errors.As(err, &pe):
		// Class 08: connection exception; 57P01-57P03: the server is shutting down, crashed,
		// or not accepting connections yet.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	case !fromDriver(err):
		return false
	}
	var ne net.Error
	return pgconn.Timeout(err) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// markedConn is a connection to PostgreSQL whose read and write failures are *connError, so
// that they are told from the same failures elsewhere whatever the driver wraps them in.
type markedConn struct{ net.Conn }

func (c *markedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	return n, markConnError(err)
}

func (c *markedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	return n, markConnError(err)
}

func markConnError(err error) error {
	if err == nil {
		return nil
	}
	return &connError{err: err}
}

// connError is a read or write failure of a connection to PostgreSQL. It is a net.Error whose
// Timeout is the failure's own, so the driver still tells its deadlines (a cancelled query) from
// a lost server.
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }
func (e *connError) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}
func (e *connError) Temporary() bool { return false }

// pgconnPkg is the package path of the PostgreSQL driver's connection layer.
var pgconnPkg = reflect.TypeFor[pgconn.PgError]().PkgPath()

// fromDriver reports whether an error of the PostgreSQL driver's connection layer is on err's
// chain (its failures to read or write are of unexported types that wrap the network error).
func fromDriver(err error) bool {
	for err != nil {
		t := reflect.TypeOf(err)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.PkgPath() == pgconnPkg {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if fromDriver(e) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}

// Ping checks, within a bounded time, that the database answers (the readiness check).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	defer cancel()
	return s.db.PingContext(ctx)
}
