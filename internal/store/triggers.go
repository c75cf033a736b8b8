package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// migrationTriggers keeps the triggers of Workflow apps that start themselves (Dify's
// app_triggers, workflow_webhook_triggers and workflow_schedule_plans, in one table): one row
// per trigger node of an app's published graph. A webhook's row holds its random id, the secret
// part of its URL, kept for as long as the node stays in the app's published graph; a schedule's
// holds its cron expression, time zone and next tick. Both can be paused.
//
// Each tick of a schedule is claimed once, by one replica, with a row of trigger_ticks whose key
// is the trigger and the tick: the claim, the job that runs the app for the tick and the
// schedule's next tick are written in one transaction, so a tick is neither run twice nor lost.
//
// Workflow runs record how they were started (Dify's triggered_from): app-run through the API,
// webhook or schedule.
var migrationTriggers = migration{
	version: 23,
	name:    "app triggers (webhooks, schedules), their ticks, and workflow runs' triggered_from",
	sqlite: `
ALTER TABLE workflow_runs ADD COLUMN triggered_from TEXT NOT NULL DEFAULT 'app-run';

CREATE TABLE app_triggers (
	app_id      TEXT    NOT NULL REFERENCES apps (id),
	node_id     TEXT    NOT NULL,
	kind        TEXT    NOT NULL CHECK (kind IN ('webhook', 'schedule')),
	webhook_id  TEXT    UNIQUE,
	cron        TEXT    NOT NULL,
	timezone    TEXT    NOT NULL,
	status      TEXT    NOT NULL CHECK (status IN ('enabled', 'paused')),
	next_run_at INTEGER,
	version_id  TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	PRIMARY KEY (app_id, node_id),
	CHECK ((kind = 'webhook') = (webhook_id IS NOT NULL))
) STRICT;

CREATE INDEX app_triggers_due ON app_triggers (kind, status, next_run_at);

CREATE TABLE trigger_ticks (
	app_id     TEXT    NOT NULL,
	node_id    TEXT    NOT NULL,
	tick_at    INTEGER NOT NULL,
	job_id     TEXT    NOT NULL,
	claimed_by TEXT    NOT NULL,
	claimed_at INTEGER NOT NULL,
	PRIMARY KEY (app_id, node_id, tick_at)
) STRICT;
`,
	postgres: `
ALTER TABLE workflow_runs ADD COLUMN triggered_from TEXT NOT NULL DEFAULT 'app-run';

CREATE TABLE app_triggers (
	app_id      TEXT   NOT NULL REFERENCES apps (id),
	node_id     TEXT   NOT NULL,
	kind        TEXT   NOT NULL CHECK (kind IN ('webhook', 'schedule')),
	webhook_id  TEXT   UNIQUE,
	cron        TEXT   NOT NULL,
	timezone    TEXT   NOT NULL,
	status      TEXT   NOT NULL CHECK (status IN ('enabled', 'paused')),
	next_run_at BIGINT,
	version_id  TEXT   NOT NULL,
	created_at  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL,
	PRIMARY KEY (app_id, node_id),
	CHECK ((kind = 'webhook') = (webhook_id IS NOT NULL))
);

CREATE INDEX app_triggers_due ON app_triggers (kind, status, next_run_at);

CREATE TABLE trigger_ticks (
	app_id     TEXT   NOT NULL,
	node_id    TEXT   NOT NULL,
	tick_at    BIGINT NOT NULL,
	job_id     TEXT   NOT NULL,
	claimed_by TEXT   NOT NULL,
	claimed_at BIGINT NOT NULL,
	PRIMARY KEY (app_id, node_id, tick_at)
);
`,
}

// Trigger kinds (app_triggers.kind) and how a workflow run was started (Dify's
// WorkflowRunTriggeredFrom values; Parley has no debugger, so no "debugging").
const (
	TriggerWebhook  = "webhook"
	TriggerSchedule = "schedule"
	// TriggeredFromAppRun is a run started through the API (POST /workflows/run).
	TriggeredFromAppRun = "app-run"
)

// Trigger statuses.
const (
	TriggerEnabled = "enabled"
	TriggerPaused  = "paused"
)

// tickRetention is how long a claimed tick is remembered: far longer than any replica can hold
// a stale view of a schedule's next tick.
const tickRetention = 24 * time.Hour

// AppTrigger is one trigger node of an app's published graph.
type AppTrigger struct {
	AppID  string
	NodeID string
	// Kind is TriggerWebhook or TriggerSchedule.
	Kind string
	// WebhookID is a webhook's random id (its URL is /triggers/webhook/{id}); "" for schedules.
	WebhookID string
	// Cron and Timezone are a schedule's effective cron expression (a visual schedule's too)
	// and time zone; empty for webhooks.
	Cron, Timezone string
	// Status is TriggerEnabled or TriggerPaused.
	Status string
	// NextRunAt is a schedule's next tick (nil for webhooks, or a schedule that never ticks).
	NextRunAt *time.Time
	// VersionID is the published version whose graph the row was synced from.
	VersionID string
	CreatedAt time.Time
	UpdatedAt time.Time
}

const triggerColumns = "app_id, node_id, kind, webhook_id, cron, timezone, status, next_run_at, version_id, created_at, updated_at"

func scanTrigger(r scanner) (AppTrigger, error) {
	var (
		t                AppTrigger
		webhook          sql.NullString
		next             sql.NullInt64
		created, updated int64
	)
	if err := r.Scan(&t.AppID, &t.NodeID, &t.Kind, &webhook, &t.Cron, &t.Timezone, &t.Status, &next, &t.VersionID,
		&created, &updated); err != nil {
		return AppTrigger{}, err
	}
	t.WebhookID = webhook.String
	if next.Valid {
		at := time.Unix(next.Int64, 0).UTC()
		t.NextRunAt = &at
	}
	t.CreatedAt, t.UpdatedAt = fromUnix(created), fromUnix(updated)
	return t, nil
}

func nullTime(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.Unix(), Valid: true}
}

// SyncAppTriggers makes the triggers of app agree with want, the trigger nodes of its published
// version versionID, in one transaction, and returns them as stored. A node already known with
// the same kind keeps its webhook id and its status (a paused schedule stays paused); a
// schedule whose cron expression or time zone changed takes want's next tick, one unchanged
// keeps its own. A new node is stored as want has it (its webhook id, a fresh random one, and
// its first tick); the rows of nodes no longer in the graph are deleted. A webhook id already
// used by another trigger gives an error wrapping [ErrConflict].
func (s *Store) SyncAppTriggers(ctx context.Context, appID, versionID string, want []AppTrigger) ([]AppTrigger, error) {
	var out []AppTrigger
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		x := s.inTx(tx)
		have, err := queryAll(ctx, x, scanTrigger, s.Rebind("SELECT "+triggerColumns+" FROM app_triggers WHERE app_id = ?"), appID)
		if err != nil {
			return err
		}
		byNode := make(map[string]AppTrigger, len(have))
		for _, t := range have {
			byNode[t.NodeID] = t
		}
		now := time.Now().Unix()
		keep := map[string]bool{}
		for _, w := range want {
			keep[w.NodeID] = true
			old, ok := byNode[w.NodeID]
			if ok && old.Kind == w.Kind {
				next := old.NextRunAt
				if old.Cron != w.Cron || old.Timezone != w.Timezone {
					next = w.NextRunAt
				}
				if _, err := x.ExecContext(ctx, s.Rebind(`UPDATE app_triggers SET cron = ?, timezone = ?, next_run_at = ?,
version_id = ?, updated_at = ? WHERE app_id = ? AND node_id = ?`), w.Cron, w.Timezone, nullTime(next), versionID, now,
					appID, w.NodeID); err != nil {
					return err
				}
				continue
			}
			if ok {
				if _, err := x.ExecContext(ctx, s.Rebind("DELETE FROM app_triggers WHERE app_id = ? AND node_id = ?"), appID, w.NodeID); err != nil {
					return err
				}
			}
			status := w.Status
			if status == "" {
				status = TriggerEnabled
			}
			if _, err := x.ExecContext(ctx, s.Rebind("INSERT INTO app_triggers ("+triggerColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
				appID, w.NodeID, w.Kind, nullString(w.WebhookID), w.Cron, w.Timezone, status, nullTime(w.NextRunAt), versionID,
				now, now); err != nil {
				return mapError(err)
			}
		}
		for _, t := range have {
			if !keep[t.NodeID] {
				if _, err := x.ExecContext(ctx, s.Rebind("DELETE FROM app_triggers WHERE app_id = ? AND node_id = ?"), appID, t.NodeID); err != nil {
					return err
				}
			}
		}
		out, err = queryAll(ctx, x, scanTrigger, s.Rebind("SELECT "+triggerColumns+" FROM app_triggers WHERE app_id = ? ORDER BY node_id"), appID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: sync triggers of app %s: %w", appID, err)
	}
	return out, nil
}

// AppTriggers returns the triggers of an app, by node id.
func (s *Store) AppTriggers(ctx context.Context, appID string) ([]AppTrigger, error) {
	out, err := queryAll(ctx, s.conn(), scanTrigger, s.Rebind("SELECT "+triggerColumns+" FROM app_triggers WHERE app_id = ? ORDER BY node_id"), appID)
	if err != nil {
		return nil, fmt.Errorf("store: triggers of app %s: %w", appID, err)
	}
	return out, nil
}

// TriggerVersions returns, for every app with triggers, the published version its triggers
// were synced from.
func (s *Store) TriggerVersions(ctx context.Context) (map[string]string, error) {
	rows, err := s.conn().QueryContext(ctx, "SELECT DISTINCT app_id, version_id FROM app_triggers")
	if err != nil {
		return nil, fmt.Errorf("store: trigger versions: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var app, version string
		if err := rows.Scan(&app, &version); err != nil {
			return nil, fmt.Errorf("store: trigger versions: %w", err)
		}
		out[app] = version
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: trigger versions: %w", err)
	}
	return out, nil
}

// TriggerByWebhookID returns the webhook trigger with that id, or an error wrapping
// [ErrNotFound]; the triggers of deleted apps are gone with them.
func (s *Store) TriggerByWebhookID(ctx context.Context, webhookID string) (AppTrigger, error) {
	t, err := scanTrigger(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+triggerColumns+" FROM app_triggers WHERE webhook_id = ?"), webhookID))
	if err != nil {
		return AppTrigger{}, lookupErr(err, "webhook %s", webhookID)
	}
	return t, nil
}

// SetTriggerStatus pauses or resumes a trigger. next is a schedule's next tick once resumed
// (nil leaves it as it is). An unknown trigger gives an error wrapping [ErrNotFound].
func (s *Store) SetTriggerStatus(ctx context.Context, appID, nodeID, status string, next *time.Time) error {
	if status != TriggerEnabled && status != TriggerPaused {
		return fmt.Errorf("store: set trigger status: unknown status %q", status)
	}
	q := "UPDATE app_triggers SET status = ?, updated_at = ? WHERE app_id = ? AND node_id = ?"
	args := []any{status, time.Now().Unix(), appID, nodeID}
	if next != nil {
		q = "UPDATE app_triggers SET status = ?, updated_at = ?, next_run_at = ? WHERE app_id = ? AND node_id = ?"
		args = []any{status, time.Now().Unix(), next.Unix(), appID, nodeID}
	}
	if err := oneRow(s.exec(ctx, q, args...)); err != nil {
		return fmt.Errorf("store: set status of trigger %s of app %s: %w", nodeID, appID, err)
	}
	return nil
}

// DueSchedules returns up to limit enabled schedules of live apps whose next tick is at or
// before now, the most overdue first.
func (s *Store) DueSchedules(ctx context.Context, now time.Time, limit int) ([]AppTrigger, error) {
	out, err := queryAll(ctx, s.conn(), scanTrigger, s.Rebind("SELECT "+qualify("t", triggerColumns)+
		` FROM app_triggers t JOIN apps a ON a.id = t.app_id
WHERE t.kind = ? AND t.status = ? AND t.next_run_at IS NOT NULL AND t.next_run_at <= ? AND a.deleted_at IS NULL
ORDER BY t.next_run_at LIMIT ?`), TriggerSchedule, TriggerEnabled, now.Unix(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due schedules: %w", err)
	}
	return out, nil
}

// ErrTickTaken means a schedule's tick was claimed already (by another replica), or the
// schedule moved on (paused, resumed, changed) since it was read.
var ErrTickTaken = errors.New("store: the tick is claimed already")

// ClaimScheduleTick claims tick of the schedule of appID's node nodeID for owner, in one
// transaction: the schedule's next tick moves from tick to next (none when next is the zero
// time), a trigger_ticks row records the
// claim (its key is the trigger and the tick, so no tick is claimed twice), and job, which runs
// the app for the tick, is queued. A schedule whose next tick is no longer tick, or is paused,
// or whose tick was claimed already, gives [ErrTickTaken] and changes nothing.
func (s *Store) ClaimScheduleTick(ctx context.Context, appID, nodeID string, tick, next time.Time, owner string, job JobRow) error {
	if job.ID == "" || job.Kind == "" || job.MaxAttempts <= 0 {
		return errors.New("store: claim tick: the job needs an id, a kind and max attempts")
	}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		x := s.inTx(tx)
		now := time.Now()
		var nextAt *time.Time
		if !next.IsZero() {
			nextAt = &next
		}
		res, err := x.ExecContext(ctx, s.Rebind(`UPDATE app_triggers SET next_run_at = ?, updated_at = ?
WHERE app_id = ? AND node_id = ? AND kind = ? AND status = ? AND next_run_at = ?`),
			nullTime(nextAt), now.Unix(), appID, nodeID, TriggerSchedule, TriggerEnabled, tick.Unix())
		if err := oneRow(res, err); errors.Is(err, ErrNotFound) {
			return ErrTickTaken
		} else if err != nil {
			return err
		}
		res, err = x.ExecContext(ctx, s.Rebind(`INSERT INTO trigger_ticks (app_id, node_id, tick_at, job_id, claimed_by, claimed_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, node_id, tick_at) DO NOTHING`), appID, nodeID, tick.Unix(), job.ID, owner, now.Unix())
		if err := oneRow(res, err); errors.Is(err, ErrNotFound) {
			return ErrTickTaken
		} else if err != nil {
			return err
		}
		if _, err := x.ExecContext(ctx, s.Rebind(`DELETE FROM trigger_ticks WHERE app_id = ? AND node_id = ? AND tick_at < ?`),
			appID, nodeID, tick.Add(-tickRetention).Unix()); err != nil {
			return err
		}
		if job.Payload == nil {
			job.Payload = []byte{}
		}
		ms := now.UnixMilli()
		_, err = x.ExecContext(ctx, s.Rebind(`INSERT INTO jobs
		(id, kind, payload, state, attempts, max_attempts, run_after, lease_until, last_error, created_at, updated_at, traceparent)
		VALUES (?, ?, ?, 'queued', 0, ?, ?, 0, '', ?, ?, ?)`),
			job.ID, job.Kind, job.Payload, job.MaxAttempts, ms, ms, ms, job.TraceParent)
		return mapError(err)
	})
	if errors.Is(err, ErrTickTaken) {
		return ErrTickTaken
	}
	if err != nil {
		return fmt.Errorf("store: claim tick %s of trigger %s of app %s: %w", tick.UTC().Format(time.RFC3339), nodeID, appID, err)
	}
	return nil
}

// ScheduleTicks returns the ticks of a schedule claimed since from, oldest first.
func (s *Store) ScheduleTicks(ctx context.Context, appID, nodeID string, from time.Time) ([]time.Time, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT tick_at FROM trigger_ticks WHERE app_id = ? AND node_id = ? AND tick_at >= ?
ORDER BY tick_at`), appID, nodeID, from.Unix())
	if err != nil {
		return nil, fmt.Errorf("store: ticks: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at int64
		if err := rows.Scan(&at); err != nil {
			return nil, fmt.Errorf("store: ticks: %w", err)
		}
		out = append(out, time.Unix(at, 0).UTC())
	}
	return out, rows.Err()
}
