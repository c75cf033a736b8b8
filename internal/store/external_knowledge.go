package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// migrationExternalKnowledge adds external knowledge APIs (Dify's external_knowledge_apis): the
// services that answer Dify's External Knowledge API, which external knowledge bases retrieve
// from. The key of one is never stored: api_key_env names the environment variable of the
// server that holds it. An external knowledge base is a datasets row with provider `external`
// and the binding Dify keeps in external_knowledge_bindings: the API it calls and the id of the
// knowledge in that service.
var migrationExternalKnowledge = migration{
	version: 22,
	name:    "external knowledge APIs and bindings",
	sqlite: `
CREATE TABLE external_knowledge_apis (
	id          TEXT    NOT NULL PRIMARY KEY,
	name        TEXT    NOT NULL UNIQUE,
	description TEXT    NOT NULL,
	endpoint    TEXT    NOT NULL,
	api_key_env TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;

ALTER TABLE datasets ADD COLUMN external_knowledge_api_id TEXT REFERENCES external_knowledge_apis (id);
ALTER TABLE datasets ADD COLUMN external_knowledge_id TEXT;
CREATE INDEX datasets_external_knowledge_api_id ON datasets (external_knowledge_api_id);
`,
	postgres: `
CREATE TABLE external_knowledge_apis (
	id          TEXT   NOT NULL PRIMARY KEY,
	name        TEXT   NOT NULL UNIQUE,
	description TEXT   NOT NULL,
	endpoint    TEXT   NOT NULL,
	api_key_env TEXT   NOT NULL,
	created_at  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL
);

ALTER TABLE datasets ADD COLUMN external_knowledge_api_id TEXT REFERENCES external_knowledge_apis (id);
ALTER TABLE datasets ADD COLUMN external_knowledge_id TEXT;
CREATE INDEX datasets_external_knowledge_api_id ON datasets (external_knowledge_api_id);
`,
}

// DatasetProviderExternal is the provider of an external knowledge base (Dify's value).
const DatasetProviderExternal = "external"

// ExternalKnowledgeAPI is a registered external knowledge API: a service that answers Dify's
// External Knowledge API at Endpoint + "/retrieval".
type ExternalKnowledgeAPI struct {
	ID   string
	Name string
	// Description is free text.
	Description string
	// Endpoint is the API's base URL, without a trailing slash.
	Endpoint string
	// APIKeyEnv names the environment variable that holds the key sent as a bearer token; the
	// key itself is never stored.
	APIKeyEnv string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (a ExternalKnowledgeAPI) validate() error {
	switch {
	case strings.TrimSpace(a.Name) == "":
		return errors.New("missing name")
	case a.Endpoint == "":
		return errors.New("missing endpoint")
	case a.APIKeyEnv == "":
		return errors.New("missing api key variable")
	}
	return nil
}

const externalKnowledgeAPIColumns = "id, name, description, endpoint, api_key_env, created_at, updated_at"

// CreateExternalKnowledgeAPI stores a new external knowledge API and returns it as stored. ID
// defaults to [NewID], CreatedAt to now and UpdatedAt to CreatedAt. A name already taken gives
// an error wrapping [ErrConflict].
func (s *Store) CreateExternalKnowledgeAPI(ctx context.Context, a ExternalKnowledgeAPI) (ExternalKnowledgeAPI, error) {
	if err := a.validate(); err != nil {
		return ExternalKnowledgeAPI{}, fmt.Errorf("store: create external knowledge api: %w", err)
	}
	if a.ID == "" {
		a.ID = NewID()
	}
	a.CreatedAt = fromUnix(nowOr(a.CreatedAt).Unix())
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = a.CreatedAt
	}
	a.UpdatedAt = fromUnix(a.UpdatedAt.Unix())
	_, err := s.exec(ctx, "INSERT INTO external_knowledge_apis ("+externalKnowledgeAPIColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		a.ID, a.Name, a.Description, a.Endpoint, a.APIKeyEnv, a.CreatedAt.Unix(), a.UpdatedAt.Unix())
	if err != nil {
		return ExternalKnowledgeAPI{}, fmt.Errorf("store: create external knowledge api %q: %w", a.Name, err)
	}
	return a, nil
}

// ExternalKnowledgeAPI returns the external knowledge API with the given id, or an error
// wrapping [ErrNotFound].
func (s *Store) ExternalKnowledgeAPI(ctx context.Context, id string) (ExternalKnowledgeAPI, error) {
	return s.externalKnowledgeAPI(ctx, "id", id)
}

// ExternalKnowledgeAPIByName returns the external knowledge API with the given name (compared
// exactly), or an error wrapping [ErrNotFound].
func (s *Store) ExternalKnowledgeAPIByName(ctx context.Context, name string) (ExternalKnowledgeAPI, error) {
	return s.externalKnowledgeAPI(ctx, "name", name)
}

func (s *Store) externalKnowledgeAPI(ctx context.Context, column, value string) (ExternalKnowledgeAPI, error) {
	a, err := scanExternalKnowledgeAPI(s.conn().QueryRowContext(ctx,
		s.Rebind("SELECT "+externalKnowledgeAPIColumns+" FROM external_knowledge_apis WHERE "+column+" = ?"), value))
	if errors.Is(err, sql.ErrNoRows) {
		return ExternalKnowledgeAPI{}, fmt.Errorf("store: external knowledge api %s %q: %w", column, value, ErrNotFound)
	}
	if err != nil {
		return ExternalKnowledgeAPI{}, fmt.Errorf("store: external knowledge api %s %q: %w", column, value, err)
	}
	return a, nil
}

// ListExternalKnowledgeAPIs returns every external knowledge API, by name.
func (s *Store) ListExternalKnowledgeAPIs(ctx context.Context) ([]ExternalKnowledgeAPI, error) {
	rows, err := s.conn().QueryContext(ctx, "SELECT "+externalKnowledgeAPIColumns+" FROM external_knowledge_apis ORDER BY name, id")
	if err != nil {
		return nil, fmt.Errorf("store: list external knowledge apis: %w", err)
	}
	out, err := collect(rows, scanExternalKnowledgeAPI)
	if err != nil {
		return nil, fmt.Errorf("store: list external knowledge apis: %w", err)
	}
	return out, nil
}

// UpdateExternalKnowledgeAPI writes a's name, description, endpoint and key variable over the
// stored API with a's id; a zero UpdatedAt is stored as now. An unknown id gives an error
// wrapping [ErrNotFound], a name taken by another API one wrapping [ErrConflict].
func (s *Store) UpdateExternalKnowledgeAPI(ctx context.Context, a ExternalKnowledgeAPI) error {
	if err := a.validate(); err != nil {
		return fmt.Errorf("store: update external knowledge api %s: %w", a.ID, err)
	}
	err := oneRow(s.exec(ctx, `UPDATE external_knowledge_apis SET name = ?, description = ?, endpoint = ?, api_key_env = ?,
updated_at = ? WHERE id = ?`, a.Name, a.Description, a.Endpoint, a.APIKeyEnv, nowOr(a.UpdatedAt).Unix(), a.ID))
	if err != nil {
		return fmt.Errorf("store: update external knowledge api %s: %w", a.ID, err)
	}
	return nil
}

// ExternalKnowledgeAPIUsage counts the knowledge bases bound to the external knowledge API.
func (s *Store) ExternalKnowledgeAPIUsage(ctx context.Context, id string) (int, error) {
	var n int
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM datasets WHERE external_knowledge_api_id = ?"), id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: usage of external knowledge api %s: %w", id, err)
	}
	return n, nil
}

// DeleteExternalKnowledgeAPI removes an external knowledge API that no knowledge base is bound
// to. An unknown id gives an error wrapping [ErrNotFound]; one that knowledge bases are bound to
// an error wrapping [ErrConflict], and nothing is removed.
func (s *Store) DeleteExternalKnowledgeAPI(ctx context.Context, id string) error {
	err := oneRow(s.exec(ctx, "DELETE FROM external_knowledge_apis WHERE id = ?", id))
	if isForeignKeyViolation(err) {
		err = fmt.Errorf("knowledge bases are bound to it: %w", ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: delete external knowledge api %s: %w", id, err)
	}
	return nil
}

func scanExternalKnowledgeAPI(r scanner) (ExternalKnowledgeAPI, error) {
	var (
		a                ExternalKnowledgeAPI
		created, updated int64
	)
	if err := r.Scan(&a.ID, &a.Name, &a.Description, &a.Endpoint, &a.APIKeyEnv, &created, &updated); err != nil {
		return ExternalKnowledgeAPI{}, err
	}
	a.CreatedAt, a.UpdatedAt = fromUnix(created), fromUnix(updated)
	return a, nil
}
