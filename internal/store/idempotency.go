package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// migrationIdempotency adds the idempotency keys of the requests that start work: per API key
// and client key, the fingerprint of the first request and, once it was answered, its answer
// (status, content type, body), which a retry of the same request gets again.
var migrationIdempotency = migration{
	version: 19,
	name:    "idempotency keys",
	sqlite: `
CREATE TABLE idempotency_keys (
	scope           TEXT    NOT NULL,
	key             TEXT    NOT NULL,
	request_hash    BLOB    NOT NULL,
	status          TEXT    NOT NULL,
	response_status INTEGER NOT NULL DEFAULT 0,
	content_type    TEXT    NOT NULL DEFAULT '',
	body            BLOB,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	PRIMARY KEY (scope, key)
) STRICT;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
`,
	postgres: `
CREATE TABLE idempotency_keys (
	scope           TEXT    NOT NULL,
	key             TEXT    NOT NULL,
	request_hash    BYTEA   NOT NULL,
	status          TEXT    NOT NULL,
	response_status INTEGER NOT NULL DEFAULT 0,
	content_type    TEXT    NOT NULL DEFAULT '',
	body            BYTEA,
	created_at      BIGINT  NOT NULL,
	updated_at      BIGINT  NOT NULL,
	PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
`,
}

// Statuses of an idempotency key.
const (
	IdempotencyRunning = "running"
	IdempotencyDone    = "done"
)

// Idempotent is an idempotency key's record.
type Idempotent struct {
	Scope, Key  string
	RequestHash []byte
	// Status is IdempotencyRunning while the first request is answered, IdempotencyDone after.
	Status string
	// ResponseStatus, ContentType and Body are the answer, once done.
	ResponseStatus int
	ContentType    string
	Body           []byte
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// BeginIdempotent claims an idempotency key for a request whose fingerprint is hash: when the
// key is new, or its record was made before expiredBefore, or it is still running but has not
// been touched since staleBefore (its server died), the record starts again, running, and
// began is true. Otherwise the record as it is comes back, for the caller to replay, refuse or
// report a mismatch. Two requests racing for one key: one begins, the other gets the record.
func (s *Store) BeginIdempotent(ctx context.Context, scope, key string, hash []byte, now, expiredBefore, staleBefore time.Time) (rec Idempotent, began bool, err error) {
	res, err := s.exec(ctx, `INSERT INTO idempotency_keys (scope, key, request_hash, status, response_status, content_type, body, created_at, updated_at)
VALUES (?, ?, ?, ?, 0, '', NULL, ?, ?)
ON CONFLICT (scope, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status, response_status = 0,
	content_type = '', body = NULL, created_at = excluded.created_at, updated_at = excluded.updated_at
WHERE idempotency_keys.created_at < ? OR (idempotency_keys.status = ? AND idempotency_keys.updated_at < ?)`,
		scope, key, hash, IdempotencyRunning, now.Unix(), now.Unix(), expiredBefore.Unix(), IdempotencyRunning, staleBefore.Unix())
	if err != nil {
		return Idempotent{}, false, fmt.Errorf("store: begin idempotent request: %w", mapError(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return Idempotent{Scope: scope, Key: key, RequestHash: hash, Status: IdempotencyRunning, CreatedAt: now, UpdatedAt: now}, true, nil
	}
	var (
		body             []byte
		created, updated int64
	)
	rec = Idempotent{Scope: scope, Key: key}
	err = s.conn().QueryRowContext(ctx, s.Rebind(`SELECT request_hash, status, response_status, content_type, body, created_at, updated_at
FROM idempotency_keys WHERE scope = ? AND key = ?`), scope, key).Scan(&rec.RequestHash, &rec.Status, &rec.ResponseStatus, &rec.ContentType,
		&body, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		// Removed in between (its request failed): the caller may try again.
		return Idempotent{}, false, fmt.Errorf("store: idempotent request: %w", ErrConflict)
	}
	if err != nil {
		return Idempotent{}, false, fmt.Errorf("store: idempotent request: %w", mapError(err))
	}
	rec.Body, rec.CreatedAt, rec.UpdatedAt = body, fromUnix(created), fromUnix(updated)
	return rec, false, nil
}

// TouchIdempotent records that the running request of a key still runs (its server is alive).
func (s *Store) TouchIdempotent(ctx context.Context, scope, key string, now time.Time) error {
	if _, err := s.exec(ctx, "UPDATE idempotency_keys SET updated_at = ? WHERE scope = ? AND key = ? AND status = ?",
		now.Unix(), scope, key, IdempotencyRunning); err != nil {
		return fmt.Errorf("store: touch idempotent request: %w", err)
	}
	return nil
}

// FinishIdempotent keeps the answer of a key's request, for its retries.
func (s *Store) FinishIdempotent(ctx context.Context, scope, key string, status int, contentType string, body []byte, now time.Time) error {
	if _, err := s.exec(ctx, `UPDATE idempotency_keys SET status = ?, response_status = ?, content_type = ?, body = ?, updated_at = ?
WHERE scope = ? AND key = ?`, IdempotencyDone, status, contentType, body, now.Unix(), scope, key); err != nil {
		return fmt.Errorf("store: finish idempotent request: %w", err)
	}
	return nil
}

// ForgetIdempotent removes a key's record: its request failed before doing anything a retry
// should not do again, or its answer cannot be kept.
func (s *Store) ForgetIdempotent(ctx context.Context, scope, key string) error {
	if _, err := s.exec(ctx, "DELETE FROM idempotency_keys WHERE scope = ? AND key = ?", scope, key); err != nil {
		return fmt.Errorf("store: forget idempotent request: %w", err)
	}
	return nil
}

// ForgetRunningIdempotent removes the records of every request still running: those of a
// predecessor that died, for a server alone on its database, whose retries may then run again.
func (s *Store) ForgetRunningIdempotent(ctx context.Context) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM idempotency_keys WHERE status = ?", IdempotencyRunning)
	if err != nil {
		return 0, fmt.Errorf("store: forget running idempotency keys: %w", err)
	}
	return res.RowsAffected()
}

// DeleteIdempotentBefore removes the records made before t (expired keys).
func (s *Store) DeleteIdempotentBefore(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM idempotency_keys WHERE created_at < ?", t.Unix())
	if err != nil {
		return 0, fmt.Errorf("store: delete expired idempotency keys: %w", err)
	}
	return res.RowsAffected()
}
