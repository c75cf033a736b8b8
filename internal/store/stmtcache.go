package store

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStatements bounds the cache: queries built with a variable number of placeholders
// (IN lists) are distinct texts, and past this many new texts are run unprepared.
const maxCachedStatements = 256

// stmtCache keeps one prepared statement per query text. Preparing (parsing and planning) was
// the largest single cost of a chat request on SQLite; database/sql re-prepares a cached
// statement on each pooled connection once, and transactions reuse it through Tx.StmtContext.
type stmtCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: make(map[string]*sql.Stmt)}
}

// get returns the statement for query, or nil when it cannot be cached (the caller then runs
// the query unprepared, which also reports any error in it).
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.RLock()
	st, ok := c.m[query]
	c.mu.RUnlock()
	if ok {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st
	}
	if len(c.m) >= maxCachedStatements {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.m[query] = st
	return st
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// cached runs queries through the statement cache, on the pool or inside a transaction.
type cached struct {
	c  *stmtCache
	db *sql.DB
	tx *sql.Tx
}

// conn is the statement-caching execer for queries outside a transaction.
func (s *Store) conn() cached { return cached{c: s.stmts, db: s.db} }

// inTx is the statement-caching execer for queries inside tx.
func (s *Store) inTx(tx *sql.Tx) cached { return cached{c: s.stmts, db: s.db, tx: tx} }

func (q cached) stmt(ctx context.Context, query string) *sql.Stmt {
	st := q.c.get(ctx, query)
	if st != nil && q.tx != nil {
		st = q.tx.StmtContext(ctx, st)
	}
	return st
}

func (q cached) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := q.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if q.tx != nil {
		return q.tx.ExecContext(ctx, query, args...)
	}
	return q.db.ExecContext(ctx, query, args...)
}

func (q cached) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	if q.tx != nil {
		return q.tx.QueryContext(ctx, query, args...)
	}
	return q.db.QueryContext(ctx, query, args...)
}

func (q cached) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	if q.tx != nil {
		return q.tx.QueryRowContext(ctx, query, args...)
	}
	return q.db.QueryRowContext(ctx, query, args...)
}
