package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestIsUnavailable: the driver's failures to reach the server count; the same network errors
// from elsewhere (a remote fetch, a provider) and ordinary database errors do not.
func TestIsUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for name, err := range map[string]error{
		"connect":         &pgconn.ConnectError{},
		"conn closed":     fmt.Errorf("store: x: %w", pgconn.ErrConnClosed),
		"shutdown":        &pgconn.PgError{Code: "57P01"},
		"connection code": &pgconn.PgError{Code: "08006"},
		"lost connection": fmt.Errorf("store: api key by hash: %w", &connError{err: io.ErrUnexpectedEOF}),
	} {
		if !IsUnavailable(err) {
			t.Errorf("%s: not unavailable", name)
		}
	}
	for name, err := range map[string]error{
		"remote fetch":     &url.Error{Op: "Get", URL: "http://x", Err: refused},
		"bare net error":   refused,
		"bare EOF":         io.ErrUnexpectedEOF,
		"unique violation": &pgconn.PgError{Code: "23505"},
		"not found":        ErrNotFound,
		"plain":            errors.New("boom"),
	} {
		if IsUnavailable(err) {
			t.Errorf("%s: taken as the database unavailable", name)
		}
	}
}

// TestUnreachablePostgres: a server nobody listens on fails Open and Ping quickly with an
// error IsUnavailable recognises.
func TestUnreachablePostgres(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, err = Open(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable", t.TempDir())
	if !IsUnavailable(err) {
		t.Fatalf("Open of a closed port = %v, not unavailable", err)
	}
	// And a live server's ordinary error is not.
	e := storetest.NewEngine(t, storetest.Postgres)
	st, err := Open(context.Background(), e.DatabaseURL, e.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = st.DB().ExecContext(context.Background(), "SELECT * FROM no_such_table")
	if err == nil || IsUnavailable(err) {
		t.Fatalf("a missing table: %v", err)
	}
	// A query its caller gave up on (a client gone) is not the database's failure.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = st.DB().ExecContext(ctx, "SELECT pg_sleep(5)")
	if err == nil || IsUnavailable(err) {
		t.Fatalf("a cancelled query: %v (unavailable %v)", err, IsUnavailable(err))
	}
	if err := st.Ping(context.Background()); err != nil {
		t.Fatalf("ping after a cancelled query: %v", err)
	}
}
