package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
)

// The store counts the statements it sends to the database, so that tests can pin how many a
// request costs (a change that adds a query to a hot path then fails a test rather than going
// unnoticed) and operators can read it. The count is kept below database/sql, by a connector
// that wraps the driver's connections, so no path of the package escapes it: cached
// statements, transactions, migrations and raw queries alike.
//
// Counted: every statement executed (Exec and Query, prepared or not), and the beginning and
// the end (commit or rollback) of every transaction. Not counted: preparing a statement (once
// per connection and text, thanks to the statement cache), pings and connection resets, what
// the PostgreSQL blob store sends through pgx directly (COPY of blob chunks), and what SQLite's
// writer path adds to run several writes in one commit (the batch's transaction and savepoints,
// writegate.go): how many writes meet in a batch depends on timing, and the count must not.

// Statements is the number of statements this store has sent to the database since it was
// opened (see above for what counts).
func (s *Store) Statements() uint64 { return s.counter.Load() }

// countingConnector opens the driver's connections wrapped in countingConn.
type countingConnector struct {
	driver.Connector
	n *atomic.Uint64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, n: c.n}, nil
}

// openCounted opens a database whose statements are counted in n.
func openCounted(c driver.Connector, n *atomic.Uint64) *sql.DB {
	return sql.OpenDB(countingConnector{Connector: c, n: n})
}

// countingConn counts what runs on one connection. It offers every optional interface
// database/sql looks for, passing each call to the driver's connection when it has the
// interface and answering as database/sql would without it otherwise.
type countingConn struct {
	driver.Conn
	n *atomic.Uint64
	// batch is set while the connection runs a batch of SQLite's writer path (writegate.go).
	// Its statements then run to their end whatever their callers' contexts do: the driver
	// stops a statement whose context ends with sqlite3_interrupt, and SQLite answers an
	// interrupted write inside a transaction by rolling back the whole transaction, every other
	// write of the batch with it. A write whose context ended before its turn is not run.
	// database/sql uses a connection from one goroutine at a time, so a plain field does.
	batch bool
}

// shield is the context a statement runs under on c: ctx, or, in a batch, ctx without its end.
func (c *countingConn) shield(ctx context.Context) context.Context {
	if c.batch {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// unwrapConn is the driver's own connection behind a counted one (for conn.Raw).
func unwrapConn(dc any) any {
	if c, ok := dc.(*countingConn); ok {
		return c.Conn
	}
	return dc
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	st, err := c.Conn.Prepare(query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: st, n: c.n, conn: c}, nil
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	pc, ok := c.Conn.(driver.ConnPrepareContext)
	if !ok {
		return c.Prepare(query)
	}
	st, err := pc.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: st, n: c.n, conn: c}, nil
}

// uncountedKey marks the context of statements the count leaves out (see above).
type uncountedKey struct{}

// uncounted returns ctx with its statements and transactions left out of the count.
func uncounted(ctx context.Context) context.Context {
	return context.WithValue(ctx, uncountedKey{}, true)
}

func isUncounted(ctx context.Context) bool { return ctx.Value(uncountedKey{}) != nil }

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip // database/sql prepares and runs it, counted there
	}
	res, err := ec.ExecContext(c.shield(ctx), query, args)
	// Only a batch's own statements are uncounted, so the context is looked into only there.
	if err != driver.ErrSkip && !(c.batch && isUncounted(ctx)) {
		c.n.Add(1)
	}
	return res, err
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := qc.QueryContext(c.shield(ctx), query, args)
	if err != driver.ErrSkip {
		c.n.Add(1)
	}
	return rows, err
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var (
		tx  driver.Tx
		err error
	)
	if bc, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = bc.BeginTx(ctx, opts)
	} else {
		//lint:ignore SA1019 the fallback database/sql itself uses for a driver without the newer interface
		tx, err = c.Conn.Begin()
	}
	// The writer path's batches, and only they, begin with an uncounted context.
	skip := isUncounted(ctx)
	if !skip {
		c.n.Add(1)
	}
	if err != nil {
		return nil, err
	}
	c.batch = skip
	return countingTx{Tx: tx, n: c.n, skip: skip, conn: c}, nil
}

func (c *countingConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// countingTx counts a transaction's end.
type countingTx struct {
	driver.Tx
	n    *atomic.Uint64
	skip bool // an uncounted transaction: a batch of the writer path
	conn *countingConn
}

func (t countingTx) Commit() error {
	if !t.skip {
		t.n.Add(1)
	}
	t.conn.batch = false
	return t.Tx.Commit()
}

func (t countingTx) Rollback() error {
	if !t.skip {
		t.n.Add(1)
	}
	t.conn.batch = false
	return t.Tx.Rollback()
}

// countingStmt counts the runs of a prepared statement.
type countingStmt struct {
	driver.Stmt
	n    *atomic.Uint64
	conn *countingConn
}

func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.n.Add(1)
	//lint:ignore SA1019 the fallback database/sql itself uses for a driver without the newer interface
	return s.Stmt.Exec(args)
}

func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.n.Add(1)
	//lint:ignore SA1019 the fallback database/sql itself uses for a driver without the newer interface
	return s.Stmt.Query(args)
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.n.Add(1)
	if ec, ok := s.Stmt.(driver.StmtExecContext); ok {
		return ec.ExecContext(s.conn.shield(ctx), args)
	}
	vals, err := namedValues(args)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the fallback database/sql itself uses for a driver without the newer interface
	return s.Stmt.Exec(vals)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.n.Add(1)
	if qc, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return qc.QueryContext(s.conn.shield(ctx), args)
	}
	vals, err := namedValues(args)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 the fallback database/sql itself uses for a driver without the newer interface
	return s.Stmt.Query(vals)
}

func (s *countingStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// namedValues are positional values for a statement that takes no names.
func namedValues(args []driver.NamedValue) ([]driver.Value, error) {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, driver.ErrSkip
		}
		out[i] = a.Value
	}
	return out, nil
}

var (
	_ driver.ConnPrepareContext = (*countingConn)(nil)
	_ driver.ExecerContext      = (*countingConn)(nil)
	_ driver.QueryerContext     = (*countingConn)(nil)
	_ driver.ConnBeginTx        = (*countingConn)(nil)
	_ driver.Pinger             = (*countingConn)(nil)
	_ driver.SessionResetter    = (*countingConn)(nil)
	_ driver.Validator          = (*countingConn)(nil)
	_ driver.NamedValueChecker  = (*countingConn)(nil)
	_ driver.StmtExecContext    = (*countingStmt)(nil)
	_ driver.StmtQueryContext   = (*countingStmt)(nil)
	_ driver.NamedValueChecker  = (*countingStmt)(nil)
)
