package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// API key types, as stored in api_keys.type (Dify's ApiToken.type values).
const (
	APIKeyTypeApp     = "app"
	APIKeyTypeDataset = "dataset"
)

// migrationLimits adds the lifetimes and rate limits of API keys (an expiry; requests per
// minute, tokens per day and workflow runs per day) and the rate limits of apps (the same
// three; an app of the config file takes them from the file, an imported app from
// `parley apps limits`). Zero is no limit.
var migrationLimits = migration{
	version: 18,
	name:    "key lifetimes, key and app rate limits",
	sqlite: `
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
ALTER TABLE api_keys ADD COLUMN requests_per_minute INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN tokens_per_day INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN workflow_runs_per_day INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN requests_per_minute INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN tokens_per_day INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN workflow_runs_per_day INTEGER NOT NULL DEFAULT 0;
`,
	postgres: `
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN requests_per_minute BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN tokens_per_day BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN workflow_runs_per_day BIGINT NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN requests_per_minute BIGINT NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN tokens_per_day BIGINT NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN workflow_runs_per_day BIGINT NOT NULL DEFAULT 0;
`,
}

// Limits are rate limits: requests per minute, tokens per day and workflow runs per day (UTC
// days); zero is no limit.
type Limits struct {
	RequestsPerMinute  int64
	TokensPerDay       int64
	WorkflowRunsPerDay int64
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// APIKey is a stored API key. Only the SHA-256 hash of the secret is kept;
// Prefix is a short, non-secret part of it for display.
type APIKey struct {
	ID string
	// Type is APIKeyTypeApp or APIKeyTypeDataset.
	Type string
	// AppID is the app an app key belongs to; empty for dataset keys.
	AppID      string
	TokenHash  []byte
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time // nil if never used
	RevokedAt  *time.Time // nil while the key is valid
	// ExpiresAt is when the key stops working; nil for never.
	ExpiresAt *time.Time
	Limits    Limits
}

func (k APIKey) validate() error {
	switch {
	case k.ID == "":
		return errors.New("missing id")
	case len(k.TokenHash) == 0:
		return errors.New("missing token hash")
	case k.Prefix == "":
		return errors.New("missing prefix")
	}
	switch k.Type {
	case APIKeyTypeApp:
		if k.AppID == "" {
			return errors.New("app key without app id")
		}
	case APIKeyTypeDataset:
		if k.AppID != "" {
			return errors.New("dataset key with an app id")
		}
	default:
		return fmt.Errorf("unknown key type %q", k.Type)
	}
	return nil
}

// CreateAPIKey stores a new key, with its expiry and limits. CreatedAt defaults to now;
// LastUsedAt and RevokedAt are ignored. A duplicate id or hash gives an error wrapping
// [ErrConflict]; an app key for an unknown app one wrapping [ErrNotFound].
func (s *Store) CreateAPIKey(ctx context.Context, k APIKey) error {
	if err := k.validate(); err != nil {
		return fmt.Errorf("store: create api key: %w", err)
	}
	created := k.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	var appID sql.NullString
	if k.AppID != "" {
		appID = sql.NullString{String: k.AppID, Valid: true}
	}
	_, err := s.exec(ctx,
		"INSERT INTO api_keys (id, type, app_id, token_hash, prefix, created_at, expires_at, requests_per_minute, tokens_per_day, workflow_runs_per_day)"+
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		k.ID, k.Type, appID, k.TokenHash, k.Prefix, created.Unix(), nullUnix(k.ExpiresAt),
		k.Limits.RequestsPerMinute, k.Limits.TokensPerDay, k.Limits.WorkflowRunsPerDay)
	switch {
	case err == nil:
		return nil
	case isForeignKeyViolation(err):
		return fmt.Errorf("store: create api key: app %s: %w", k.AppID, ErrNotFound)
	default:
		return fmt.Errorf("store: create api key: %w", err)
	}
}

const apiKeyColumns = "id, type, app_id, token_hash, prefix, created_at, last_used_at, revoked_at, expires_at, " +
	"requests_per_minute, tokens_per_day, workflow_runs_per_day"

// APIKeyByHash returns the key whose token hash equals hash, revoked or not
// (RevokedAt tells); the caller decides what a revoked key means. An unknown
// hash gives an error wrapping [ErrNotFound].
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (APIKey, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+apiKeyColumns+" FROM api_keys WHERE token_hash = ?"), hash)
	k, err := scanAPIKey(row)
	if errors.Is(err, sql.ErrNoRows) {
		return APIKey{}, fmt.Errorf("store: api key: %w", ErrNotFound)
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("store: api key by hash: %w", err)
	}
	return k, nil
}

// ListAPIKeys returns every key, revoked ones included, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context) ([]APIKey, error) {
	keys, err := queryAll(ctx, s.conn(), scanAPIKey, "SELECT "+apiKeyColumns+" FROM api_keys ORDER BY created_at, id")
	if err != nil {
		return nil, fmt.Errorf("store: list api keys: %w", err)
	}
	return keys, nil
}

// RevokeAPIKey marks a key revoked now. It returns an error wrapping
// [ErrNotFound] if there is no such key or it is already revoked.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) error {
	res, err := s.exec(ctx, "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", time.Now().Unix(), id)
	if err != nil {
		return fmt.Errorf("store: revoke api key %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: revoke api key %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("store: revoke api key %s: %w", id, ErrNotFound)
	}
	return nil
}

// ExpireAPIKey makes a live key stop working at the time given (if it would work longer): the
// grace period of a rotated key. It returns an error wrapping [ErrNotFound] if there is no such
// live key.
func (s *Store) ExpireAPIKey(ctx context.Context, id string, at time.Time) error {
	sec := at.Unix()
	res, err := s.exec(ctx, "UPDATE api_keys SET expires_at = ? WHERE id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
		sec, id, sec)
	if err != nil {
		return fmt.Errorf("store: expire api key %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err == nil {
			err = ErrNotFound
		}
		return fmt.Errorf("store: expire api key %s: %w", id, err)
	}
	return nil
}

// APIKeyByID returns the key with the id (revoked or not); an error wrapping [ErrNotFound] if
// there is none.
func (s *Store) APIKeyByID(ctx context.Context, id string) (APIKey, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+apiKeyColumns+" FROM api_keys WHERE id = ?"), id)
	k, err := scanAPIKey(row)
	if errors.Is(err, sql.ErrNoRows) {
		return APIKey{}, fmt.Errorf("store: api key %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("store: api key %s: %w", id, err)
	}
	return k, nil
}

// TouchAPIKey records that the key was used at the given time. It is a
// single indexed UPDATE that only ever moves last_used_at forward; an
// unknown id or an older time is silently a no-op.
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	sec := at.Unix()
	_, err := s.exec(ctx,
		"UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
		sec, id, sec)
	if err != nil {
		return fmt.Errorf("store: touch api key %s: %w", id, err)
	}
	return nil
}

func scanAPIKey(r scanner) (APIKey, error) {
	var (
		k                 APIKey
		appID             sql.NullString
		created           int64
		lastUsed, revoked sql.NullInt64
		expires           sql.NullInt64
	)
	if err := r.Scan(&k.ID, &k.Type, &appID, &k.TokenHash, &k.Prefix, &created, &lastUsed, &revoked, &expires,
		&k.Limits.RequestsPerMinute, &k.Limits.TokensPerDay, &k.Limits.WorkflowRunsPerDay); err != nil {
		return APIKey{}, err
	}
	k.ExpiresAt = fromNullUnix(expires)
	k.AppID = appID.String
	k.CreatedAt = fromUnix(created)
	k.LastUsedAt = fromNullUnix(lastUsed)
	k.RevokedAt = fromNullUnix(revoked)
	return k, nil
}
