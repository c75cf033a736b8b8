package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// AppSpec is an app as declared in configuration: a unique name and a mode
// (e.g. "chat", "advanced-chat", "completion", "workflow").
type AppSpec struct {
	Name string
	Mode string
}

// App is a stored app. Its ID is assigned once and survives restarts and
// config edits, so API keys and conversations can reference it.
type App struct {
	ID        string
	Name      string
	Mode      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SyncApps makes the apps table agree with the configured specs, in one
// transaction: a new name gets a fresh id, an existing name keeps its id and
// has its mode updated if it changed. Apps that are no longer configured are
// kept, so that their keys and history survive a config mistake. It returns
// the stored app for every spec, keyed by name.
func (s *Store) SyncApps(ctx context.Context, specs []AppSpec) (map[string]App, error) {
	seen := make(map[string]bool, len(specs))
	for _, sp := range specs {
		switch {
		case sp.Name == "":
			return nil, errors.New("store: sync apps: app with empty name")
		case sp.Mode == "":
			return nil, fmt.Errorf("store: sync apps: app %q has no mode", sp.Name)
		case seen[sp.Name]:
			return nil, fmt.Errorf("store: sync apps: app %q declared twice", sp.Name)
		}
		seen[sp.Name] = true
	}

	out := make(map[string]App, len(specs))
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		now := time.Now().Unix()
		upsert := s.Rebind(`INSERT INTO apps (id, name, mode, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at
WHERE apps.mode <> excluded.mode`)
		for _, sp := range specs {
			if _, err := s.inTx(tx).ExecContext(ctx, upsert, uuid.NewString(), sp.Name, sp.Mode, now, now); err != nil {
				return fmt.Errorf("upsert app %q: %w", sp.Name, err)
			}
		}
		rows, err := s.inTx(tx).QueryContext(ctx, "SELECT id, name, mode, created_at, updated_at FROM apps")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanApp(rows)
			if err != nil {
				return err
			}
			if seen[a.Name] {
				out[a.Name] = a
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: sync apps: %w", err)
	}
	return out, nil
}

// AppByName returns the app with the given name, or an error wrapping
// [ErrNotFound].
func (s *Store) AppByName(ctx context.Context, name string) (App, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT id, name, mode, created_at, updated_at FROM apps WHERE name = ?"), name)
	a, err := scanApp(row)
	if errors.Is(err, sql.ErrNoRows) {
		return App{}, fmt.Errorf("store: app %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return App{}, fmt.Errorf("store: app %q: %w", name, err)
	}
	return a, nil
}

// AppByID returns the app with the given id, or an error wrapping
// [ErrNotFound].
func (s *Store) AppByID(ctx context.Context, id string) (App, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT id, name, mode, created_at, updated_at FROM apps WHERE id = ?"), id)
	a, err := scanApp(row)
	if errors.Is(err, sql.ErrNoRows) {
		return App{}, fmt.Errorf("store: app %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return App{}, fmt.Errorf("store: app %s: %w", id, err)
	}
	return a, nil
}

// scanner is satisfied by *sql.Row and *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

func scanApp(r scanner) (App, error) {
	var (
		a                App
		created, updated int64
	)
	if err := r.Scan(&a.ID, &a.Name, &a.Mode, &created, &updated); err != nil {
		return App{}, err
	}
	a.CreatedAt, a.UpdatedAt = fromUnix(created), fromUnix(updated)
	return a, nil
}
