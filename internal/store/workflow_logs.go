package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// WorkflowLog is one run of a Workflow app as its logs list it: the run, the version number that
// ran, and the end user who started it. Its id is the run's bookkeeping message.
type WorkflowLog struct {
	ID  string
	Run WorkflowRun
	// Version is the number of the app version that ran (0 if it is gone).
	Version          int64
	EndUserID        string
	EndUserSessionID string
}

// WorkflowLogFilter selects the logs of one app. Zero fields do not filter.
type WorkflowLogFilter struct {
	AppID string
	// Keyword matches the run's inputs and outputs and the end user's session id, ignoring case.
	Keyword       string
	Status        string
	Before, After time.Time
	SessionID     string
	Offset, Limit int
}

// WorkflowLogs returns a page of the runs of a Workflow app (runs without a conversation),
// newest first (the bookkeeping message's time-ordered id breaks ties within a second), and how
// many match in all.
func (s *Store) WorkflowLogs(ctx context.Context, f WorkflowLogFilter) ([]WorkflowLog, int, error) {
	where := []string{"r.app_id = ?", "r.conversation_id IS NULL"}
	args := []any{f.AppID}
	if f.Status != "" {
		where, args = append(where, "r.status = ?"), append(args, f.Status)
	}
	if !f.Before.IsZero() {
		where, args = append(where, "r.created_at < ?"), append(args, f.Before.Unix())
	}
	if !f.After.IsZero() {
		where, args = append(where, "r.created_at > ?"), append(args, f.After.Unix())
	}
	if f.SessionID != "" {
		where, args = append(where, "e.session_id = ?"), append(args, f.SessionID)
	}
	if f.Keyword != "" {
		like := s.ilike() + ` ? ESCAPE '\'`
		where = append(where, "(r.inputs "+like+" OR r.outputs "+like+" OR e.session_id "+like+")")
		p := containsPattern(f.Keyword)
		args = append(args, p, p, p)
	}
	joins := ` FROM workflow_runs r JOIN messages m ON m.id = r.message_id JOIN end_users e ON e.id = m.end_user_id`
	cond := ` WHERE ` + strings.Join(where, " AND ")
	var total int
	if err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT COUNT(*)"+joins+cond), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count workflow logs: %w", err)
	}
	rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT r.id, r.workflow_id, COALESCE(v.version, 0), r.status, r.error,
r.elapsed, r.total_tokens, r.total_steps, r.exceptions_count, r.created_at, r.finished_at, r.triggered_from, m.id, e.id, e.session_id`+
		joins+" LEFT JOIN app_versions v ON v.id = r.workflow_id"+cond+
		" ORDER BY r.created_at DESC, m.id DESC LIMIT ? OFFSET ?"), append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list workflow logs: %w", err)
	}
	defer rows.Close()
	var out []WorkflowLog
	for rows.Next() {
		var (
			l        WorkflowLog
			created  int64
			finished sql.NullInt64
		)
		r := &l.Run
		if err := rows.Scan(&r.ID, &r.WorkflowID, &l.Version, &r.Status, &r.Error, &r.Elapsed, &r.TotalTokens, &r.TotalSteps,
			&r.ExceptionsCount, &created, &finished, &r.TriggeredFrom, &l.ID, &l.EndUserID, &l.EndUserSessionID); err != nil {
			return nil, 0, fmt.Errorf("store: list workflow logs: %w", err)
		}
		r.AppID, r.MessageID, r.CreatedAt = f.AppID, l.ID, fromUnix(created)
		if finished.Valid {
			t := fromUnix(finished.Int64)
			r.FinishedAt = &t
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: list workflow logs: %w", err)
	}
	return out, total, nil
}
