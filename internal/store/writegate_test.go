package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
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

// TestWriteGateWaitsForItsContext: a write waiting for the writer path gives up when its
// context ends, not before, and does not take the path from the writer inside.
func TestWriteGateWaitsForItsContext(t *testing.T) {
	g := newWriteGate(DialectSQLite)
	if err := g.enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.enter(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("enter while held: %v", err)
	}
	g.leave()
	if err := g.enter(context.Background()); err != nil {
		t.Fatalf("enter once left: %v", err)
	}
	g.leave()
	if newWriteGate(DialectPostgres) != nil {
		t.Fatal("PostgreSQL has a write gate")
	}
}
