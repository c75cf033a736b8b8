package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// migrationStrategyStorage adds the storage of agent strategies: small values an agent node's
// strategy keeps between the runs of a conversation, by app and key, as Dify's plugins keep
// them in their session storage (svcvit/agent's TOD keeps the answers collected so far under
// the key the node names, the conversation's id by default).
var migrationStrategyStorage = migration{
	version: 16,
	name:    "agent strategy storage",
	sqlite: `
CREATE TABLE strategy_storage (
	app_id     TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	value      BLOB    NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (app_id, key)
) STRICT;
`,
	postgres: `
CREATE TABLE strategy_storage (
	app_id     TEXT   NOT NULL,
	key        TEXT   NOT NULL,
	value      BYTEA  NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (app_id, key)
);
`,
}

// Bounds of the strategy storage: a key and a value larger than these are refused, as a
// strategy's state is a few answers, not a document.
const (
	MaxStrategyKey   = 256
	MaxStrategyValue = 64 << 10
)

// StrategyValue returns the value an agent strategy of app keeps under key; ok is false when
// there is none.
func (s *Store) StrategyValue(ctx context.Context, appID, key string) (value []byte, ok bool, err error) {
	err = s.conn().QueryRowContext(ctx, s.Rebind("SELECT value FROM strategy_storage WHERE app_id = ? AND key = ?"), appID, key).Scan(&value)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("store: strategy value: %w", mapError(err))
	}
	return value, true, nil
}

// SetStrategyValue keeps value under key for an agent strategy of app, replacing what was there.
func (s *Store) SetStrategyValue(ctx context.Context, appID, key string, value []byte) error {
	if len(key) > MaxStrategyKey || len(value) > MaxStrategyValue {
		return fmt.Errorf("store: strategy value: a key of %d bytes and a value of %d bytes exceed the %d and %d allowed",
			len(key), len(value), MaxStrategyKey, MaxStrategyValue)
	}
	_, err := s.exec(ctx, `INSERT INTO strategy_storage (app_id, key, value, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (app_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		appID, key, value, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("store: set strategy value: %w", err)
	}
	return nil
}

// DeleteStrategyValue removes what an agent strategy of app keeps under key (nothing when
// there is nothing).
func (s *Store) DeleteStrategyValue(ctx context.Context, appID, key string) error {
	if _, err := s.exec(ctx, "DELETE FROM strategy_storage WHERE app_id = ? AND key = ?", appID, key); err != nil {
		return fmt.Errorf("store: delete strategy value: %w", err)
	}
	return nil
}
