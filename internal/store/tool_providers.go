package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// migrationToolProviders keeps the workspace's tool providers: custom API tools (an OpenAPI or
// Swagger document with its credentials) and MCP servers, registered once and used by every
// agent app that names them.
//
// `definition` is the provider's settings as JSON, owned by the tools registry; it holds the
// credentials, so it is never listed as is. `server_identifier` is how Dify's DSL names an MCP
// server (its provider_id); it is NULL for API providers. tool_providers_revision is one row whose
// number grows with every change, so a server learns with one primary-key read whether the
// providers it holds are still current.
var migrationToolProviders = migration{
	version: 9,
	name:    "tool providers",
	sqlite: `
CREATE TABLE tool_providers (
	id                TEXT    NOT NULL PRIMARY KEY,
	kind              TEXT    NOT NULL CHECK (kind IN ('api', 'mcp')),
	name              TEXT    NOT NULL UNIQUE,
	server_identifier TEXT    UNIQUE,
	definition        TEXT    NOT NULL,
	created_at        INTEGER NOT NULL,
	updated_at        INTEGER NOT NULL,
	CHECK ((kind = 'mcp') = (server_identifier IS NOT NULL))
) STRICT;

CREATE TABLE tool_providers_revision (
	singleton INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1),
	revision  INTEGER NOT NULL
) STRICT;

INSERT INTO tool_providers_revision (singleton, revision) VALUES (1, 0);
`,
	postgres: `
CREATE TABLE tool_providers (
	id                TEXT   NOT NULL PRIMARY KEY,
	kind              TEXT   NOT NULL CHECK (kind IN ('api', 'mcp')),
	name              TEXT   NOT NULL UNIQUE,
	server_identifier TEXT   UNIQUE,
	definition        TEXT   NOT NULL,
	created_at        BIGINT NOT NULL,
	updated_at        BIGINT NOT NULL,
	CHECK ((kind = 'mcp') = (server_identifier IS NOT NULL))
);

CREATE TABLE tool_providers_revision (
	singleton SMALLINT NOT NULL PRIMARY KEY CHECK (singleton = 1),
	revision  BIGINT   NOT NULL
);

INSERT INTO tool_providers_revision (singleton, revision) VALUES (1, 0);
`,
}

// Tool provider kinds.
const (
	ToolProviderAPI = "api"
	ToolProviderMCP = "mcp"
)

// ToolProvider is a registered tool provider.
type ToolProvider struct {
	ID   string
	Kind string
	Name string
	// ServerIdentifier names an MCP server in Dify's DSL; empty for API providers.
	ServerIdentifier string
	// Definition is the provider's settings as JSON, credentials included.
	Definition string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

const toolProviderColumns = "id, kind, name, server_identifier, definition, created_at, updated_at"

func scanToolProvider(r scanner) (ToolProvider, error) {
	var (
		p                ToolProvider
		ident            sql.NullString
		created, updated int64
	)
	if err := r.Scan(&p.ID, &p.Kind, &p.Name, &ident, &p.Definition, &created, &updated); err != nil {
		return ToolProvider{}, err
	}
	p.ServerIdentifier = ident.String
	p.CreatedAt, p.UpdatedAt = fromUnix(created), fromUnix(updated)
	return p, nil
}

// bumpToolProviders records a change of the tool providers.
func (s *Store) bumpToolProviders(ctx context.Context, tx *sql.Tx) error {
	_, err := s.inTx(tx).ExecContext(ctx, "UPDATE tool_providers_revision SET revision = revision + 1 WHERE singleton = 1")
	return err
}

// CreateToolProvider stores a new tool provider and returns it with its id. A name (or an MCP
// server identifier) held by another provider gives an error wrapping [ErrConflict].
func (s *Store) CreateToolProvider(ctx context.Context, p ToolProvider) (ToolProvider, error) {
	if p.Name == "" || p.Definition == "" || (p.Kind != ToolProviderAPI && p.Kind != ToolProviderMCP) ||
		(p.Kind == ToolProviderMCP) != (p.ServerIdentifier != "") {
		return ToolProvider{}, errors.New("store: create tool provider: kind, name and definition are required, and a server identifier for MCP only")
	}
	now := time.Now().UTC().Truncate(time.Second)
	p.ID, p.CreatedAt, p.UpdatedAt = uuid.NewString(), now, now
	var ident any
	if p.ServerIdentifier != "" {
		ident = p.ServerIdentifier
	}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		_, err := s.inTx(tx).ExecContext(ctx, s.Rebind(`INSERT INTO tool_providers (`+toolProviderColumns+`)
VALUES (?, ?, ?, ?, ?, ?, ?)`), p.ID, p.Kind, p.Name, ident, p.Definition, now.Unix(), now.Unix())
		if err != nil {
			return mapError(err)
		}
		return s.bumpToolProviders(ctx, tx)
	})
	if err != nil {
		return ToolProvider{}, fmt.Errorf("store: create tool provider %q: %w", p.Name, err)
	}
	return p, nil
}

// ReplaceToolProvider replaces the definition (and an MCP provider's server identifier) of the
// provider named p.Name, of kind p.Kind, keeping its id, and returns it. No provider of that name
// gives an error wrapping [ErrNotFound]; one of the other kind, or a server identifier held by
// another provider, an error wrapping [ErrConflict].
func (s *Store) ReplaceToolProvider(ctx context.Context, p ToolProvider) (ToolProvider, error) {
	if p.Name == "" || p.Definition == "" || (p.Kind == ToolProviderMCP) != (p.ServerIdentifier != "") {
		return ToolProvider{}, errors.New("store: replace tool provider: name and definition are required, and a server identifier for MCP only")
	}
	var ident any
	if p.ServerIdentifier != "" {
		ident = p.ServerIdentifier
	}
	var out ToolProvider
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		cur, err := scanToolProvider(s.inTx(tx).QueryRowContext(ctx, s.Rebind("SELECT "+toolProviderColumns+" FROM tool_providers WHERE name = ?"), p.Name))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if cur.Kind != p.Kind {
			return fmt.Errorf("%w: it is an %s provider", ErrConflict, cur.Kind)
		}
		now := time.Now().UTC().Truncate(time.Second)
		if _, err := s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE tool_providers SET definition = ?, server_identifier = ?, updated_at = ? WHERE id = ?"),
			p.Definition, ident, now.Unix(), cur.ID); err != nil {
			return mapError(err)
		}
		cur.Definition, cur.ServerIdentifier, cur.UpdatedAt = p.Definition, p.ServerIdentifier, now
		out = cur
		return s.bumpToolProviders(ctx, tx)
	})
	if err != nil {
		return ToolProvider{}, fmt.Errorf("store: replace tool provider %q: %w", p.Name, err)
	}
	return out, nil
}

// UpdateToolProviderDefinition replaces the definition of the named provider; an unknown name
// gives an error wrapping [ErrNotFound].
func (s *Store) UpdateToolProviderDefinition(ctx context.Context, name, definition string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		if err := oneRow(s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE tool_providers SET definition = ?, updated_at = ? WHERE name = ?"),
			definition, time.Now().Unix(), name)); err != nil {
			return err
		}
		return s.bumpToolProviders(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("store: update tool provider %q: %w", name, err)
	}
	return nil
}

// DeleteToolProvider deletes the named provider; an unknown name gives an error wrapping
// [ErrNotFound]. Apps naming its tools keep them, and calling one fails with an observation.
func (s *Store) DeleteToolProvider(ctx context.Context, name string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		if err := oneRow(s.inTx(tx).ExecContext(ctx, s.Rebind("DELETE FROM tool_providers WHERE name = ?"), name)); err != nil {
			return err
		}
		return s.bumpToolProviders(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("store: delete tool provider %q: %w", name, err)
	}
	return nil
}

// ToolProviders returns every tool provider, by name.
func (s *Store) ToolProviders(ctx context.Context) ([]ToolProvider, error) {
	out, err := queryAll(ctx, s.conn(), scanToolProvider, "SELECT "+toolProviderColumns+" FROM tool_providers ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("store: list tool providers: %w", err)
	}
	return out, nil
}

// ToolProvidersRevision returns a number that grows with every change of the tool providers.
func (s *Store) ToolProvidersRevision(ctx context.Context) (int64, error) {
	var rev int64
	if err := s.conn().QueryRowContext(ctx, "SELECT revision FROM tool_providers_revision WHERE singleton = 1").Scan(&rev); err != nil {
		return 0, fmt.Errorf("store: tool providers revision: %w", err)
	}
	return rev, nil
}
