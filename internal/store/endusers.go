package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// EndUser is a client-side user of one app: Dify's EndUser of type
// service-api, created on first sight of a `user` value
// (docs/dify-compat.md, "End users"). The same `user` string in two apps is two end
// users.
type EndUser struct {
	ID    string
	AppID string
	// SessionID is the client's `user` value, verbatim.
	SessionID string
	CreatedAt time.Time
	UpdatedAt time.Time
}

const endUserColumns = "id, app_id, session_id, created_at, updated_at"

// EndUser returns the end user of appID whose session id is sessionID,
// creating it on first use. Creation is race-safe across goroutines and
// processes on both engines: UNIQUE (app_id, session_id) lets one insert
// win, a losing insert does nothing, and both callers then read the same
// row. An empty sessionID is an error; an unknown app gives an error
// wrapping [ErrNotFound].
func (s *Store) EndUser(ctx context.Context, appID, sessionID string) (EndUser, error) {
	if appID == "" || sessionID == "" {
		return EndUser{}, errors.New("store: end user: app id and session id are required")
	}
	u, err := s.endUserBySession(ctx, appID, sessionID)
	if !errors.Is(err, sql.ErrNoRows) {
		if err != nil {
			return EndUser{}, fmt.Errorf("store: end user: %w", err)
		}
		return u, nil
	}
	now := time.Now().Unix()
	_, err = s.exec(ctx,
		"INSERT INTO end_users ("+endUserColumns+") VALUES (?, ?, ?, ?, ?) ON CONFLICT (app_id, session_id) DO NOTHING",
		NewID(), appID, sessionID, now, now)
	switch {
	case err == nil:
	case isForeignKeyViolation(err):
		return EndUser{}, fmt.Errorf("store: end user: app %s: %w", appID, ErrNotFound)
	default:
		return EndUser{}, fmt.Errorf("store: create end user: %w", err)
	}
	// Either our insert or a concurrent one has committed by now: on
	// PostgreSQL a conflicting insert waits for the other transaction to
	// commit, and this read takes a fresh snapshot.
	u, err = s.endUserBySession(ctx, appID, sessionID)
	if err != nil {
		return EndUser{}, fmt.Errorf("store: end user: %w", err)
	}
	return u, nil
}

func (s *Store) endUserBySession(ctx context.Context, appID, sessionID string) (EndUser, error) {
	row := s.conn().QueryRowContext(ctx,
		s.Rebind("SELECT "+endUserColumns+" FROM end_users WHERE app_id = ? AND session_id = ?"), appID, sessionID)
	return scanEndUser(row)
}

// EndUserByID returns the end user with the given id if it belongs to
// appID; otherwise, or if there is no such user, an error wrapping
// [ErrNotFound].
func (s *Store) EndUserByID(ctx context.Context, appID, id string) (EndUser, error) {
	row := s.conn().QueryRowContext(ctx,
		s.Rebind("SELECT "+endUserColumns+" FROM end_users WHERE id = ? AND app_id = ?"), id, appID)
	u, err := scanEndUser(row)
	if errors.Is(err, sql.ErrNoRows) {
		return EndUser{}, fmt.Errorf("store: end user %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return EndUser{}, fmt.Errorf("store: end user %s: %w", id, err)
	}
	return u, nil
}

func scanEndUser(r scanner) (EndUser, error) {
	var (
		u                EndUser
		created, updated int64
	)
	if err := r.Scan(&u.ID, &u.AppID, &u.SessionID, &created, &updated); err != nil {
		return EndUser{}, err
	}
	u.CreatedAt, u.UpdatedAt = fromUnix(created), fromUnix(updated)
	return u, nil
}
