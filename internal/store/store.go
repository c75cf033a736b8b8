// Package store is Parley's storage layer: one API over two SQL engines.
//
// With no database URL it uses an embedded SQLite file (pure Go,
// modernc.org/sqlite) so that a fresh install works with zero setup; with a
// postgres:// URL it uses PostgreSQL through pgx's database/sql driver. The
// rest of Parley never learns which engine it runs on.
//
// Conventions that keep the two engines behaving identically:
//   - ids are TEXT uuids, timestamps are int64 Unix seconds (UTC);
//   - repository SQL is written once with ? placeholders and passed through
//     [Store.Rebind], which rewrites it to $1..$n for PostgreSQL;
//   - driver errors are mapped to the sentinels [ErrNotFound] and
//     [ErrConflict] before they leave the package.
//
// Open does not touch the schema; call [Store.Migrate] explicitly.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Dialect names returned by [Store.Dialect].
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// ErrNotFound is returned (wrapped) when a requested row does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned (wrapped) when a write would violate a uniqueness
// constraint, on either engine.
var ErrConflict = errors.New("conflict")

// Store is a handle on the database. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	dialect string
	stmts   *stmtCache
	// counter counts the statements sent to the database (counting.go).
	counter *atomic.Uint64

	// workspace caches the single workspace row once it is known; its id
	// never changes for the life of the database.
	workspace atomic.Pointer[Workspace]

	// lexemes caches PostgreSQL's common full-text lexemes (see commonLexemes).
	lexemes atomic.Pointer[lexemeStats]
	// commonTerms, when set, replaces commonTermNodes (tests lower it to keep their corpora small).
	commonTerms int

	// history keeps the text of messages replayed as conversation history (see
	// RecentMessages).
	history *historyCache

	// indexHook is told of datasets whose searchable set changed (SetIndexChangeHook);
	// pending holds them per open transaction until it ends.
	indexHook atomic.Pointer[func(datasetID string)]
	pendingMu sync.Mutex
	pending   map[*sql.Tx][]string

	// writes is the one writer path of a SQLite database (writegate.go); nil on PostgreSQL.
	writes *writeGate
}

// Open connects to the database and checks that it answers.
//
// An empty databaseURL selects SQLite in <dataDir>/parley.db (dataDir is
// created with mode 0o750 if missing). A postgres:// or postgresql:// URL
// selects PostgreSQL; dataDir is then unused. Any other scheme is an error.
// Open does not migrate; call [Store.Migrate].
func Open(ctx context.Context, databaseURL, dataDir string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var (
		s   *Store
		err error
	)
	if databaseURL == "" {
		s, err = openSQLite(dataDir, o.synchronous)
	} else {
		s, err = openPostgres(databaseURL)
	}
	if err != nil {
		return nil, err
	}
	if err := s.db.PingContext(ctx); err != nil {
		_ = s.db.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", s.dialect, err)
	}
	return s, nil
}

// Option adjusts how Open opens a database.
type Option func(*options)

type options struct {
	synchronous string
}

// WithSQLiteSynchronous sets SQLite's synchronous mode: SynchronousNormal (the default) or
// SynchronousFull. PostgreSQL ignores it.
func WithSQLiteSynchronous(mode string) Option {
	return func(o *options) { o.synchronous = mode }
}

// checkPostgresURL accepts only postgres:// and postgresql:// URLs. The URL
// may carry a password, so it never appears in the returned error.
func checkPostgresURL(databaseURL string) error {
	u, err := url.Parse(databaseURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("store: invalid database URL: %w", err)
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		return nil
	default:
		return fmt.Errorf("store: unsupported database URL scheme %q: use postgres:// or postgresql://, or leave it empty for SQLite", u.Scheme)
	}
}

// Close closes the connection pool.
func (s *Store) Close() error {
	if s.stmts != nil {
		s.stmts.close()
	}
	return s.db.Close()
}

// Dialect reports the engine in use: [DialectSQLite] or [DialectPostgres].
func (s *Store) Dialect() string {
	return s.dialect
}

// DB returns the underlying connection pool. Queries written with ?
// placeholders must go through [Store.Rebind].
func (s *Store) DB() *sql.DB {
	return s.db
}

// Rebind rewrites ? placeholders to $1..$n when the engine is PostgreSQL and
// returns the query unchanged for SQLite. A ? inside a quoted string or
// identifier, or in a -- comment, is left alone. Do not use the PostgreSQL
// jsonb ? operators in shared SQL; use jsonb_exists and friends instead.
func (s *Store) Rebind(query string) string {
	if s.dialect != DialectPostgres {
		return query
	}
	return rebindDollar(query)
}

func rebindDollar(query string) string {
	if strings.IndexByte(query, '?') < 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	var quote byte // the quote character we are inside, or 0
	inComment := false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case inComment:
			if c == '\n' {
				inComment = false
			}
		case quote != 0:
			// A doubled quote ('' or "") closes and reopens, which this
			// toggling handles without special casing.
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			inComment = true
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// WithTx runs fn in a transaction, committing if fn returns nil and rolling
// back otherwise (also when fn panics; the panic is then re-raised). fn's
// error is returned as is. On SQLite the transaction takes the write lock
// when it begins (BEGIN IMMEDIATE), so fn is never re-run: only the BEGIN is
// retried while the database is busy.
func (s *Store) WithTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.writes != nil {
		_, err := s.pass(pendingWrite{ctx: ctx, tx: fn})
		return err
	}
	tx, committed, err := s.runTx(ctx, fn)
	if tx != nil {
		s.endTx(tx, committed)
	}
	return err
}

// runTx runs fn in a transaction of its own, as WithTx says, and returns the transaction and
// whether it committed; the caller tells the hooks (endTx).
func (s *Store) runTx(ctx context.Context, fn func(tx *sql.Tx) error) (tx *sql.Tx, committed bool, err error) {
	tx, err = s.begin(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("store: begin transaction: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			s.endTx(tx, false)
			panic(p)
		}
		if !committed {
			if rbErr := tx.Rollback(); rbErr != nil && !errors.Is(rbErr, sql.ErrTxDone) && err != nil {
				err = errors.Join(err, fmt.Errorf("store: rollback: %w", rbErr))
			}
		}
	}()
	if err := fn(tx); err != nil {
		return tx, false, err
	}
	if err := tx.Commit(); err != nil {
		return tx, false, fmt.Errorf("store: commit: %w", mapError(err))
	}
	return tx, true, nil
}

func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	if s.dialect != DialectSQLite {
		return s.db.BeginTx(ctx, nil)
	}
	var tx *sql.Tx
	err := retryBusy(ctx, func() error {
		var err error
		tx, err = s.db.BeginTx(ctx, nil)
		return err
	})
	return tx, err
}

// execer is what *sql.DB and *sql.Tx have in common.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// mapError turns driver-specific constraint errors into the package
// sentinels, keeping the driver error in the chain for logs.
func mapError(err error) error {
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	default:
		return err
	}
}

// oneRow is the error of a statement that must change one row: its own, or ErrNotFound when it
// changed none.
func oneRow(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrNotFound
	}
	return nil
}
