package store

import (
	"database/sql"
	"errors"
	"testing"
)

// TestStatementsCounted: every statement sent to the database counts once, whichever way the
// package sends it, and a transaction counts its beginning and its end.
func TestStatementsCounted(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		step := func(what string, want uint64, fn func() error) {
			t.Helper()
			before := s.Statements()
			if err := fn(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got := s.Statements() - before; got != want {
				t.Errorf("%s: %d statements counted, want %d", what, got, want)
			}
		}
		step("a write outside a transaction", 1, func() error {
			_, err := s.exec(ctx, "UPDATE jobs SET updated_at = 0 WHERE id = ?", "none")
			return err
		})
		step("a cached query", 1, func() error {
			var n int
			return s.conn().QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM jobs WHERE kind = ?"), "k").Scan(&n)
		})
		step("a raw query on the pool", 1, func() error {
			var n int
			return s.db.QueryRowContext(ctx, "SELECT 1").Scan(&n)
		})
		step("a transaction of two statements", 4, func() error {
			return s.WithTx(ctx, func(tx *sql.Tx) error {
				var n int
				if err := s.inTx(tx).QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, s.Rebind("UPDATE jobs SET updated_at = 0 WHERE id = ?"), "none")
				return err
			})
		})
		failed := errors.New("failed")
		step("a transaction rolled back", 3, func() error {
			err := s.WithTx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, s.Rebind("UPDATE jobs SET updated_at = 0 WHERE id = ?"), "none"); err != nil {
					return err
				}
				return failed
			})
			if !errors.Is(err, failed) {
				return err
			}
			return nil
		})
	})
}
