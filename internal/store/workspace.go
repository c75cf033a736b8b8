package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// DefaultWorkspaceName is the name given to the workspace when it is created.
const DefaultWorkspaceName = "Default Workspace"

// Workspace is the single tenant that owns every app, key and knowledge base.
// Parley is single-tenant; the row exists so that ids shown to Dify clients
// (which expect a tenant) stay stable.
type Workspace struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Workspace returns the workspace, creating it on first use. The id is
// chosen once and returned forever after. Creation is race-safe across
// goroutines and processes: the table allows one row, and a losing insert
// does nothing.
func (s *Store) Workspace(ctx context.Context) (Workspace, error) {
	if w := s.workspace.Load(); w != nil {
		return *w, nil
	}
	w, err := s.readWorkspace(ctx)
	if errors.Is(err, ErrNotFound) {
		_, err = s.exec(ctx,
			"INSERT INTO workspace (singleton, id, name, created_at) VALUES (1, ?, ?, ?) ON CONFLICT (singleton) DO NOTHING",
			uuid.NewString(), DefaultWorkspaceName, time.Now().Unix())
		if err != nil {
			return Workspace{}, fmt.Errorf("store: create workspace: %w", err)
		}
		w, err = s.readWorkspace(ctx)
	}
	if err != nil {
		return Workspace{}, err
	}
	s.workspace.Store(&w)
	return w, nil
}

func (s *Store) readWorkspace(ctx context.Context) (Workspace, error) {
	var (
		w       Workspace
		created int64
	)
	err := s.conn().QueryRowContext(ctx, "SELECT id, name, created_at FROM workspace WHERE singleton = 1").
		Scan(&w.ID, &w.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Workspace{}, fmt.Errorf("store: workspace: %w", ErrNotFound)
	}
	if err != nil {
		return Workspace{}, fmt.Errorf("store: read workspace: %w", err)
	}
	w.CreatedAt = fromUnix(created)
	return w, nil
}

// fromUnix converts a stored epoch-second timestamp to UTC time.
func fromUnix(sec int64) time.Time {
	return time.Unix(sec, 0).UTC()
}

// fromNullUnix converts a nullable stored timestamp.
func fromNullUnix(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromUnix(v.Int64)
	return &t
}
