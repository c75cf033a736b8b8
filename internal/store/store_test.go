package store

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// forEachEngine runs fn once per engine, in parallel, each time on a fresh,
// migrated database.
func forEachEngine(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Helper()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		fn(t, openEngine(t, e, true))
	})
}

// openEngine opens a store on e, closed when t ends, and migrates it if asked.
func openEngine(t testing.TB, e storetest.Engine, migrate bool) *Store {
	t.Helper()
	s, err := Open(t.Context(), e.DatabaseURL, e.DataDir)
	if err != nil {
		t.Fatalf("Open(%s): %v", e.Name, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if s.Dialect() != e.Name {
		t.Fatalf("Dialect() = %q, want %q", s.Dialect(), e.Name)
	}
	if migrate {
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	return s
}

func TestOpenRejectsUnknownSchemes(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"mysql://root@localhost/parley",
		"sqlite:///tmp/x.db",
		"file:parley.db",
		"127.0.0.1:5432",
		"postgres://user:hunter2@[::1", // unparseable; must not echo the password
	} {
		_, err := Open(t.Context(), u, t.TempDir())
		if err == nil {
			t.Errorf("Open(%q): want error", u)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): error leaks the password: %v", u, err)
		}
	}
}

func TestOpenSQLiteCreatesDataDirAndAppliesPragmas(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data dir#1")
	s, err := Open(t.Context(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o750 {
		t.Errorf("data dir mode = %o, want 750", perm)
	}
	if _, err := os.Stat(filepath.Join(dir, SQLiteFileName)); err != nil {
		t.Errorf("database file: %v", err)
	}

	// Pin one connection so every pragma is read from the same one.
	conn, err := s.DB().Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for pragma, want := range map[string]string{
		"busy_timeout": "5000",
		"journal_mode": "wal",
		"foreign_keys": "1",
		"synchronous":  "1", // NORMAL, the default
		"temp_store":   "2", // MEMORY
		"cache_size":   "-8000",
	} {
		var got string
		if err := conn.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestOpenSQLiteSynchronous(t *testing.T) {
	t.Parallel()
	for mode, want := range map[string]string{SynchronousFull: "2", SynchronousNormal: "1"} {
		s, err := Open(t.Context(), "", t.TempDir(), WithSQLiteSynchronous(mode))
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := s.DB().QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&got); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got != want {
			t.Errorf("%s: PRAGMA synchronous = %s, want %s", mode, got, want)
		}
	}
	if _, err := Open(t.Context(), "", t.TempDir(), WithSQLiteSynchronous("off")); err == nil {
		t.Error("synchronous off accepted")
	}
}

func TestOpenSQLiteWithoutDataDir(t *testing.T) {
	t.Parallel()
	if _, err := Open(t.Context(), "", ""); err == nil {
		t.Fatal("Open with neither URL nor data dir: want error")
	}
}

func TestRebind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SELECT 1":                              "SELECT 1",
		"SELECT * FROM t WHERE a = ? AND b = ?": "SELECT * FROM t WHERE a = $1 AND b = $2",
		"INSERT INTO t VALUES (?, '?', ?)":      "INSERT INTO t VALUES ($1, '?', $2)",
		`SELECT "we?ird" FROM t WHERE x = ?`:    `SELECT "we?ird" FROM t WHERE x = $1`,
		"SELECT 'it''s ?' , ?":                  "SELECT 'it''s ?' , $1",
		"SELECT ? -- why?\n, ?":                 "SELECT $1 -- why?\n, $2",
		"SELECT a - ? FROM t":                   "SELECT a - $1 FROM t",
	} {
		if got := rebindDollar(in); got != want {
			t.Errorf("rebindDollar(%q) = %q, want %q", in, got, want)
		}
	}
	sq := &Store{dialect: DialectSQLite}
	if got := sq.Rebind("a = ?"); got != "a = ?" {
		t.Errorf("sqlite Rebind changed the query: %q", got)
	}
}

func TestMigrationsAreWellFormed(t *testing.T) {
	t.Parallel()
	for i, m := range migrations {
		if m.version != int64(i+1) {
			t.Errorf("migrations[%d].version = %d, want %d (no gaps, no reordering)", i, m.version, i+1)
		}
		if m.name == "" || strings.TrimSpace(m.sqlite) == "" || strings.TrimSpace(m.postgres) == "" {
			t.Errorf("migration %d: name and SQL for both engines are required", m.version)
		}
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		s := openEngine(t, e, false)
		ctx := t.Context()

		if v, err := s.SchemaVersion(ctx); err != nil || v != 0 {
			t.Fatalf("SchemaVersion before Migrate = %d, %v; want 0, nil", v, err)
		}
		for range 3 { // idempotent
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
		}
		if v, err := s.SchemaVersion(ctx); err != nil || v != LatestSchemaVersion() {
			t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, LatestSchemaVersion())
		}
		var n int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != len(migrations) {
			t.Errorf("schema_migrations has %d rows, want %d", n, len(migrations))
		}
		for _, table := range []string{"workspace", "apps", "api_keys"} {
			if _, err := s.DB().ExecContext(ctx, "SELECT COUNT(*) FROM "+table); err != nil {
				t.Errorf("table %s: %v", table, err)
			}
		}

		// A second store on the same database sees the migrated schema.
		other := openEngine(t, storetest.Engine{Name: e.Name, DatabaseURL: e.DatabaseURL, DataDir: e.DataDir}, true)
		if v, err := other.SchemaVersion(ctx); err != nil || v != LatestSchemaVersion() {
			t.Fatalf("second store: SchemaVersion = %d, %v", v, err)
		}
	})
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		// Separate pools stand in for separate processes starting at once.
		const n = 4
		stores := make([]*Store, n)
		for i := range stores {
			stores[i] = openEngine(t, e, false)
		}
		errs := make(chan error, n)
		for _, s := range stores {
			go func() { errs <- s.Migrate(t.Context()) }()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		}
		if v, err := stores[0].SchemaVersion(t.Context()); err != nil || v != LatestSchemaVersion() {
			t.Fatalf("SchemaVersion = %d, %v", v, err)
		}
	})
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		future := LatestSchemaVersion() + 1
		if _, err := s.DB().ExecContext(ctx, s.Rebind("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', 0)"), future); err != nil {
			t.Fatal(err)
		}
		err := s.Migrate(ctx)
		if err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("Migrate on a newer schema: err = %v, want a 'newer' error", err)
		}
	})
}

func TestWithTx(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		insert := s.Rebind("INSERT INTO apps (id, name, mode, created_at, updated_at) VALUES (?, ?, 'chat', 0, 0)")

		boom := errors.New("boom")
		err := s.WithTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, insert, "id-rolled-back", "rolled-back"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("WithTx error = %v, want boom", err)
		}
		if _, err := s.AppByName(ctx, "rolled-back"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("rolled-back insert is visible: %v", err)
		}

		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic in WithTx was swallowed")
				}
			}()
			_ = s.WithTx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, insert, "id-panicked", "panicked"); err != nil {
					return err
				}
				panic("boom")
			})
		}()
		if _, err := s.AppByName(ctx, "panicked"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("insert before panic is visible: %v", err)
		}

		if err := s.WithTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, insert, "id-committed", "committed")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppByName(ctx, "committed"); err != nil {
			t.Fatalf("committed insert: %v", err)
		}
	})
}

func TestOpenPostgresAcceptsBothSchemes(t *testing.T) {
	t.Parallel()
	base := storetest.PostgresURL(t)
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		u := scheme + strings.TrimPrefix(base, "postgres://")
		s, err := Open(t.Context(), u, "")
		if err != nil {
			t.Fatalf("Open(%s…): %v", scheme, err)
		}
		if s.Dialect() != DialectPostgres {
			t.Errorf("Dialect() = %q", s.Dialect())
		}
		_ = s.Close()
	}
}
