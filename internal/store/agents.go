package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Agent statuses, the values of agents.status.
const (
	AgentActive   = "active"
	AgentArchived = "archived"
)

// Agent is the Agent an Agent app (mode agent) is bound to: its draft configuration and, once
// published, the active published version the API runs.
type Agent struct {
	ID    string
	AppID string
	Name  string
	// Status is AgentActive or AgentArchived; only an active agent is bound to its app.
	Status string
	// Draft is the configuration being edited (JSON).
	Draft string
	// ActiveVersionID names the published version the API runs; empty until the first publish.
	ActiveVersionID string
	// Active is that version, when there is one.
	Active    *AgentVersion
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AgentVersion is an immutable published snapshot of an Agent's configuration.
type AgentVersion struct {
	ID      string
	AgentID string
	// Version counts the agent's versions from 1.
	Version   int64
	Config    string
	CreatedAt time.Time
}

// migrationAgents stores the Agents that Agent apps are bound to. As in Dify, an Agent is its
// own resource: a draft configuration that is edited, and immutable numbered versions that
// publishing snapshots from it; the agent names the version the API runs. An app has at most
// one active (bound) agent; an archived agent keeps its versions but binds nothing.
//
// Every change of an agent also bumps its app's revision, in the same transaction, so servers
// that cache the app see the change on the next request.
var migrationAgents = migration{
	version: 8,
	name:    "agents bound to agent apps, agent versions",
	sqlite: `
CREATE TABLE agents (
	id                TEXT    NOT NULL PRIMARY KEY,
	app_id            TEXT    NOT NULL REFERENCES apps (id),
	name              TEXT    NOT NULL,
	status            TEXT    NOT NULL CHECK (status IN ('active', 'archived')),
	draft             TEXT    NOT NULL,
	active_version_id TEXT,
	created_at        INTEGER NOT NULL,
	updated_at        INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX agents_bound_app ON agents (app_id) WHERE status = 'active';

CREATE TABLE agent_versions (
	id         TEXT    NOT NULL PRIMARY KEY,
	agent_id   TEXT    NOT NULL REFERENCES agents (id),
	version    INTEGER NOT NULL CHECK (version >= 1),
	config     TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	UNIQUE (agent_id, version)
) STRICT;
`,
	postgres: `
CREATE TABLE agents (
	id                TEXT   NOT NULL PRIMARY KEY,
	app_id            TEXT   NOT NULL REFERENCES apps (id),
	name              TEXT   NOT NULL,
	status            TEXT   NOT NULL CHECK (status IN ('active', 'archived')),
	draft             TEXT   NOT NULL,
	active_version_id TEXT,
	created_at        BIGINT NOT NULL,
	updated_at        BIGINT NOT NULL
);

CREATE UNIQUE INDEX agents_bound_app ON agents (app_id) WHERE status = 'active';

CREATE TABLE agent_versions (
	id         TEXT   NOT NULL PRIMARY KEY,
	agent_id   TEXT   NOT NULL REFERENCES agents (id),
	version    BIGINT NOT NULL CHECK (version >= 1),
	config     TEXT   NOT NULL,
	created_at BIGINT NOT NULL,
	UNIQUE (agent_id, version)
);
`,
}

// CreateAgentApp stores a new imported Agent app and the Agent it is bound to, with draft as
// the agent's unpublished configuration, in one transaction. A name held by another app gives
// an error wrapping [ErrConflict].
func (s *Store) CreateAgentApp(ctx context.Context, name, mode, definition, agentName, draft string) (App, error) {
	if name == "" || mode == "" || definition == "" || agentName == "" || draft == "" {
		return App{}, errors.New("store: create agent app: name, mode, definition, agent name and draft are required")
	}
	now := time.Now().UTC().Truncate(time.Second)
	a := App{ID: uuid.NewString(), Name: name, Mode: mode, Source: AppSourceImport, Definition: definition,
		Revision: 1, CreatedAt: now, UpdatedAt: now}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.inTx(tx).ExecContext(ctx, s.Rebind(`INSERT INTO apps (id, name, mode, source, definition, revision, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), a.ID, a.Name, a.Mode, a.Source, definition, a.Revision, now.Unix(), now.Unix()); err != nil {
			return mapError(err)
		}
		_, err := s.inTx(tx).ExecContext(ctx, s.Rebind(`INSERT INTO agents (id, app_id, name, status, draft, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`), uuid.NewString(), a.ID, agentName, AgentActive, draft, now.Unix(), now.Unix())
		return mapError(err)
	})
	if err != nil {
		return App{}, fmt.Errorf("store: create agent app %q: %w", name, err)
	}
	return a, nil
}

const agentColumns = `a.id, a.app_id, a.name, a.status, a.draft, a.active_version_id, a.created_at, a.updated_at,
v.id, v.version, v.config, v.created_at`

// BoundAgent returns the active agent bound to the app, with its active published version if
// it has one. An app without one gives an error wrapping [ErrNotFound].
func (s *Store) BoundAgent(ctx context.Context, appID string) (Agent, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind(`SELECT `+agentColumns+` FROM agents a
LEFT JOIN agent_versions v ON v.id = a.active_version_id
WHERE a.app_id = ? AND a.status = ?`), appID, AgentActive)
	var (
		ag                   Agent
		active, vid, vconfig sql.NullString
		vversion, vcreated   sql.NullInt64
		created, updated     int64
	)
	err := row.Scan(&ag.ID, &ag.AppID, &ag.Name, &ag.Status, &ag.Draft, &active, &created, &updated,
		&vid, &vversion, &vconfig, &vcreated)
	if errors.Is(err, sql.ErrNoRows) {
		return Agent{}, fmt.Errorf("store: agent of app %s: %w", appID, ErrNotFound)
	}
	if err != nil {
		return Agent{}, fmt.Errorf("store: agent of app %s: %w", appID, err)
	}
	ag.ActiveVersionID = active.String
	ag.CreatedAt, ag.UpdatedAt = fromUnix(created), fromUnix(updated)
	if vid.Valid {
		ag.Active = &AgentVersion{ID: vid.String, AgentID: ag.ID, Version: vversion.Int64, Config: vconfig.String,
			CreatedAt: fromUnix(vcreated.Int64)}
	}
	return ag, nil
}

// changeAgent runs fn on the active agent bound to the live app appID, after bumping the app's
// revision (which also locks the app's row on PostgreSQL, so concurrent changes of one app run
// one after the other). An app without a bound agent gives an error wrapping [ErrNotFound].
func (s *Store) changeAgent(ctx context.Context, appID string, fn func(tx *sql.Tx, agentID string, now int64) error) error {
	now := time.Now().Unix()
	return s.WithTx(ctx, func(tx *sql.Tx) error {
		err := oneRow(s.inTx(tx).ExecContext(ctx, s.Rebind(`UPDATE apps SET revision = revision + 1, updated_at = ?
WHERE id = ? AND deleted_at IS NULL`), now, appID))
		if err != nil {
			return err
		}
		var agentID string
		err = s.inTx(tx).QueryRowContext(ctx, s.Rebind("SELECT id FROM agents WHERE app_id = ? AND status = ?"), appID, AgentActive).Scan(&agentID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		return fn(tx, agentID, now)
	})
}

// SaveAgentDraft replaces the draft of the agent bound to the app; the published versions and
// the one the API runs stay as they are.
func (s *Store) SaveAgentDraft(ctx context.Context, appID, name, draft string) error {
	if draft == "" || name == "" {
		return errors.New("store: save agent draft: name and draft are required")
	}
	err := s.changeAgent(ctx, appID, func(tx *sql.Tx, agentID string, now int64) error {
		_, err := s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE agents SET draft = ?, name = ?, updated_at = ? WHERE id = ?"),
			draft, name, now, agentID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: save agent draft of app %s: %w", appID, err)
	}
	return nil
}

// PublishAgent snapshots the draft of the agent bound to the app as its next version and makes
// that version the one the API runs.
func (s *Store) PublishAgent(ctx context.Context, appID string) (AgentVersion, error) {
	var v AgentVersion
	err := s.changeAgent(ctx, appID, func(tx *sql.Tx, agentID string, now int64) error {
		v = AgentVersion{ID: uuid.NewString(), AgentID: agentID, CreatedAt: fromUnix(now)}
		if err := s.inTx(tx).QueryRowContext(ctx, s.Rebind(`SELECT draft,
(SELECT COALESCE(MAX(version), 0) + 1 FROM agent_versions WHERE agent_id = ?) FROM agents WHERE id = ?`), agentID, agentID).
			Scan(&v.Config, &v.Version); err != nil {
			return err
		}
		if _, err := s.inTx(tx).ExecContext(ctx, s.Rebind(`INSERT INTO agent_versions (id, agent_id, version, config, created_at)
VALUES (?, ?, ?, ?, ?)`), v.ID, agentID, v.Version, v.Config, now); err != nil {
			return mapError(err)
		}
		_, err := s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE agents SET active_version_id = ?, updated_at = ? WHERE id = ?"), v.ID, now, agentID)
		return err
	})
	if err != nil {
		return AgentVersion{}, fmt.Errorf("store: publish agent of app %s: %w", appID, err)
	}
	return v, nil
}

// ArchiveAgent archives the agent bound to the app: the app then has no bound agent. The
// agent's row and versions stay.
func (s *Store) ArchiveAgent(ctx context.Context, appID string) error {
	err := s.changeAgent(ctx, appID, func(tx *sql.Tx, agentID string, now int64) error {
		_, err := s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE agents SET status = ?, updated_at = ? WHERE id = ?"), AgentArchived, now, agentID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: archive agent of app %s: %w", appID, err)
	}
	return nil
}
