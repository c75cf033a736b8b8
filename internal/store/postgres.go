package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL pool limits. Parley is one process; a few dozen connections is
// plenty and leaves room under the server's default max_connections (100)
// for a second instance or a migration.
const (
	pgMaxOpenConns    = 16
	pgMaxIdleConns    = 8
	pgConnMaxLifetime = 30 * time.Minute
	pgConnMaxIdleTime = 5 * time.Minute
)

// SQLSTATE codes, see https://www.postgresql.org/docs/current/errcodes-appendix.html.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
)

// pgMigrationLockID is the pg_advisory_xact_lock key that serialises
// concurrent Migrate calls (two instances starting at once).
const pgMigrationLockID = 0x7061726c6579 // "parley"

func openPostgres(databaseURL string) (*Store, error) {
	if err := checkPostgresURL(databaseURL); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(withConnectTimeout(databaseURL))
	if err != nil {
		// pgx parse errors redact the password.
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	// The connections' read and write failures are marked as the database's (see
	// IsUnavailable): the driver hands some of them on bare, as io.ErrUnexpectedEOF.
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &markedConn{Conn: c}, nil
	}
	counter := new(atomic.Uint64)
	db := openCounted(stdlib.GetConnector(*cfg), counter)
	db.SetMaxOpenConns(pgMaxOpenConns)
	db.SetMaxIdleConns(pgMaxIdleConns)
	db.SetConnMaxLifetime(pgConnMaxLifetime)
	db.SetConnMaxIdleTime(pgConnMaxIdleTime)
	return &Store{db: db, dialect: DialectPostgres, counter: counter, stmts: newStmtCache(db), history: newHistoryCache(historyCacheBytes),
		writes: newWriteGate(DialectPostgres)}, nil
}

// withConnectTimeout adds connect_timeout=pgConnectTimeout to a URL that sets none.
func withConnectTimeout(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return databaseURL // sql.Open reports it
	}
	q := u.Query()
	if q.Has("connect_timeout") {
		return databaseURL
	}
	q.Set("connect_timeout", strconv.Itoa(int(pgConnectTimeout/time.Second)))
	u.RawQuery = q.Encode()
	return u.String()
}

func isPostgresCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}
