package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// writeGate is the one writer path of a SQLite database, and its group commit.
//
// This process's write transactions and write statements pass it one at a time, in the order
// they came, so they never meet on SQLite's file lock. There a waiter polls the lock with growing
// sleeps, jumps the queue or not as its sleeps fall, and after busy_timeout gives up with
// SQLITE_BUSY: under a burst of writers a request could wait for seconds and then fail. A write
// waiting here waits only for the writes ahead of it, and gives up only when its own context
// ends. Other processes on the same file (the CLI beside a running server) still meet the lock,
// where busy_timeout and retryBusy handle them.
//
// The writer that finds the path free leads: it runs its own write as before, in its own
// goroutine and context. Writes that arrive meanwhile queue, and when the leader is done the
// first of them leads the next batch: every write queued by then, each in a savepoint of one
// transaction and one commit. A commit writes the changed pages to the log, and many writes share
// pages (the last page of a table, of each index), so under load a batch costs little more than
// one write; an idle server runs every write alone, exactly as without the gate. Each write of a
// batch still succeeds or fails alone: a failed one is rolled back to its savepoint and the others
// go on. Every caller returns only after the commit that holds its write, so a write that
// returned is as durable as before.
//
// Reads do not pass the gate: in WAL mode they run beside the writer. On PostgreSQL, where
// writers do not exclude each other, the gate is nil and every write runs alone.
type writeGate struct {
	mu      sync.Mutex
	leading bool
	queue   []*pendingWrite
	batch   []*pendingWrite // the leader's, reused
	// lastBatch is the number of writes of the last batch, for the tests.
	lastBatch int
}

// maxBatch bounds a batch, so that a long queue is committed in steps and no write waits for
// an unbounded transaction.
const maxBatch = 64

// pendingWrite is one write through the gate: a transaction's body (tx), or a single statement
// (query and args, with scan for the row it returns), which needs no transaction of its own
// when it runs alone. A statement is data rather than a function, so that passing it allocates
// nothing when the path is free.
type pendingWrite struct {
	ctx   context.Context
	tx    func(tx *sql.Tx) error
	query string
	args  []any
	scan  func(*sql.Row) error
	res   sql.Result

	// wake gets one value: the write ran (err or panicked is set), or it leads the next batch.
	// panicked is what its body panicked with (never nil: panic(nil) recovers as a
	// *runtime.PanicNilError).
	wake     chan struct{}
	lead     bool
	err      error
	panicked any
}

// newWriteGate is the gate of a database of dialect: one writer path on SQLite, none on
// PostgreSQL.
func newWriteGate(dialect string) *writeGate {
	if dialect != DialectSQLite {
		return nil
	}
	return &writeGate{}
}

// exec runs one rebound write statement outside any transaction. On SQLite it passes the gate:
// alone it runs on its own (a busy error there means the statement did not apply, so it is
// retried with retryBusy); in a batch it runs in the batch's transaction.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	w := pendingWrite{ctx: ctx, query: s.Rebind(query), args: args}
	if s.writes == nil {
		err := w.statement(s.conn())
		return w.res, mapError(err)
	}
	res, err := s.pass(w)
	return res, mapError(err)
}

// writeRow runs one write statement that returns a row (UPDATE … RETURNING) outside any
// transaction, as exec does, and scans its row with scan.
func (s *Store) writeRow(ctx context.Context, query string, args []any, scan func(*sql.Row) error) error {
	w := pendingWrite{ctx: ctx, query: s.Rebind(query), args: args, scan: scan}
	if s.writes == nil {
		return w.statement(s.conn())
	}
	_, err := s.pass(w)
	return err
}

// statement runs w's statement through q.
func (w *pendingWrite) statement(q cached) error {
	if w.scan != nil {
		return w.scan(q.QueryRowContext(w.ctx, w.query, w.args...))
	}
	var err error
	w.res, err = q.ExecContext(w.ctx, w.query, w.args...)
	return err
}

// pass runs a write through the gate and returns its outcome in the caller's goroutine (a
// statement's result, its error, or its body's panic raised again).
func (s *Store) pass(pw pendingWrite) (sql.Result, error) {
	g := s.writes
	g.mu.Lock()
	if !g.leading {
		// The path is free: the write runs alone, as if there were no gate.
		g.leading, g.lastBatch = true, 1
		g.mu.Unlock()
		tx, committed := s.runAlone(&pw)
		s.handOff(nil, tx, committed)
		return pw.outcome()
	}
	w := new(pendingWrite)
	*w = pw
	w.wake = make(chan struct{}, 1)
	g.queue = append(g.queue, w)
	g.mu.Unlock()
	select {
	case <-w.wake:
	case <-w.ctx.Done():
		g.mu.Lock()
		if i := slices.Index(g.queue, w); i >= 0 {
			g.queue = slices.Delete(g.queue, i, i+1)
			g.mu.Unlock()
			return nil, fmt.Errorf("store: wait to write: %w", context.Cause(w.ctx))
		}
		g.mu.Unlock()
		<-w.wake // a batch has taken it: its outcome comes
	}
	if !w.lead {
		return w.outcome()
	}
	// w leads the next batch: itself and every write queued by now. Only the leader touches
	// g.batch, and it is done with it before it hands the path on.
	g.mu.Lock()
	n := min(len(g.queue), maxBatch-1)
	batch := append(append(g.batch[:0], w), g.queue[:n]...)
	g.queue = g.queue[n:]
	g.batch, g.lastBatch = batch, len(batch)
	g.mu.Unlock()
	var (
		tx        *sql.Tx
		committed bool
	)
	if len(batch) == 1 {
		tx, committed = s.runAlone(w)
	} else {
		tx, committed = s.runBatch(batch)
	}
	s.handOff(batch[1:], tx, committed)
	return w.outcome()
}

// handOff ends a leader's turn: it wakes the writes it ran for (their outcomes are set), lets
// the first queued write lead, and then tells the hooks what tx changed. The next writer leads
// before the hooks run: they may write.
func (s *Store) handOff(ran []*pendingWrite, tx *sql.Tx, committed bool) {
	for _, w := range ran {
		w.wake <- struct{}{}
	}
	clear(ran)
	g := s.writes
	g.mu.Lock()
	if len(g.queue) > 0 {
		next := g.queue[0]
		g.queue = g.queue[1:]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	if tx != nil {
		s.endTx(tx, committed)
	}
}

// outcome is what the caller of w gets: its result and error, or its body's panic raised again.
func (w *pendingWrite) outcome() (sql.Result, error) {
	if w.panicked != nil {
		panic(w.panicked)
	}
	return w.res, w.err
}

// runAlone runs one write as if there were no gate: a statement on its own, retried while another
// process holds the lock; a transaction begun in the write's context, returned with whether it
// committed for the hooks of what it changed.
func (s *Store) runAlone(w *pendingWrite) (tx *sql.Tx, committed bool) {
	defer w.recover()
	if w.tx == nil {
		w.err = retryBusy(w.ctx, func() error { return w.statement(s.conn()) })
		return nil, false
	}
	tx, committed, w.err = s.runTx(w.ctx, w.tx)
	return tx, committed
}

// recover, deferred around a write's body, keeps its panic for the caller's goroutine.
func (w *pendingWrite) recover() {
	w.panicked = recover()
}

// runBatch runs the writes of batch in one transaction, each in a savepoint, and commits it. It
// returns the transaction and whether it committed, for the hooks of what it changed. A write
// whose context ended before its turn does not run.
func (s *Store) runBatch(batch []*pendingWrite) (*sql.Tx, bool) {
	// The transaction is everyone's: no one write's context may end it. It and its savepoints are
	// left out of the statement count, which must not depend on how writes meet.
	ctx := uncounted(context.WithoutCancel(batch[0].ctx))
	tx, err := s.begin(ctx)
	if err != nil {
		for _, w := range batch {
			w.err = fmt.Errorf("store: begin transaction: %w", err)
		}
		return nil, false
	}
	ran := 0
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.err = fmt.Errorf("store: wait to write: %w", context.Cause(w.ctx))
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT batch_write"); err != nil {
			s.failBatch(tx, batch, fmt.Errorf("store: savepoint: %w", err))
			return tx, false
		}
		s.runInBatch(w, tx)
		if w.err == nil && w.panicked == nil {
			ran++
		} else if _, err := tx.ExecContext(ctx, "ROLLBACK TO batch_write"); err != nil {
			// The transaction is in an unknown state: nothing of it may be committed.
			s.failBatch(tx, batch, fmt.Errorf("store: roll back to savepoint: %w", err))
			return tx, false
		}
		if _, err := tx.ExecContext(ctx, "RELEASE batch_write"); err != nil {
			s.failBatch(tx, batch, fmt.Errorf("store: release savepoint: %w", err))
			return tx, false
		}
	}
	if ran == 0 {
		_ = tx.Rollback()
		return tx, false
	}
	if err := tx.Commit(); err != nil {
		s.failBatch(tx, batch, fmt.Errorf("store: commit: %w", mapError(err)))
		return tx, false
	}
	return tx, true
}

// runInBatch runs w's body in the batch's transaction.
func (s *Store) runInBatch(w *pendingWrite, tx *sql.Tx) {
	defer w.recover()
	if w.tx == nil {
		w.err = w.statement(s.inTx(tx))
		return
	}
	w.err = w.tx(tx)
}

// failBatch rolls back tx and gives err to every write of batch that had succeeded.
func (s *Store) failBatch(tx *sql.Tx, batch []*pendingWrite, err error) {
	if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) {
		err = errors.Join(err, fmt.Errorf("store: rollback: %w", rbErr))
	}
	for _, w := range batch {
		if w.err == nil && w.panicked == nil {
			w.err = err
		}
	}
}
