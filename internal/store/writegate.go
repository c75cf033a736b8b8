package store

import (
	"context"
	"database/sql"
	"fmt"
)

// writeGate is the one writer path of a SQLite database: this process's write transactions and
// write statements pass it one at a time, in the order they came (a channel's blocked senders
// are served first in, first out), so they never meet on SQLite's file lock. There a waiter
// polls the lock with growing sleeps, jumps the queue or not as its sleeps fall, and after
// busy_timeout gives up with SQLITE_BUSY: under a burst of writers a request could wait for
// seconds and then fail. A write waiting here waits only for the writes ahead of it, and gives up
// only when its own context ends. Other processes on the same file (the CLI beside a running
// server) still meet the lock, where busy_timeout and retryBusy handle them.
//
// Reads do not pass the gate: in WAL mode they run beside the writer. On PostgreSQL the gate is
// nil and lets everything through.
type writeGate chan struct{}

// newWriteGate is the gate of a database of dialect: one writer on SQLite, none on PostgreSQL.
func newWriteGate(dialect string) writeGate {
	if dialect != DialectSQLite {
		return nil
	}
	return make(writeGate, 1)
}

// enter waits for the gate, or for ctx to end.
func (g writeGate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("store: wait to write: %w", context.Cause(ctx))
	}
}

// leave lets the next writer in.
func (g writeGate) leave() {
	if g != nil {
		<-g
	}
}

// write runs fn, one write statement outside any transaction, through the gate; on SQLite a
// busy error means the statement did not apply, so fn is retried (retryBusy).
func (s *Store) write(ctx context.Context, fn func() error) error {
	if err := s.writes.enter(ctx); err != nil {
		return err
	}
	defer s.writes.leave()
	if s.dialect != DialectSQLite {
		return fn()
	}
	return retryBusy(ctx, fn)
}

// writeRow runs one write statement that returns a row (UPDATE … RETURNING) outside any
// transaction, through write, and scans its row with scan.
func (s *Store) writeRow(ctx context.Context, query string, args []any, scan func(*sql.Row) error) error {
	query = s.Rebind(query)
	return s.write(ctx, func() error { return scan(s.conn().QueryRowContext(ctx, query, args...)) })
}
