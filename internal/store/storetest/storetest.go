// Package storetest gives tests a fresh, empty database on every storage
// engine Parley supports, so that one test body can run against both SQLite
// and PostgreSQL.
//
// PostgreSQL comes from a real server (start one with scripts/services.sh).
// Each test gets its own database with a random name, dropped in t.Cleanup.
// If the server is unreachable, PostgreSQL tests fail when CI is set or
// PARLEY_REQUIRE_POSTGRES=1, and are skipped loudly otherwise.
//
// This package does not import internal/store (the store's own tests use
// it); callers pass [Engine.DatabaseURL] and [Engine.DataDir] to store.Open.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// Environment variables read by this package.
const (
	// EnvPostgresURL overrides [DefaultPostgresURL]. It names a server and a
	// maintenance database the test user can connect to and run CREATE
	// DATABASE from.
	EnvPostgresURL = "PARLEY_TEST_POSTGRES_URL"
	// EnvRequirePostgres set to "1" makes an unreachable server fatal.
	EnvRequirePostgres = "PARLEY_REQUIRE_POSTGRES"
)

// DefaultPostgresURL is the server scripts/services.sh starts.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Engine names, matching store.DialectSQLite and store.DialectPostgres.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// dbNamePrefix marks databases created by tests, so leftovers from killed
// runs are easy to find: SELECT datname FROM pg_database WHERE datname LIKE 'parley_test_%'.
const dbNamePrefix = "parley_test_"

// Engine is a fresh, empty database on one engine: the arguments for
// store.Open(ctx, e.DatabaseURL, e.DataDir).
type Engine struct {
	// Name is SQLite or Postgres; it is also the subtest name.
	Name string
	// DatabaseURL is "" for SQLite and a postgres:// URL for PostgreSQL.
	DatabaseURL string
	// DataDir is a fresh temporary directory, removed after the test.
	DataDir string
}

// ForEachEngine runs fn as a parallel subtest per engine ("sqlite",
// "postgres"), each with its own fresh database. The PostgreSQL subtest is
// skipped or fails as described in the package comment when no server is
// reachable; the SQLite one always runs.
func ForEachEngine(t *testing.T, fn func(t *testing.T, e Engine)) {
	t.Helper()
	for _, name := range []string{SQLite, Postgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, NewEngine(t, name))
		})
	}
}

// NewEngine returns a fresh database on the named engine (SQLite or
// Postgres) for tb, cleaned up when tb ends. It works for benchmarks too.
func NewEngine(tb testing.TB, name string) Engine {
	tb.Helper()
	switch name {
	case SQLite:
		return Engine{Name: SQLite, DataDir: tb.TempDir()}
	case Postgres:
		return Engine{Name: Postgres, DatabaseURL: PostgresURL(tb), DataDir: tb.TempDir()}
	default:
		tb.Fatalf("storetest: unknown engine %q", name)
		return Engine{}
	}
}

// PostgresServerURL returns the URL of the PostgreSQL server used for tests:
// $PARLEY_TEST_POSTGRES_URL, or [DefaultPostgresURL].
func PostgresServerURL() string {
	if u := os.Getenv(EnvPostgresURL); u != "" {
		return u
	}
	return DefaultPostgresURL
}

// PostgresRequired reports whether an unreachable PostgreSQL server must
// fail the tests rather than skip them: CI is non-empty or
// PARLEY_REQUIRE_POSTGRES=1.
func PostgresRequired() bool {
	return os.Getenv("CI") != "" || os.Getenv(EnvRequirePostgres) == "1"
}

// PostgresURL creates a new, empty database with a random name on the test
// server and returns its URL. The database is dropped when tb ends (after
// forcing any remaining connections off), so close stores opened on it in a
// t.Cleanup registered later, or not at all.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	admin, err := adminDB()
	if err != nil {
		if PostgresRequired() {
			tb.Fatalf("storetest: PostgreSQL at %s is required (CI or %s=1) but unreachable: %v", redact(PostgresServerURL()), EnvRequirePostgres, err)
		}
		warnSkipOnce.Do(func() {
			fmt.Fprintf(os.Stderr, "\n*** storetest: PostgreSQL at %s is unreachable (%v): SKIPPING ALL POSTGRESQL TESTS. Run scripts/services.sh. ***\n\n", redact(PostgresServerURL()), err)
		})
		tb.Skipf("*** SKIPPED: PostgreSQL at %s unreachable (%v); run scripts/services.sh, or set CI=1 / %s=1 to make this fatal ***", redact(PostgresServerURL()), err, EnvRequirePostgres)
	}

	name := dbNamePrefix + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+quoteIdent(name)); err != nil {
		tb.Fatalf("storetest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// WITH (FORCE) (PostgreSQL 13+) terminates sessions still
		// connected, e.g. from a store the test forgot to close.
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)"); err != nil {
			tb.Errorf("storetest: drop database %s: %v", name, err)
		}
	})

	u, err := url.Parse(PostgresServerURL())
	if err != nil {
		tb.Fatalf("storetest: parse %s: %v", EnvPostgresURL, err)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

var (
	adminOnce    sync.Once
	adminPool    *sql.DB
	adminErr     error
	warnSkipOnce sync.Once
)

// adminDB returns a process-wide pool on the server's maintenance database,
// probing reachability once so an absent server costs one timeout, not one
// per test.
func adminDB() (*sql.DB, error) {
	adminOnce.Do(func() {
		db, err := sql.Open("pgx", PostgresServerURL())
		if err != nil {
			adminErr = err
			return
		}
		db.SetMaxOpenConns(4)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			_ = db.Close()
			adminErr = err
			return
		}
		adminPool = db
	})
	return adminPool, adminErr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

func quoteIdent(s string) string {
	// Names come from dbNamePrefix + hex, so they never contain a quote.
	return `"` + s + `"`
}

// redact hides a password in a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
