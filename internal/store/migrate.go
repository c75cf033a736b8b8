package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// migration is one schema step. The SQL for both engines sits side by side
// so that a reviewer sees them together; each may hold several statements.
//
// Rules: never edit or reorder a migration that has shipped; append a new
// one. Versions are 1, 2, 3 … with no gaps (a test checks this).
type migration struct {
	version  int64
	name     string
	sqlite   string
	postgres string
}

func (m migration) sql(dialect string) string {
	if dialect == DialectPostgres {
		return m.postgres
	}
	return m.sqlite
}

// migrations is the ordered schema history.
//
// SQLite tables are STRICT so that a value of the wrong type is rejected, as
// PostgreSQL would reject it, instead of being stored silently.
var migrations = []migration{
	{
		version: 1,
		name:    "workspace, apps, api_keys",
		sqlite: `
CREATE TABLE workspace (
	singleton  INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1),
	id         TEXT    NOT NULL UNIQUE,
	name       TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE apps (
	id         TEXT    NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL UNIQUE,
	mode       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
	id           TEXT    NOT NULL PRIMARY KEY,
	type         TEXT    NOT NULL CHECK (type IN ('app', 'dataset')),
	app_id       TEXT    REFERENCES apps (id),
	token_hash   BLOB    NOT NULL UNIQUE,
	prefix       TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER,
	CHECK ((type = 'app') = (app_id IS NOT NULL))
) STRICT;

CREATE INDEX api_keys_app_id ON api_keys (app_id);
CREATE INDEX api_keys_created_at ON api_keys (created_at);
`,
		postgres: `
CREATE TABLE workspace (
	singleton  SMALLINT NOT NULL PRIMARY KEY CHECK (singleton = 1),
	id         TEXT     NOT NULL UNIQUE,
	name       TEXT     NOT NULL,
	created_at BIGINT   NOT NULL
);

CREATE TABLE apps (
	id         TEXT   NOT NULL PRIMARY KEY,
	name       TEXT   NOT NULL UNIQUE,
	mode       TEXT   NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
	id           TEXT   NOT NULL PRIMARY KEY,
	type         TEXT   NOT NULL CHECK (type IN ('app', 'dataset')),
	app_id       TEXT   REFERENCES apps (id),
	token_hash   BYTEA  NOT NULL UNIQUE,
	prefix       TEXT   NOT NULL,
	created_at   BIGINT NOT NULL,
	last_used_at BIGINT,
	revoked_at   BIGINT,
	CHECK ((type = 'app') = (app_id IS NOT NULL))
);

CREATE INDEX api_keys_app_id ON api_keys (app_id);
CREATE INDEX api_keys_created_at ON api_keys (created_at);
`,
	},
	{
		// JSON columns (inputs, metadata) are TEXT on both engines, not
		// JSONB: the bytes a caller stored are the bytes it reads back
		// (JSONB would reorder keys), and Go validates them on write.
		// Money amounts are decimal strings, never floats.
		//
		// The partial indexes serve ListConversations (keyset pagination on
		// (sort column, id) within one app and end user, live rows only);
		// messages_conversation_created serves ListMessages and
		// RecentMessages.
		version: 2,
		name:    "end_users, conversations, messages, feedbacks, files",
		sqlite: `
CREATE TABLE end_users (
	id         TEXT    NOT NULL PRIMARY KEY,
	app_id     TEXT    NOT NULL REFERENCES apps (id),
	session_id TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (app_id, session_id)
) STRICT;

CREATE TABLE conversations (
	id           TEXT    NOT NULL PRIMARY KEY,
	app_id       TEXT    NOT NULL REFERENCES apps (id),
	end_user_id  TEXT    NOT NULL REFERENCES end_users (id),
	name         TEXT    NOT NULL,
	inputs       TEXT    NOT NULL,
	status       TEXT    NOT NULL CHECK (status IN ('normal', 'ended')),
	introduction TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	deleted_at   INTEGER
) STRICT;

CREATE INDEX conversations_user_updated ON conversations (app_id, end_user_id, updated_at, id) WHERE deleted_at IS NULL;
CREATE INDEX conversations_user_created ON conversations (app_id, end_user_id, created_at, id) WHERE deleted_at IS NULL;

CREATE TABLE messages (
	id                        TEXT    NOT NULL PRIMARY KEY,
	app_id                    TEXT    NOT NULL REFERENCES apps (id),
	conversation_id           TEXT    NOT NULL REFERENCES conversations (id),
	end_user_id               TEXT    NOT NULL REFERENCES end_users (id),
	parent_message_id         TEXT    REFERENCES messages (id),
	query                     TEXT    NOT NULL,
	answer                    TEXT    NOT NULL,
	inputs                    TEXT    NOT NULL,
	status                    TEXT    NOT NULL CHECK (status IN ('running', 'normal', 'error', 'stopped')),
	error                     TEXT,
	message_tokens            INTEGER NOT NULL,
	answer_tokens             INTEGER NOT NULL,
	total_tokens              INTEGER NOT NULL,
	message_unit_price        TEXT    NOT NULL,
	answer_unit_price         TEXT    NOT NULL,
	price_unit                TEXT    NOT NULL,
	total_price               TEXT    NOT NULL,
	currency                  TEXT    NOT NULL,
	provider_response_latency REAL    NOT NULL,
	task_id                   TEXT    NOT NULL,
	model_provider            TEXT    NOT NULL,
	model_id                  TEXT    NOT NULL,
	metadata                  TEXT    NOT NULL,
	created_at                INTEGER NOT NULL,
	updated_at                INTEGER NOT NULL
) STRICT;

CREATE INDEX messages_conversation_created ON messages (conversation_id, created_at, id);

CREATE TABLE message_feedbacks (
	id               TEXT    NOT NULL PRIMARY KEY,
	app_id           TEXT    NOT NULL REFERENCES apps (id),
	conversation_id  TEXT    NOT NULL REFERENCES conversations (id),
	message_id       TEXT    NOT NULL UNIQUE REFERENCES messages (id),
	rating           TEXT    NOT NULL CHECK (rating IN ('like', 'dislike')),
	content          TEXT,
	from_source      TEXT    NOT NULL CHECK (from_source IN ('user', 'admin')),
	from_end_user_id TEXT    REFERENCES end_users (id),
	from_account_id  TEXT,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
) STRICT;

CREATE INDEX message_feedbacks_app_created ON message_feedbacks (app_id, created_at, id);

CREATE TABLE upload_files (
	id          TEXT    NOT NULL PRIMARY KEY,
	app_id      TEXT    REFERENCES apps (id),
	end_user_id TEXT    REFERENCES end_users (id),
	name        TEXT    NOT NULL,
	size        INTEGER NOT NULL CHECK (size >= 0),
	extension   TEXT    NOT NULL,
	mime_type   TEXT    NOT NULL,
	storage_key TEXT    NOT NULL UNIQUE,
	hash        TEXT    NOT NULL,
	source_url  TEXT,
	created_by  TEXT    NOT NULL,
	created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE message_files (
	id              TEXT    NOT NULL PRIMARY KEY,
	message_id      TEXT    NOT NULL REFERENCES messages (id),
	type            TEXT    NOT NULL,
	transfer_method TEXT    NOT NULL CHECK (transfer_method IN ('remote_url', 'local_file', 'tool_file')),
	url             TEXT,
	upload_file_id  TEXT    REFERENCES upload_files (id),
	belongs_to      TEXT    NOT NULL CHECK (belongs_to IN ('user', 'assistant')),
	created_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX message_files_message_id ON message_files (message_id, created_at, id);
CREATE INDEX message_files_upload_file_id ON message_files (upload_file_id);
`,
		postgres: `
CREATE TABLE end_users (
	id         TEXT   NOT NULL PRIMARY KEY,
	app_id     TEXT   NOT NULL REFERENCES apps (id),
	session_id TEXT   NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	UNIQUE (app_id, session_id)
);

CREATE TABLE conversations (
	id           TEXT   NOT NULL PRIMARY KEY,
	app_id       TEXT   NOT NULL REFERENCES apps (id),
	end_user_id  TEXT   NOT NULL REFERENCES end_users (id),
	name         TEXT   NOT NULL,
	inputs       TEXT   NOT NULL,
	status       TEXT   NOT NULL CHECK (status IN ('normal', 'ended')),
	introduction TEXT   NOT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	deleted_at   BIGINT
);

CREATE INDEX conversations_user_updated ON conversations (app_id, end_user_id, updated_at, id) WHERE deleted_at IS NULL;
CREATE INDEX conversations_user_created ON conversations (app_id, end_user_id, created_at, id) WHERE deleted_at IS NULL;

CREATE TABLE messages (
	id                        TEXT             NOT NULL PRIMARY KEY,
	app_id                    TEXT             NOT NULL REFERENCES apps (id),
	conversation_id           TEXT             NOT NULL REFERENCES conversations (id),
	end_user_id               TEXT             NOT NULL REFERENCES end_users (id),
	parent_message_id         TEXT             REFERENCES messages (id),
	query                     TEXT             NOT NULL,
	answer                    TEXT             NOT NULL,
	inputs                    TEXT             NOT NULL,
	status                    TEXT             NOT NULL CHECK (status IN ('running', 'normal', 'error', 'stopped')),
	error                     TEXT,
	message_tokens            BIGINT           NOT NULL,
	answer_tokens             BIGINT           NOT NULL,
	total_tokens              BIGINT           NOT NULL,
	message_unit_price        TEXT             NOT NULL,
	answer_unit_price         TEXT             NOT NULL,
	price_unit                TEXT             NOT NULL,
	total_price               TEXT             NOT NULL,
	currency                  TEXT             NOT NULL,
	provider_response_latency DOUBLE PRECISION NOT NULL,
	task_id                   TEXT             NOT NULL,
	model_provider            TEXT             NOT NULL,
	model_id                  TEXT             NOT NULL,
	metadata                  TEXT             NOT NULL,
	created_at                BIGINT           NOT NULL,
	updated_at                BIGINT           NOT NULL
);

CREATE INDEX messages_conversation_created ON messages (conversation_id, created_at, id);

CREATE TABLE message_feedbacks (
	id               TEXT   NOT NULL PRIMARY KEY,
	app_id           TEXT   NOT NULL REFERENCES apps (id),
	conversation_id  TEXT   NOT NULL REFERENCES conversations (id),
	message_id       TEXT   NOT NULL UNIQUE REFERENCES messages (id),
	rating           TEXT   NOT NULL CHECK (rating IN ('like', 'dislike')),
	content          TEXT,
	from_source      TEXT   NOT NULL CHECK (from_source IN ('user', 'admin')),
	from_end_user_id TEXT   REFERENCES end_users (id),
	from_account_id  TEXT,
	created_at       BIGINT NOT NULL,
	updated_at       BIGINT NOT NULL
);

CREATE INDEX message_feedbacks_app_created ON message_feedbacks (app_id, created_at, id);

CREATE TABLE upload_files (
	id          TEXT   NOT NULL PRIMARY KEY,
	app_id      TEXT   REFERENCES apps (id),
	end_user_id TEXT   REFERENCES end_users (id),
	name        TEXT   NOT NULL,
	size        BIGINT NOT NULL CHECK (size >= 0),
	extension   TEXT   NOT NULL,
	mime_type   TEXT   NOT NULL,
	storage_key TEXT   NOT NULL UNIQUE,
	hash        TEXT   NOT NULL,
	source_url  TEXT,
	created_by  TEXT   NOT NULL,
	created_at  BIGINT NOT NULL
);

CREATE TABLE message_files (
	id              TEXT   NOT NULL PRIMARY KEY,
	message_id      TEXT   NOT NULL REFERENCES messages (id),
	type            TEXT   NOT NULL,
	transfer_method TEXT   NOT NULL CHECK (transfer_method IN ('remote_url', 'local_file', 'tool_file')),
	url             TEXT,
	upload_file_id  TEXT   REFERENCES upload_files (id),
	belongs_to      TEXT   NOT NULL CHECK (belongs_to IN ('user', 'assistant')),
	created_at      BIGINT NOT NULL
);

CREATE INDEX message_files_message_id ON message_files (message_id, created_at, id);
CREATE INDEX message_files_upload_file_id ON message_files (upload_file_id);
`,
	},
	migrationKnowledge,
	migrationKnowledgeExtras,
	migrationRunningMessages,
	migrationImportedApps,
	migrationAgentThoughts,
	migrationAgents,
	migrationToolProviders,
	migrationWorkflowRuns,
	migrationAnnotations,
	migrationHumanInput,
	migrationBlobs,
	migrationJobs,
	migrationIndexChanges,
	migrationStrategyStorage,
	migrationMCPServers,
	migrationLimits,
	migrationIdempotency,
	migrationJobTraces,
	migrationSites,
	migrationExternalKnowledge,
	migrationTriggers,
}

// schemaMigrationsDDL is the same on both engines.
const schemaMigrationsDDL = `
CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT NOT NULL PRIMARY KEY,
	name       TEXT   NOT NULL,
	applied_at BIGINT NOT NULL
)`

// LatestSchemaVersion is the schema version this build migrates to.
func LatestSchemaVersion() int64 {
	return migrations[len(migrations)-1].version
}

// Migrate brings the schema up to [LatestSchemaVersion]. Each migration runs
// in its own transaction and records its version in schema_migrations, so a
// failure leaves the database at the last good version. Running it again is a
// no-op. It refuses to run against a database migrated by a newer build.
// Concurrent calls are safe: SQLite serialises them on its write lock,
// PostgreSQL on an advisory lock.
func (s *Store) Migrate(ctx context.Context) error {
	var current int64
	err := s.withMigrationLock(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, schemaMigrationsDDL); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var err error
		current, err = schemaVersion(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if latest := LatestSchemaVersion(); current > latest {
		return fmt.Errorf("store: migrate: database schema version %d is newer than this build supports (%d); upgrade Parley", current, latest)
	}

	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		err := s.withMigrationLock(ctx, func(tx *sql.Tx) error {
			// Re-check under the lock: another process may have applied
			// it since we read the version.
			var n int
			if err := tx.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM schema_migrations WHERE version = ?"), m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql(s.dialect)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, s.Rebind("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"),
				m.version, m.name, time.Now().Unix())
			return err
		})
		if err != nil {
			return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

// SchemaVersion returns the highest applied migration version, or 0 for a
// database that has never been migrated.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	v, err := schemaVersion(ctx, s.db)
	if err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	return v, nil
}

func schemaVersion(ctx context.Context, q execer) (int64, error) {
	var v sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&v)
	if err != nil {
		if isUndefinedTable(err) {
			return 0, nil
		}
		return 0, err
	}
	return v.Int64, nil
}

// withMigrationLock runs fn in a transaction that holds the engine's
// migration lock: the write lock on SQLite (BEGIN IMMEDIATE), an advisory
// transaction lock on PostgreSQL.
func (s *Store) withMigrationLock(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.WithTx(ctx, func(tx *sql.Tx) error {
		if s.dialect == DialectPostgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgMigrationLockID)); err != nil {
				return fmt.Errorf("take migration lock: %w", err)
			}
		}
		return fn(tx)
	})
}

// isUndefinedTable reports a query against a table that does not exist.
func isUndefinedTable(err error) bool {
	if isPostgresCode(err, "42P01") {
		return true
	}
	// SQLite reports it only as a generic SQLITE_ERROR with this message.
	return strings.Contains(err.Error(), "no such table")
}
