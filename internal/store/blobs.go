package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/parleyhq/parley/internal/blob"
)

// migrationBlobs keeps, on PostgreSQL, the content of uploaded files (the bytes internal/blob
// stores by key) in the database, so that every replica reads every file; and, on both engines,
// the secrets every replica must share (the key that signs file links).
//
// A blob is one `blobs` row (its key, size and SHA-256) and its content cut into
// `blob_chunks` rows of at most [BlobChunkSize] bytes. Chunks belong to the row's id, not to the
// key: replacing a key writes a new row and new chunks and removes the old ones in one
// transaction, so a reader that began on the old content gets an error at its next chunk rather
// than a mix of both. The chunks' storage is EXTERNAL: stored out of line and not compressed,
// since most uploads (images, audio, PDF, Office files) are compressed already and reading a
// chunk then costs no decompression.
//
// SQLite keeps blobs as files (internal/blob.Dir): one process, one data directory.
var migrationBlobs = migration{
	version: 13,
	name:    "blobs in the database, shared secrets",
	sqlite: `
CREATE TABLE shared_secrets (
	name       TEXT    NOT NULL PRIMARY KEY,
	value      BLOB    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
`,
	postgres: `
CREATE TABLE shared_secrets (
	name       TEXT   NOT NULL PRIMARY KEY,
	value      BYTEA  NOT NULL,
	created_at BIGINT NOT NULL
);

CREATE TABLE blobs (
	id         TEXT   NOT NULL PRIMARY KEY,
	key        TEXT   UNIQUE,
	size       BIGINT NOT NULL CHECK (size >= 0),
	sha256     TEXT   NOT NULL,
	chunks     INTEGER NOT NULL CHECK (chunks >= 0),
	created_at BIGINT NOT NULL
);

CREATE TABLE blob_chunks (
	blob_id TEXT    NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL CHECK (seq >= 0),
	data    BYTEA   NOT NULL,
	PRIMARY KEY (blob_id, seq)
);

ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
`,
}

// SharedSecret returns the secret called name, the same on every process sharing the database.
// The first caller's candidate becomes the secret (INSERT … ON CONFLICT DO NOTHING, then read
// back), so processes starting at once agree on one value without a lock.
func (s *Store) SharedSecret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if name == "" || len(candidate) == 0 {
		return nil, errors.New("store: shared secret: name and candidate are required")
	}
	_, err := s.exec(ctx,
		"INSERT INTO shared_secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
		name, candidate, time.Now().Unix())
	if err != nil {
		return nil, fmt.Errorf("store: shared secret %s: %w", name, mapError(err))
	}
	var v []byte
	if err := s.db.QueryRowContext(ctx, s.Rebind("SELECT value FROM shared_secrets WHERE name = ?"), name).Scan(&v); err != nil {
		return nil, fmt.Errorf("store: shared secret %s: %w", name, mapError(err))
	}
	return v, nil
}

// BlobChunkSize is the most content one blob_chunks row holds. A reader or writer of a blob
// in the database holds one chunk in memory, whatever the blob's size.
const BlobChunkSize = 256 << 10

// DBBlobs is a [blob.Store] that keeps blobs in the PostgreSQL database (migrationBlobs), so
// that every process on the database reads what any of them wrote.
//
// Put writes the whole blob in one transaction: a failed, cancelled or oversized Put, or a
// process that dies during one, leaves nothing behind, and no reader sees a blob before it is
// complete. Uploads reach Put from a temporary file the request was spooled to, so the
// transaction lasts as long as reading that file, not as long as the client takes to send it.
//
// Chunks are written and read over the connection's own protocol (pgx), which copies them
// between the caller's buffer and the connection's without allocating per chunk: streaming a
// blob of any size allocates a bounded amount of memory.
type DBBlobs struct {
	db *sql.DB
}

var _ blob.Store = (*DBBlobs)(nil)

// Blobs returns the database blob store of a PostgreSQL store; on SQLite it is an error
// (blobs are files there).
func (s *Store) Blobs() (*DBBlobs, error) {
	if s.dialect != DialectPostgres {
		return nil, errors.New("store: blobs in the database need PostgreSQL; SQLite keeps them in the data directory")
	}
	return &DBBlobs{db: s.db}, nil
}

// withPgx runs fn on a connection of the pool, as pgx sees it.
func (b *DBBlobs) withPgx(ctx context.Context, fn func(c *pgx.Conn) error) error {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := unwrapConn(dc).(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("store: blobs: unexpected driver connection %T", dc)
		}
		return fn(sc.Conn())
	})
}

// chunkCopier is the source of a binary COPY into blob_chunks: it reads the blob in chunks of
// len(buf) bytes and yields each as a row (blob_id, seq, data) in PostgreSQL's binary copy
// format, hashing and counting as it goes. The COPY stream is sent in pgx's pooled buffers, so
// the only chunk-sized memory is buf.
type chunkCopier struct {
	id   string
	src  io.Reader
	buf  []byte
	h    hash.Hash
	max  int64
	size int64
	seq  int
	// queue holds what is left to hand out, in order: the stream header, a row's header and
	// its data, the trailer.
	queue   [][]byte
	qbuf    [3][]byte
	rowHead [64]byte
	started bool
	done    bool
	// err is the source's failure (or ErrTooLarge), kept because the COPY reports it only as
	// text.
	err error
}

// copyHeader starts a binary COPY stream: the signature, no flags, no header extension;
// copyTrailer ends it.
var (
	copyHeader  = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	copyTrailer = []byte{0xff, 0xff}
)

// Read implements io.Reader.
func (c *chunkCopier) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(c.queue) > 0 {
			k := copy(p[n:], c.queue[0])
			n += k
			if c.queue[0] = c.queue[0][k:]; len(c.queue[0]) == 0 {
				c.queue = c.queue[1:]
			}
			continue
		}
		if c.done {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		if err := c.next(); err != nil {
			c.err = err
			return n, err
		}
	}
	return n, nil
}

// next queues what comes next: the header first, then a row per chunk, then the trailer.
func (c *chunkCopier) next() error {
	c.queue = c.qbuf[:0]
	if !c.started {
		c.started = true
		c.queue = append(c.queue, copyHeader)
		return nil
	}
	k, err := io.ReadFull(c.src, c.buf)
	if k > 0 {
		c.size += int64(k)
		if c.size > c.max {
			return blob.ErrTooLarge
		}
		c.h.Write(c.buf[:k])
		row := c.rowHead[:0]
		row = binary.BigEndian.AppendUint16(row, 3)
		row = binary.BigEndian.AppendUint32(row, uint32(len(c.id)))
		row = append(row, c.id...)
		row = binary.BigEndian.AppendUint32(row, 4)
		row = binary.BigEndian.AppendUint32(row, uint32(c.seq))
		row = binary.BigEndian.AppendUint32(row, uint32(k))
		c.queue = append(c.queue, row, c.buf[:k])
		c.seq++
	}
	switch {
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		c.done = true
		c.queue = append(c.queue, copyTrailer)
		return nil
	case err != nil:
		return err
	}
	return nil
}

// blobLockClass is the first key of the advisory locks that serialise Puts of one blob key
// ("blob"); the second is the key's hash. Two-key advisory locks never collide with one-key
// ones, such as the migration lock.
const blobLockClass = 0x626c6f62

// chunkBufs recycles chunk buffers between Puts and readers.
var chunkBufs = sync.Pool{New: func() any { b := make([]byte, BlobChunkSize); return &b }}

// Put implements [blob.Store].
func (b *DBBlobs) Put(ctx context.Context, key string, r io.Reader, maxBytes int64) (size int64, sha256hex string, err error) {
	if !blob.ValidKey(key) {
		return 0, "", fmt.Errorf("blob: put: %w: %q", blob.ErrInvalidKey, key)
	}
	if maxBytes <= 0 {
		return 0, "", fmt.Errorf("blob: put %s: maxBytes %d must be positive", key, maxBytes)
	}
	if err := ctx.Err(); err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	bufp := chunkBufs.Get().(*[]byte)
	defer chunkBufs.Put(bufp)
	buf := *bufp
	id := NewID()
	h := sha256.New()
	// Read one byte past the limit to tell "exactly maxBytes" from "more".
	lr := io.LimitReader(r, maxBytes+1)
	err = b.withPgx(ctx, func(c *pgx.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		// After Commit this does nothing; after a failure the transaction ends here.
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if _, err := tx.Exec(ctx, "INSERT INTO blobs (id, key, size, sha256, chunks, created_at) VALUES ($1, NULL, 0, '', 0, $2)",
			id, time.Now().Unix()); err != nil {
			return err
		}
		cr := &chunkCopier{id: id, src: lr, buf: buf, h: h, max: maxBytes}
		if _, err := c.PgConn().CopyFrom(ctx, cr, "COPY blob_chunks (blob_id, seq, data) FROM STDIN (FORMAT binary)"); err != nil {
			if cr.err != nil {
				return cr.err // the source's error, not how the server reported the aborted copy
			}
			return err
		}
		size = cr.size
		seq := cr.seq
		sha256hex = hex.EncodeToString(h.Sum(nil))
		// Of two Puts of one key, the second replaces the first, not fails on the unique key.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", int32(blobLockClass), key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM blobs WHERE key = $1", key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "UPDATE blobs SET key = $1, size = $2, sha256 = $3, chunks = $4 WHERE id = $5",
			key, size, sha256hex, seq, id); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if errors.Is(err, blob.ErrTooLarge) {
		return 0, "", fmt.Errorf("blob: put %s: more than %d bytes: %w", key, maxBytes, blob.ErrTooLarge)
	}
	if err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	return size, sha256hex, nil
}

// Open implements [blob.Store]. The content is read one chunk at a time as the caller reads,
// each chunk in its own short query, so a slow client holds no connection between reads.
func (b *DBBlobs) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if !blob.ValidKey(key) {
		return nil, fmt.Errorf("blob: open: %w: %q", blob.ErrInvalidKey, key)
	}
	var br dbBlobReader
	err := b.db.QueryRowContext(ctx, "SELECT id, size, chunks FROM blobs WHERE key = $1", key).Scan(&br.id, &br.size, &br.chunks)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("blob: open %s: %w", key, blob.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: open %s: %w", key, err)
	}
	br.ctx, br.b, br.key = ctx, b, key
	return &br, nil
}

// Delete implements [blob.Store]; the chunks go with the row.
func (b *DBBlobs) Delete(ctx context.Context, key string) error {
	if !blob.ValidKey(key) {
		return fmt.Errorf("blob: delete: %w: %q", blob.ErrInvalidKey, key)
	}
	if _, err := b.db.ExecContext(ctx, "DELETE FROM blobs WHERE key = $1", key); err != nil {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// dbBlobReader reads a blob's chunks in order, one query each, into one pooled buffer.
type dbBlobReader struct {
	ctx          context.Context
	b            *DBBlobs
	key, id      string
	size, read   int64
	chunks, next int
	bufp         *[]byte
	cur          []byte // the unread part of the current chunk
	err          error
}

// Read implements io.Reader.
func (r *dbBlobReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(r.cur) == 0 {
		if r.next == r.chunks {
			if r.read != r.size {
				r.err = fmt.Errorf("blob: read %s: %d of %d bytes: %w", r.key, r.read, r.size, io.ErrUnexpectedEOF)
				return 0, r.err
			}
			r.err = io.EOF
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			r.err = err
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	r.read += int64(n)
	return n, nil
}

// fill reads chunk r.next into the buffer.
func (r *dbBlobReader) fill() error {
	if r.bufp == nil {
		r.bufp = chunkBufs.Get().(*[]byte)
	}
	buf := *r.bufp
	n, found := 0, false
	err := r.b.withPgx(r.ctx, func(c *pgx.Conn) error {
		var seqText [20]byte
		res := c.PgConn().ExecParams(r.ctx, "SELECT data FROM blob_chunks WHERE blob_id = $1 AND seq = $2",
			[][]byte{[]byte(r.id), strconv.AppendInt(seqText[:0], int64(r.next), 10)}, nil, nil, []int16{1})
		for res.NextRow() {
			v := res.Values()[0]
			if len(v) > len(buf) {
				_, _ = res.Close()
				return fmt.Errorf("chunk %d is %d bytes, more than %d", r.next, len(v), len(buf))
			}
			n, found = copy(buf, v), true
		}
		_, err := res.Close()
		return err
	})
	if err != nil {
		return fmt.Errorf("blob: read %s: %w", r.key, err)
	}
	if !found {
		// Replaced or deleted since Open: what was read so far is not worth finishing.
		return fmt.Errorf("blob: read %s: chunk %d is gone (the blob was replaced or deleted): %w", r.key, r.next, io.ErrUnexpectedEOF)
	}
	r.cur = buf[:n]
	r.next++
	return nil
}

// Close implements io.Closer; it returns the buffer to the pool.
func (r *dbBlobReader) Close() error {
	if r.bufp != nil {
		chunkBufs.Put(r.bufp)
		r.bufp, r.cur = nil, nil
	}
	if r.err == nil {
		r.err = errors.New("blob: read after close")
	}
	return nil
}
