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

// CreateAPIKey stores a new key. CreatedAt defaults to now; LastUsedAt and
// RevokedAt are ignored. A duplicate id or hash gives an error wrapping
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
		"INSERT INTO api_keys (id, type, app_id, token_hash, prefix, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		k.ID, k.Type, appID, k.TokenHash, k.Prefix, created.Unix())
	switch {
	case err == nil:
		return nil
	case isForeignKeyViolation(err):
		return fmt.Errorf("store: create api key: app %s: %w", k.AppID, ErrNotFound)
	default:
		return fmt.Errorf("store: create api key: %w", err)
	}
}

const apiKeyColumns = "id, type, app_id, token_hash, prefix, created_at, last_used_at, revoked_at"

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
	)
	if err := r.Scan(&k.ID, &k.Type, &appID, &k.TokenHash, &k.Prefix, &created, &lastUsed, &revoked); err != nil {
		return APIKey{}, err
	}
	k.AppID = appID.String
	k.CreatedAt = fromUnix(created)
	k.LastUsedAt = fromNullUnix(lastUsed)
	k.RevokedAt = fromNullUnix(revoked)
	return k, nil
}
