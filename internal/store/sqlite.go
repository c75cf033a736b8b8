package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLiteFileName is the database file created inside the data directory.
const SQLiteFileName = "parley.db"

// Synchronous modes for SQLite (PARLEY_SQLITE_SYNCHRONOUS).
const (
	// SynchronousNormal, the default: in WAL mode a commit is written to the log before it
	// returns but not fsynced; a killed process loses nothing, a power loss or OS crash can
	// lose the last commits. It makes a chat request about 1.7x cheaper than FULL, where the
	// fsync per write transaction dominated (bench: 2.0 ms → 1.2 ms per blocking chat).
	SynchronousNormal = "normal"
	// SynchronousFull fsyncs the log on every commit: nothing acknowledged is lost even to a
	// power loss.
	SynchronousFull = "full"
)

// sqlitePragmas are applied to every new connection. busy_timeout comes first so that the
// pragmas after it (journal_mode writes the file header) wait for a lock instead of failing
// with SQLITE_BUSY. cache_size is negative, i.e. KiB: 8 MiB per connection, bounded by
// sqliteMaxConns.
func sqlitePragmas(synchronous string) []string {
	return []string{
		"busy_timeout(5000)",
		"journal_mode(WAL)",
		"foreign_keys(ON)",
		"synchronous(" + strings.ToUpper(synchronous) + ")",
		"temp_store(MEMORY)",
		"cache_size(-8000)",
		"wal_autocheckpoint(4000)",
	}
}

// sqliteMaxConns bounds the pool. WAL lets readers run concurrently with the
// single writer; writers queue on SQLite's own lock.
const sqliteMaxConns = 8

func sqliteDSN(path, synchronous string) string {
	q := url.Values{}
	for _, p := range sqlitePragmas(synchronous) {
		q.Add("_pragma", p)
	}
	// Start every transaction with BEGIN IMMEDIATE. A deferred transaction
	// that reads and then writes can fail at once with SQLITE_BUSY (the
	// busy handler is skipped when its snapshot is stale); an immediate one
	// waits in busy_timeout for the write lock instead.
	q.Set("_txlock", "immediate")
	// url.Values.Encode sorts keys; the driver applies busy_timeout first
	// regardless of order.
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

func openSQLite(dataDir, synchronous string) (*Store, error) {
	if dataDir == "" {
		return nil, errors.New("store: no database URL and no data directory")
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	abs, err := filepath.Abs(filepath.Join(dataDir, SQLiteFileName))
	if err != nil {
		return nil, fmt.Errorf("store: resolve database path: %w", err)
	}
	switch synchronous {
	case "":
		synchronous = SynchronousNormal
	case SynchronousNormal, SynchronousFull:
	default:
		return nil, fmt.Errorf("store: sqlite synchronous mode %q: want normal or full", synchronous)
	}
	connector, err := sqlite.NewConnector(sqliteDSN(abs, synchronous))
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	counter := new(atomic.Uint64)
	db := openCounted(connector, counter)
	db.SetMaxOpenConns(sqliteMaxConns)
	db.SetMaxIdleConns(sqliteMaxConns)
	// Connections to a local file are cheap to keep and costly to reopen
	// (every open reapplies the pragmas), so never expire them.
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return &Store{db: db, dialect: DialectSQLite, counter: counter, stmts: newStmtCache(db), history: newHistoryCache(historyCacheBytes),
		writes: newWriteGate(DialectSQLite)}, nil
}

// isBusy reports whether err is SQLite's "database is locked" family
// (SQLITE_BUSY, SQLITE_LOCKED and their extended codes).
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// Busy retry schedule: 10, 20, 40 … ms, capped, for at most busyMaxAttempts
// tries. busy_timeout already waits up to 5 s inside SQLite, so this only
// matters for the busy cases SQLite reports without waiting (recovery, a
// checkpoint in progress, lock upgrades).
const (
	busyFirstBackoff = 10 * time.Millisecond
	busyMaxBackoff   = 500 * time.Millisecond
	busyMaxAttempts  = 8
)

// retryBusy calls fn until it succeeds, fails with a non-busy error, the
// attempts run out, or ctx ends. fn must be safe to repeat after a busy
// error (a statement that failed with SQLITE_BUSY has not applied).
func retryBusy(ctx context.Context, fn func() error) error {
	backoff := busyFirstBackoff
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !isBusy(err) || attempt == busyMaxAttempts {
			return err
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return errors.Join(err, ctx.Err())
		case <-timer.C:
		}
		backoff = min(backoff*2, busyMaxBackoff)
	}
}

func isSQLiteConstraint(err error, codes ...int) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Code() == c {
			return true
		}
	}
	return false
}

// isUniqueViolation reports a UNIQUE or PRIMARY KEY violation on either engine.
func isUniqueViolation(err error) bool {
	return isSQLiteConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) ||
		isPostgresCode(err, pgUniqueViolation)
}

// isForeignKeyViolation reports a FOREIGN KEY violation on either engine.
func isForeignKeyViolation(err error) bool {
	return isSQLiteConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY) ||
		isPostgresCode(err, pgForeignKeyViolation)
}
