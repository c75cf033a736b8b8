package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// migrationMCPServers adds the MCP servers apps are published as (Dify's app_mcp_servers): one
// per app, reached at a URL whose secret part is the server code. Like an API key, the code is
// stored only as its SHA-256 hash with a short display prefix, and looked up by hash.
var migrationMCPServers = migration{
	version: 17,
	name:    "app_mcp_servers",
	sqlite: `
CREATE TABLE app_mcp_servers (
	id          TEXT    NOT NULL PRIMARY KEY,
	app_id      TEXT    NOT NULL UNIQUE REFERENCES apps (id),
	description TEXT    NOT NULL,
	code_hash   BLOB    NOT NULL UNIQUE,
	code_prefix TEXT    NOT NULL,
	status      TEXT    NOT NULL CHECK (status IN ('active', 'inactive')),
	parameters  TEXT    NOT NULL,
	client_name TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;
`,
	postgres: `
CREATE TABLE app_mcp_servers (
	id          TEXT   NOT NULL PRIMARY KEY,
	app_id      TEXT   NOT NULL UNIQUE REFERENCES apps (id),
	description TEXT   NOT NULL,
	code_hash   BYTEA  NOT NULL UNIQUE,
	code_prefix TEXT   NOT NULL,
	status      TEXT   NOT NULL CHECK (status IN ('active', 'inactive')),
	parameters  TEXT   NOT NULL,
	client_name TEXT   NOT NULL,
	created_at  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL
);
`,
}

// MCP server statuses, Dify's AppMCPServerStatus values.
const (
	MCPServerActive   = "active"
	MCPServerInactive = "inactive"
)

// Bounds of what an MCP server keeps: its description is the tool's description and the
// server's instructions, a parameter's the description of one input of the tool's schema.
const (
	MaxMCPDescription      = 4000
	MaxMCPParamDescription = 1000
	MaxMCPClientName       = 256
)

// MCPServer is an app published as an MCP server.
type MCPServer struct {
	ID    string
	AppID string
	// Description is the tool's description and the server's instructions.
	Description string
	// CodeHash is SHA-256 of the server code, the secret in the server's URL; CodePrefix a
	// short part of the code, safe to show.
	CodeHash   []byte
	CodePrefix string
	// Status is MCPServerActive or MCPServerInactive.
	Status string
	// Parameters describes the tool's inputs: variable → description.
	Parameters map[string]string
	// ClientName is "<name>@<version>" of the last client that initialized a session, as Dify
	// names the MCP end user; empty until one has.
	ClientName string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

func (m MCPServer) validate() error {
	switch {
	case m.ID == "" || m.AppID == "":
		return errors.New("missing id or app id")
	case len(m.CodeHash) == 0 || m.CodePrefix == "":
		return errors.New("missing code hash or prefix")
	case m.Status != MCPServerActive && m.Status != MCPServerInactive:
		return fmt.Errorf("unknown status %q", m.Status)
	case len(m.Description) > MaxMCPDescription:
		return fmt.Errorf("a description of %d bytes exceeds the %d allowed", len(m.Description), MaxMCPDescription)
	}
	for k, v := range m.Parameters {
		if len(v) > MaxMCPParamDescription {
			return fmt.Errorf("the description of %q has %d bytes, more than the %d allowed", k, len(v), MaxMCPParamDescription)
		}
	}
	return nil
}

const mcpServerColumns = "id, app_id, description, code_hash, code_prefix, status, parameters, client_name, created_at, updated_at"

// CreateMCPServer stores a new MCP server. CreatedAt defaults to now. An app that has one
// already, or a code hash in use, gives an error wrapping [ErrConflict]; an unknown app one
// wrapping [ErrNotFound].
func (s *Store) CreateMCPServer(ctx context.Context, m MCPServer) error {
	if err := m.validate(); err != nil {
		return fmt.Errorf("store: create mcp server: %w", err)
	}
	params, err := encodeMCPParams(m.Parameters)
	if err != nil {
		return fmt.Errorf("store: create mcp server: %w", err)
	}
	now := nowOr(m.CreatedAt).Unix()
	_, err = s.exec(ctx, "INSERT INTO app_mcp_servers ("+mcpServerColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		m.ID, m.AppID, m.Description, m.CodeHash, m.CodePrefix, m.Status, params, m.ClientName, now, now)
	switch {
	case err == nil:
		return nil
	case isForeignKeyViolation(err):
		return fmt.Errorf("store: create mcp server: app %s: %w", m.AppID, ErrNotFound)
	default:
		return fmt.Errorf("store: create mcp server: %w", err)
	}
}

// UpdateMCPServer writes the mutable fields of m (description, code, status, parameters) over
// the stored server with m's id. An unknown id gives an error wrapping [ErrNotFound]; a code
// hash in use one wrapping [ErrConflict].
func (s *Store) UpdateMCPServer(ctx context.Context, m MCPServer) error {
	if err := m.validate(); err != nil {
		return fmt.Errorf("store: update mcp server: %w", err)
	}
	params, err := encodeMCPParams(m.Parameters)
	if err != nil {
		return fmt.Errorf("store: update mcp server: %w", err)
	}
	err = oneRow(s.exec(ctx, `UPDATE app_mcp_servers SET description = ?, code_hash = ?, code_prefix = ?, status = ?,
parameters = ?, updated_at = ? WHERE id = ?`,
		m.Description, m.CodeHash, m.CodePrefix, m.Status, params, time.Now().Unix(), m.ID))
	if err != nil {
		return fmt.Errorf("store: update mcp server %s: %w", m.ID, err)
	}
	return nil
}

// SetMCPServerClient records the client that last initialized a session with the server (cut
// to MaxMCPClientName bytes); it writes only when the name changes, and an unknown id is no
// error.
func (s *Store) SetMCPServerClient(ctx context.Context, id, client string) error {
	if len(client) > MaxMCPClientName {
		client = client[:MaxMCPClientName]
	}
	if _, err := s.exec(ctx, "UPDATE app_mcp_servers SET client_name = ? WHERE id = ? AND client_name <> ?", client, id, client); err != nil {
		return fmt.Errorf("store: set mcp server client %s: %w", id, err)
	}
	return nil
}

// MCPServerByApp returns the MCP server of an app; an app that has none gives an error
// wrapping [ErrNotFound].
func (s *Store) MCPServerByApp(ctx context.Context, appID string) (MCPServer, error) {
	return s.mcpServerWhere(ctx, "app_id = ?", appID)
}

// MCPServerByCodeHash returns the MCP server whose code hashes to hash, active or not; an
// unknown hash gives an error wrapping [ErrNotFound].
func (s *Store) MCPServerByCodeHash(ctx context.Context, hash []byte) (MCPServer, error) {
	return s.mcpServerWhere(ctx, "code_hash = ?", hash)
}

func (s *Store) mcpServerWhere(ctx context.Context, cond string, arg any) (MCPServer, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+mcpServerColumns+" FROM app_mcp_servers WHERE "+cond), arg)
	m, err := scanMCPServer(row)
	if errors.Is(err, sql.ErrNoRows) {
		return MCPServer{}, fmt.Errorf("store: mcp server: %w", ErrNotFound)
	}
	if err != nil {
		return MCPServer{}, fmt.Errorf("store: mcp server: %w", err)
	}
	return m, nil
}

func scanMCPServer(r scanner) (MCPServer, error) {
	var (
		m                MCPServer
		params           string
		created, updated int64
	)
	if err := r.Scan(&m.ID, &m.AppID, &m.Description, &m.CodeHash, &m.CodePrefix, &m.Status, &params, &m.ClientName,
		&created, &updated); err != nil {
		return MCPServer{}, err
	}
	if err := json.Unmarshal([]byte(params), &m.Parameters); err != nil {
		return MCPServer{}, fmt.Errorf("parameters of mcp server %s: %w", m.ID, err)
	}
	if m.Parameters == nil {
		m.Parameters = map[string]string{}
	}
	m.CreatedAt, m.UpdatedAt = fromUnix(created), fromUnix(updated)
	return m, nil
}

func encodeMCPParams(p map[string]string) (string, error) {
	if p == nil {
		p = map[string]string{}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
