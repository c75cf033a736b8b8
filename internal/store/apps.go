package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// App sources, the values of apps.source.
const (
	// AppSourceConfig rows belong to apps of the config file, which holds their definition.
	AppSourceConfig = "config"
	// AppSourceImport rows belong to imported apps and hold their definition.
	AppSourceImport = "import"
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
	ID   string
	Name string
	Mode string
	// Source is AppSourceConfig or AppSourceImport.
	Source string
	// Definition is an imported app's definition (JSON); empty for config apps.
	Definition string
	// Revision grows with every change of the row.
	Revision int64
	// PublishedVersionID names the app's published version; empty when it has none.
	PublishedVersionID string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	// DeletedAt is set once the app is deleted.
	DeletedAt *time.Time
	// Limits are an imported app's rate limits (SetAppLimits); a config app's come from the
	// config file.
	Limits Limits
}

// AppVersion is an immutable snapshot of an app's definition.
type AppVersion struct {
	ID    string
	AppID string
	// Version counts the app's versions from 1.
	Version    int64
	Definition string
	CreatedAt  time.Time
}

const appColumns = "id, name, mode, source, definition, revision, published_version_id, created_at, updated_at, deleted_at, " +
	"requests_per_minute, tokens_per_day, workflow_runs_per_day"

// SyncApps makes the apps table agree with the configured specs, in one
// transaction: a new name gets a fresh id, an existing name keeps its id and
// has its mode updated if it changed. Apps that are no longer configured are
// kept, so that their keys and history survive a config mistake. It returns
// the stored app for every spec, keyed by name, except for names that belong
// to imported apps: those are left alone and missing from the result, for the
// caller to report.
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
		imported := map[string]bool{}
		rows, err := s.inTx(tx).QueryContext(ctx, s.Rebind("SELECT name FROM apps WHERE source = ? AND deleted_at IS NULL"), AppSourceImport)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			imported[name] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}

		now := time.Now().Unix()
		upsert := s.Rebind(`INSERT INTO apps (id, name, mode, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at, revision = apps.revision + 1
WHERE apps.mode <> excluded.mode AND apps.source = 'config'`)
		for _, sp := range specs {
			if imported[sp.Name] {
				continue
			}
			if _, err := s.inTx(tx).ExecContext(ctx, upsert, uuid.NewString(), sp.Name, sp.Mode, now, now); err != nil {
				return fmt.Errorf("upsert app %q: %w", sp.Name, err)
			}
		}
		rows, err = s.inTx(tx).QueryContext(ctx, s.Rebind("SELECT "+appColumns+" FROM apps WHERE source = ?"), AppSourceConfig)
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

// CreateApp stores a new imported app (Source AppSourceImport) with its
// definition and returns it with its id. A name held by another app gives an
// error wrapping [ErrConflict].
func (s *Store) CreateApp(ctx context.Context, name, mode, definition string) (App, error) {
	if name == "" || mode == "" || len(definition) == 0 {
		return App{}, errors.New("store: create app: name, mode and definition are required")
	}
	now := time.Now().UTC().Truncate(time.Second)
	a := App{ID: uuid.NewString(), Name: name, Mode: mode, Source: AppSourceImport, Definition: definition,
		Revision: 1, CreatedAt: now, UpdatedAt: now}
	_, err := s.exec(ctx, `INSERT INTO apps (id, name, mode, source, definition, revision, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.Name, a.Mode, a.Source, definition, a.Revision, now.Unix(), now.Unix())
	if err != nil {
		return App{}, fmt.Errorf("store: create app %q: %w", name, err)
	}
	return a, nil
}

// AppByName returns the live app with the given name, or an error wrapping
// [ErrNotFound].
func (s *Store) AppByName(ctx context.Context, name string) (App, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+appColumns+" FROM apps WHERE name = ? AND deleted_at IS NULL"), name)
	a, err := scanApp(row)
	if errors.Is(err, sql.ErrNoRows) {
		return App{}, fmt.Errorf("store: app %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return App{}, fmt.Errorf("store: app %q: %w", name, err)
	}
	return a, nil
}

// AppByID returns the app with the given id, deleted or not, or an error
// wrapping [ErrNotFound].
func (s *Store) AppByID(ctx context.Context, id string) (App, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+appColumns+" FROM apps WHERE id = ?"), id)
	a, err := scanApp(row)
	if errors.Is(err, sql.ErrNoRows) {
		return App{}, fmt.Errorf("store: app %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return App{}, fmt.Errorf("store: app %s: %w", id, err)
	}
	return a, nil
}

// AppRevision returns the revision of the live app with the given id: one
// primary-key read, for servers that cache the app and need to know whether
// it changed. A deleted or unknown app gives an error wrapping [ErrNotFound].
func (s *Store) AppRevision(ctx context.Context, id string) (int64, error) {
	var rev int64
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT revision FROM apps WHERE id = ? AND deleted_at IS NULL"), id).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: app %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: app %s revision: %w", id, err)
	}
	return rev, nil
}

// AppsRevision returns a number that grows whenever any app is created,
// changed or deleted (the sum of all revisions).
func (s *Store) AppsRevision(ctx context.Context) (int64, error) {
	var rev int64
	if err := s.conn().QueryRowContext(ctx, "SELECT COALESCE(SUM(revision), 0) FROM apps").Scan(&rev); err != nil {
		return 0, fmt.Errorf("store: apps revision: %w", err)
	}
	return rev, nil
}

// ListApps returns the live apps of both sources, by name.
func (s *Store) ListApps(ctx context.Context) ([]App, error) {
	out, err := queryAll(ctx, s.conn(), scanApp, "SELECT "+appColumns+" FROM apps WHERE deleted_at IS NULL ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("store: list apps: %w", err)
	}
	return out, nil
}

// DeleteApp deletes the live app with the given id, revokes its API keys and
// deletes its MCP server and its triggers, in one transaction. The row stays, for the history that refers to it, but
// gives up its name. An unknown or already deleted app gives an error
// wrapping [ErrNotFound].
func (s *Store) DeleteApp(ctx context.Context, id string) error {
	now := time.Now().Unix()
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		res, err := s.inTx(tx).ExecContext(ctx, s.Rebind(`UPDATE apps SET deleted_at = ?, name = ?, revision = revision + 1, updated_at = ?
WHERE id = ? AND deleted_at IS NULL`), now, "deleted:"+id, now, id)
		if err != nil {
			return mapError(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		_, err = s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE api_keys SET revoked_at = ? WHERE app_id = ? AND revoked_at IS NULL"), now, id)
		if err != nil {
			return err
		}
		// Its MCP server goes with it: the URL stops answering, as its keys stop working.
		_, err = s.inTx(tx).ExecContext(ctx, s.Rebind("DELETE FROM app_mcp_servers WHERE app_id = ?"), id)
		if err != nil {
			return err
		}
		// So does its web site: its page and the passports it issued stop working.
		_, err = s.inTx(tx).ExecContext(ctx, s.Rebind("DELETE FROM sites WHERE app_id = ?"), id)
		if err != nil {
			return err
		}
		// So do its triggers: its webhook URLs stop answering, its schedules stop ticking.
		_, err = s.inTx(tx).ExecContext(ctx, s.Rebind("DELETE FROM app_triggers WHERE app_id = ?"), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete app %s: %w", id, err)
	}
	return nil
}

// PublishApp snapshots the live imported app's definition as its next
// version and makes that version the published one.
func (s *Store) PublishApp(ctx context.Context, id string) (AppVersion, error) {
	now := time.Now().UTC().Truncate(time.Second)
	v := AppVersion{ID: uuid.NewString(), AppID: id, CreatedAt: now}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		// Bumping the revision first locks the row on PostgreSQL, so concurrent publishes of
		// one app number their versions one after the other.
		err := oneRow(s.inTx(tx).ExecContext(ctx, s.Rebind(`UPDATE apps SET revision = revision + 1, updated_at = ?
WHERE id = ? AND deleted_at IS NULL AND definition IS NOT NULL`), now.Unix(), id))
		if err != nil {
			return err
		}
		var def string
		if err := s.inTx(tx).QueryRowContext(ctx, s.Rebind(`SELECT definition,
(SELECT COALESCE(MAX(version), 0) + 1 FROM app_versions WHERE app_id = ?) FROM apps WHERE id = ?`), id, id).Scan(&def, &v.Version); err != nil {
			return err
		}
		v.Definition = def
		if _, err := s.inTx(tx).ExecContext(ctx, s.Rebind(`INSERT INTO app_versions (id, app_id, version, definition, created_at)
VALUES (?, ?, ?, ?, ?)`), v.ID, id, v.Version, def, now.Unix()); err != nil {
			return mapError(err)
		}
		_, err = s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE apps SET published_version_id = ? WHERE id = ?"), v.ID, id)
		return err
	})
	if err != nil {
		return AppVersion{}, fmt.Errorf("store: publish app %s: %w", id, err)
	}
	return v, nil
}

// AppVersion returns the version with the given id, or an error wrapping
// [ErrNotFound].
func (s *Store) AppVersion(ctx context.Context, id string) (AppVersion, error) {
	var (
		v       AppVersion
		def     string
		created int64
	)
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT id, app_id, version, definition, created_at FROM app_versions WHERE id = ?"), id).
		Scan(&v.ID, &v.AppID, &v.Version, &def, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return AppVersion{}, fmt.Errorf("store: app version %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return AppVersion{}, fmt.Errorf("store: app version %s: %w", id, err)
	}
	v.Definition, v.CreatedAt = def, fromUnix(created)
	return v, nil
}

// scanner is satisfied by *sql.Row and *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// SetAppLimits sets an imported app's rate limits; its revision grows, so that every server
// sees them on its next request. An unknown, deleted or config app gives an error wrapping
// [ErrNotFound].
func (s *Store) SetAppLimits(ctx context.Context, id string, l Limits) error {
	res, err := s.exec(ctx, "UPDATE apps SET requests_per_minute = ?, tokens_per_day = ?, workflow_runs_per_day = ?, revision = revision + 1, updated_at = ?"+
		" WHERE id = ? AND source = ? AND deleted_at IS NULL",
		l.RequestsPerMinute, l.TokensPerDay, l.WorkflowRunsPerDay, time.Now().Unix(), id, AppSourceImport)
	if err != nil {
		return fmt.Errorf("store: set app limits %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err == nil {
			err = ErrNotFound
		}
		return fmt.Errorf("store: set app limits %s: %w", id, err)
	}
	return nil
}

func scanApp(r scanner) (App, error) {
	var (
		a                App
		def, published   sql.NullString
		created, updated int64
		deleted          sql.NullInt64
	)
	if err := r.Scan(&a.ID, &a.Name, &a.Mode, &a.Source, &def, &a.Revision, &published, &created, &updated, &deleted,
		&a.Limits.RequestsPerMinute, &a.Limits.TokensPerDay, &a.Limits.WorkflowRunsPerDay); err != nil {
		return App{}, err
	}
	a.Definition = def.String
	a.PublishedVersionID = published.String
	a.CreatedAt, a.UpdatedAt = fromUnix(created), fromUnix(updated)
	if deleted.Valid {
		t := fromUnix(deleted.Int64)
		a.DeletedAt = &t
	}
	return a, nil
}
