package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestWriteBurst: many goroutines write at once, in transactions, single statements and claims
// of jobs, as a burst of requests and job workers does, and every write succeeds on both engines
// (a deadlock in the writer path would hang it). It guards the path; the proof that the path
// removes the stall is conformance's TestSQLiteWriteBurst, where the server's own work (answers,
// naming jobs, progress) meets a burst from many connections.
func TestWriteBurst(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		const writers, each = 48, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*each*2)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("burst-%d-%d", w, i)
					if err := s.InsertJob(ctx, JobRow{ID: id, Kind: "burst", MaxAttempts: 1, RunAfter: time.Now()}); err != nil {
						errs <- err
					}
					err := s.WithTx(ctx, func(tx *sql.Tx) error {
						_, err := tx.ExecContext(ctx, s.Rebind(`UPDATE jobs SET last_error = ? WHERE id = ?`), "touched", id)
						return err
					})
					if err != nil {
						errs <- err
					}
					if _, err := s.ClaimJob(ctx, []string{"burst"}, fmt.Sprintf("owner-%d", w), time.Now(), time.Minute); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// openGateTest opens a SQLite store with a table of its own for the writer path's tests.
func openGateTest(t *testing.T) *Store {
	t.Helper()
	s := openEngine(t, storetest.NewEngine(t, storetest.SQLite), false)
	if _, err := s.db.ExecContext(t.Context(), "CREATE TABLE gate_rows (id TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return s
}

// holdGate starts a write that holds the writer path until the returned function is called.
func holdGate(t *testing.T, s *Store) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.WithTx(context.Background(), func(*sql.Tx) error {
			close(held)
			<-done
			return nil
		})
	}()
	<-held
	return func() { close(done) }
}

// waitQueued waits until n writes wait behind the one holding the path.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.writes.mu.Lock()
		queued := len(s.writes.queue)
		s.writes.mu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", queued, n)
		}
	}
}

// TestWriteGateWaitsForItsContext: a write waiting for the writer path gives up when its
// context ends, not before, leaves the queue, and does not take the path from the writer inside.
func TestWriteGateWaitsForItsContext(t *testing.T) {
	s := openGateTest(t)
	release := holdGate(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.exec(ctx, "INSERT INTO gate_rows (id) VALUES ('late')"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write while held: %v", err)
	}
	waitQueued(t, s, 0)
	release()
	if _, err := s.exec(t.Context(), "INSERT INTO gate_rows (id) VALUES ('on time')"); err != nil {
		t.Fatalf("write once released: %v", err)
	}
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM gate_rows").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows: %d, %v; want only the write made once released", n, err)
	}
	if newWriteGate(DialectPostgres) != nil {
		t.Fatal("PostgreSQL has a write gate")
	}
}

// TestWriteGateBatch: writes that queue behind a long one run as one batch, and each still
// succeeds or fails alone: a failed transaction, a panicking one and a statement that breaks a
// constraint change nothing and get their own outcome (the panic in their own goroutine), while
// the others are committed.
func TestWriteGateBatch(t *testing.T) {
	s := openGateTest(t)
	ctx := t.Context()
	if _, err := s.exec(ctx, "INSERT INTO gate_rows (id) VALUES ('taken')"); err != nil {
		t.Fatal(err)
	}
	release := holdGate(t, s)
	errFailed := errors.New("failed on purpose")
	insert := func(tx *sql.Tx, id string) {
		if _, err := tx.ExecContext(ctx, "INSERT INTO gate_rows (id) VALUES (?)", id); err != nil {
			t.Errorf("insert %s: %v", id, err)
		}
	}
	writes := map[string]func() error{
		"stmt-1": func() error { _, err := s.exec(ctx, "INSERT INTO gate_rows (id) VALUES ('stmt-1')"); return err },
		"tx-2": func() error {
			return s.WithTx(ctx, func(tx *sql.Tx) error { insert(tx, "tx-2a"); insert(tx, "tx-2b"); return nil })
		},
		"failed": func() error {
			return s.WithTx(ctx, func(tx *sql.Tx) error { insert(tx, "failed"); return errFailed })
		},
		"panicked": func() (err error) {
			defer func() {
				if p := recover(); p != "boom" {
					err = fmt.Errorf("recovered %v, want the write's own panic", p)
				} else {
					err = errFailed
				}
			}()
			return s.WithTx(ctx, func(tx *sql.Tx) error { insert(tx, "panicked"); panic("boom") })
		},
		"conflict": func() error { _, err := s.exec(ctx, "INSERT INTO gate_rows (id) VALUES ('taken')"); return err },
		"stmt-3":   func() error { _, err := s.exec(ctx, "INSERT INTO gate_rows (id) VALUES ('stmt-3')"); return err },
	}
	results := make(map[string]chan error)
	for name, w := range writes {
		res := make(chan error, 1)
		results[name] = res
		go func() { res <- w() }()
	}
	waitQueued(t, s, len(writes))
	release()
	for name, want := range map[string]error{"stmt-1": nil, "tx-2": nil, "stmt-3": nil, "failed": errFailed, "panicked": errFailed, "conflict": ErrConflict} {
		if err := <-results[name]; !errors.Is(err, want) && err != want {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	s.writes.mu.Lock()
	batch := s.writes.lastBatch
	s.writes.mu.Unlock()
	if batch != len(writes) {
		t.Errorf("last batch had %d writes, want all %d queued", batch, len(writes))
	}
	var got []string
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM gate_rows ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if want := []string{"stmt-1", "stmt-3", "taken", "tx-2a", "tx-2b"}; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// BenchmarkChatWrites is the store's part of blocking chats from 16 clients at once: each starts
// a conversation with its first message and finishes the message with the answer, the two
// writes a new conversation's request makes.
func BenchmarkChatWrites(b *testing.B) {
	for _, engine := range []string{storetest.SQLite, storetest.Postgres} {
		b.Run(engine, func(b *testing.B) {
			ctx := b.Context()
			s, app, u := benchChatApp(b, engine)
			b.SetParallelism(8) // 16 writers on 2 CPUs
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, m, err := s.StartConversation(ctx, Conversation{AppID: app, EndUserID: u.ID, Name: "New conversation"},
						Message{AppID: app, EndUserID: u.ID, Query: "What is the capital of France?", Status: MessageStatusRunning})
					if err != nil {
						b.Error(err)
						return
					}
					if err := s.FinishMessage(ctx, m.ID, MessageResult{Answer: "Paris is the capital of France.", Status: MessageStatusNormal,
						MessageTokens: 12, AnswerTokens: 8, TotalTokens: 20}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestWriteGateBatchOutlivesACancelledWrite: a write whose context ends while its statement runs
// in a batch does not take the batch down. The driver stops such a statement with
// sqlite3_interrupt, and SQLite rolls back the whole transaction of an interrupted write, so
// without the shield the writes committed beside it would fail (or, had their callers been told
// of success, be lost).
func TestWriteGateBatchOutlivesACancelledWrite(t *testing.T) {
	s := openGateTest(t)
	ctx := t.Context()
	release := holdGate(t, s)
	before := make(chan error, 1)
	go func() {
		_, err := s.exec(ctx, "INSERT INTO gate_rows (id) VALUES ('before')")
		before <- err
	}()
	waitQueued(t, s, 1)
	slowCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	slow := make(chan error, 1)
	go func() {
		// An insert that takes a while to compute its one row.
		_, err := s.exec(slowCtx, `INSERT INTO gate_rows (id) SELECT 'slow-' || max(n) FROM
(WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 200000) SELECT n FROM c)`)
		slow <- err
	}()
	waitQueued(t, s, 2)
	after := make(chan error, 1)
	go func() {
		_, err := s.exec(ctx, "INSERT INTO gate_rows (id) VALUES ('after')")
		after <- err
	}()
	waitQueued(t, s, 3)
	release()
	// Cancel the slow write once its statement runs: the batch has taken it off the queue.
	waitQueued(t, s, 0)
	time.Sleep(5 * time.Millisecond)
	cancel()
	for name, ch := range map[string]chan error{"before": before, "after": after} {
		if err := <-ch; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	<-slow // done or not: what matters is the others
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM gate_rows WHERE id IN ('before', 'after')").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d of the other writes stored (%v), want both", n, err)
	}
}
