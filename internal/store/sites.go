package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// migrationSites adds the web sites of apps (Dify's sites): one per app, reached at a page URL
// whose last part is the site code. Unlike an MCP server's code, a site code is a public token
// (it is in every link to the page), so it is stored in clear and looked up as it is. version
// counts the changes that end the passports issued before them (a new code, disabling the site,
// a new passcode). It also adds the pinning of conversations (Dify's pinned conversations of
// the web app): pinned_at is when the end user pinned it, NULL when it is not pinned.
var migrationSites = migration{
	version: 21,
	name:    "sites, pinned conversations",
	sqlite: `
CREATE TABLE sites (
	id                  TEXT    NOT NULL PRIMARY KEY,
	app_id              TEXT    NOT NULL UNIQUE REFERENCES apps (id),
	code                TEXT    NOT NULL UNIQUE,
	version             INTEGER NOT NULL,
	enabled             INTEGER NOT NULL CHECK (enabled IN (0, 1)),
	title               TEXT    NOT NULL,
	icon                TEXT    NOT NULL,
	icon_background     TEXT    NOT NULL,
	description         TEXT    NOT NULL,
	copyright           TEXT    NOT NULL,
	privacy_policy      TEXT    NOT NULL,
	default_language    TEXT    NOT NULL,
	custom_disclaimer   TEXT    NOT NULL,
	input_placeholder   TEXT    NOT NULL,
	chat_color_theme    TEXT    NOT NULL,
	show_workflow_steps INTEGER NOT NULL CHECK (show_workflow_steps IN (0, 1)),
	passcode_hash       BLOB,
	allowed_origins     TEXT    NOT NULL,
	requests_per_minute INTEGER NOT NULL CHECK (requests_per_minute >= 0),
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL
) STRICT;

ALTER TABLE conversations ADD COLUMN pinned_at INTEGER;
`,
	postgres: `
CREATE TABLE sites (
	id                  TEXT    NOT NULL PRIMARY KEY,
	app_id              TEXT    NOT NULL UNIQUE REFERENCES apps (id),
	code                TEXT    NOT NULL UNIQUE,
	version             BIGINT  NOT NULL,
	enabled             BOOLEAN NOT NULL,
	title               TEXT    NOT NULL,
	icon                TEXT    NOT NULL,
	icon_background     TEXT    NOT NULL,
	description         TEXT    NOT NULL,
	copyright           TEXT    NOT NULL,
	privacy_policy      TEXT    NOT NULL,
	default_language    TEXT    NOT NULL,
	custom_disclaimer   TEXT    NOT NULL,
	input_placeholder   TEXT    NOT NULL,
	chat_color_theme    TEXT    NOT NULL,
	show_workflow_steps BOOLEAN NOT NULL,
	passcode_hash       BYTEA,
	allowed_origins     TEXT    NOT NULL,
	requests_per_minute BIGINT  NOT NULL CHECK (requests_per_minute >= 0),
	created_at          BIGINT  NOT NULL,
	updated_at          BIGINT  NOT NULL
);

ALTER TABLE conversations ADD COLUMN pinned_at BIGINT;
`,
}

// Site is the web site of an app: its page's code and settings. Empty display settings mean
// the app's own (its name, description and icon) or the defaults.
type Site struct {
	ID    string
	AppID string
	// Code is the public token of the page's URL.
	Code string
	// Version grows with every change that ends the passports issued before it.
	Version           int64
	Enabled           bool
	Title             string
	Icon              string
	IconBackground    string
	Description       string
	Copyright         string
	PrivacyPolicy     string
	DefaultLanguage   string
	CustomDisclaimer  string
	InputPlaceholder  string
	ChatColorTheme    string
	ShowWorkflowSteps bool
	// PasscodeHash is the hash of the passcode the page asks for; nil: none.
	PasscodeHash []byte
	// AllowedOrigins are the origins allowed to embed the page.
	AllowedOrigins []string
	// RequestsPerMinute is the rate limit of each end user of the page (0: none).
	RequestsPerMinute int64
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

func (m Site) validate() error {
	switch {
	case m.ID == "" || m.AppID == "":
		return errors.New("missing id or app id")
	case m.Code == "":
		return errors.New("missing code")
	case m.RequestsPerMinute < 0:
		return errors.New("negative requests per minute")
	}
	return nil
}

const siteColumns = "id, app_id, code, version, enabled, title, icon, icon_background, description, copyright, " +
	"privacy_policy, default_language, custom_disclaimer, input_placeholder, chat_color_theme, show_workflow_steps, " +
	"passcode_hash, allowed_origins, requests_per_minute, created_at, updated_at"

// CreateSite stores a new site. CreatedAt defaults to now. An app that has one already, or a
// code in use, gives an error wrapping [ErrConflict]; an unknown app one wrapping
// [ErrNotFound].
func (s *Store) CreateSite(ctx context.Context, m Site) error {
	if err := m.validate(); err != nil {
		return fmt.Errorf("store: create site: %w", err)
	}
	origins, err := encodeOrigins(m.AllowedOrigins)
	if err != nil {
		return fmt.Errorf("store: create site: %w", err)
	}
	now := nowOr(m.CreatedAt).Unix()
	_, err = s.exec(ctx, "INSERT INTO sites ("+siteColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		m.ID, m.AppID, m.Code, m.Version, m.Enabled, m.Title, m.Icon, m.IconBackground, m.Description, m.Copyright,
		m.PrivacyPolicy, m.DefaultLanguage, m.CustomDisclaimer, m.InputPlaceholder, m.ChatColorTheme, m.ShowWorkflowSteps,
		nullBytes(m.PasscodeHash), origins, m.RequestsPerMinute, now, now)
	switch {
	case err == nil:
		return nil
	case isForeignKeyViolation(err):
		return fmt.Errorf("store: create site: app %s: %w", m.AppID, ErrNotFound)
	default:
		return fmt.Errorf("store: create site: %w", err)
	}
}

// UpdateSite writes every mutable field of m over the stored site with m's id. An unknown id
// gives an error wrapping [ErrNotFound]; a code in use one wrapping [ErrConflict].
func (s *Store) UpdateSite(ctx context.Context, m Site) error {
	if err := m.validate(); err != nil {
		return fmt.Errorf("store: update site: %w", err)
	}
	origins, err := encodeOrigins(m.AllowedOrigins)
	if err != nil {
		return fmt.Errorf("store: update site: %w", err)
	}
	err = oneRow(s.exec(ctx, `UPDATE sites SET code = ?, version = ?, enabled = ?, title = ?, icon = ?, icon_background = ?,
description = ?, copyright = ?, privacy_policy = ?, default_language = ?, custom_disclaimer = ?, input_placeholder = ?,
chat_color_theme = ?, show_workflow_steps = ?, passcode_hash = ?, allowed_origins = ?, requests_per_minute = ?, updated_at = ?
WHERE id = ?`,
		m.Code, m.Version, m.Enabled, m.Title, m.Icon, m.IconBackground, m.Description, m.Copyright, m.PrivacyPolicy,
		m.DefaultLanguage, m.CustomDisclaimer, m.InputPlaceholder, m.ChatColorTheme, m.ShowWorkflowSteps,
		nullBytes(m.PasscodeHash), origins, m.RequestsPerMinute, time.Now().Unix(), m.ID))
	if err != nil {
		return fmt.Errorf("store: update site %s: %w", m.ID, err)
	}
	return nil
}

// SiteByApp returns the site of an app; an app that has none gives an error wrapping
// [ErrNotFound].
func (s *Store) SiteByApp(ctx context.Context, appID string) (Site, error) {
	return s.siteWhere(ctx, "app_id = ?", appID)
}

// SiteByCode returns the site whose code is code, enabled or not; an unknown code gives an
// error wrapping [ErrNotFound].
func (s *Store) SiteByCode(ctx context.Context, code string) (Site, error) {
	return s.siteWhere(ctx, "code = ?", code)
}

// SiteByID returns the site with the id; an unknown id gives an error wrapping [ErrNotFound].
func (s *Store) SiteByID(ctx context.Context, id string) (Site, error) {
	return s.siteWhere(ctx, "id = ?", id)
}

func (s *Store) siteWhere(ctx context.Context, cond string, arg any) (Site, error) {
	row := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+siteColumns+" FROM sites WHERE "+cond), arg)
	m, err := scanSite(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Site{}, fmt.Errorf("store: site: %w", ErrNotFound)
	}
	if err != nil {
		return Site{}, fmt.Errorf("store: site: %w", err)
	}
	return m, nil
}

func scanSite(r scanner) (Site, error) {
	var (
		m                Site
		origins          string
		created, updated int64
	)
	if err := r.Scan(&m.ID, &m.AppID, &m.Code, &m.Version, &m.Enabled, &m.Title, &m.Icon, &m.IconBackground,
		&m.Description, &m.Copyright, &m.PrivacyPolicy, &m.DefaultLanguage, &m.CustomDisclaimer, &m.InputPlaceholder,
		&m.ChatColorTheme, &m.ShowWorkflowSteps, &m.PasscodeHash, &origins, &m.RequestsPerMinute, &created, &updated); err != nil {
		return Site{}, err
	}
	if err := json.Unmarshal([]byte(origins), &m.AllowedOrigins); err != nil {
		return Site{}, fmt.Errorf("allowed origins of site %s: %w", m.ID, err)
	}
	if len(m.PasscodeHash) == 0 {
		m.PasscodeHash = nil
	}
	m.CreatedAt, m.UpdatedAt = fromUnix(created), fromUnix(updated)
	return m, nil
}

func encodeOrigins(o []string) (string, error) {
	if o == nil {
		o = []string{}
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// PinConversation pins (pinned) or unpins the end user's live conversation. Visibility is as
// for [Store.Conversation]: a conversation the caller may not see gives an error wrapping
// [ErrNotFound]. Pinning a pinned conversation keeps the time it was first pinned.
func (s *Store) PinConversation(ctx context.Context, appID, endUserID, id string, pinned bool) error {
	q := "UPDATE conversations SET pinned_at = COALESCE(pinned_at, ?) WHERE id = ? AND app_id = ? AND end_user_id = ? AND deleted_at IS NULL"
	args := []any{time.Now().Unix(), id, appID, endUserID}
	if !pinned {
		q = "UPDATE conversations SET pinned_at = NULL WHERE id = ? AND app_id = ? AND end_user_id = ? AND deleted_at IS NULL"
		args = args[1:]
	}
	if err := oneRow(s.exec(ctx, q, args...)); err != nil {
		return fmt.Errorf("store: pin conversation %s: %w", id, err)
	}
	return nil
}
