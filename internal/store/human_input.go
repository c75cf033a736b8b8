package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Human input: a workflow run that reached a human-input node is paused. Its whole state is a
// workflow_pauses row (written in the same commit that marks the run paused and creates its
// forms); each form is a human_input_forms row whose status moves once, by a conditional
// UPDATE, from waiting to submitted, timeout or expired. That UPDATE is the single point of
// decision between a submission and the timer; the run is resumed by whoever then claims it
// (paused → running, conditional too) and consumes the decided forms.

// Form statuses.
const (
	FormWaiting   = "waiting"
	FormSubmitted = "submitted"
	FormTimeout   = "timeout"
	FormExpired   = "expired"
)

// WorkflowPause is the persisted state of a paused run.
type WorkflowPause struct {
	WorkflowRunID string
	// State is the engine's state (workflow.State) and Context what the runner needs to resume
	// (the app, the version, the message, the user): JSON.
	State, Context json.RawMessage
	CreatedAt      time.Time
}

// HumanInputForm is one form of a paused run.
type HumanInputForm struct {
	ID            string
	WorkflowRunID string
	AppID         string
	NodeID        string
	// Token is the bearer token of a form delivered to the web app; empty for others.
	Token string
	// Definition is the form as its node rendered it (workflow.HumanInputForm): JSON.
	Definition json.RawMessage
	Status     string
	// Expiration is when the form times out; GlobalDeadline when the run is stopped for good.
	Expiration, GlobalDeadline time.Time
	Action                     string
	// SubmittedData are the submitted values (JSON object), empty unless submitted.
	SubmittedData json.RawMessage
	SubmittedBy   string
	DecidedAt     *time.Time
	// Consumed is set once a resumed run took the decision.
	Consumed  bool
	CreatedAt time.Time
}

// RunSegment is what a run segment that ended (paused again or finished) writes at once.
type RunSegment struct {
	Run WorkflowRun
	// Pause is the new paused state; nil deletes the run's pause (it finished).
	Pause *WorkflowPause
	// Forms are the forms created in the segment.
	Forms []HumanInputForm
	// Consumed are the forms whose decision the segment took.
	Consumed []string
	// First says the segment is the run's first: no earlier one paused it, so there is no
	// pause and no waiting form of the run to clean up when it finishes.
	First bool
	// TraceParent is the W3C traceparent of the span that paused the run, "" for none: the
	// deadline jobs of the segment's forms link to it, as other jobs link to what queued them.
	TraceParent string
}

// SaveRunSegment writes the end of a run segment in one commit.
func (s *Store) SaveRunSegment(ctx context.Context, seg RunSegment) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		x := s.inTx(tx)
		r := seg.Run
		r.CreatedAt = nowOr(r.CreatedAt)
		var finished sql.NullInt64
		if r.FinishedAt != nil {
			finished = sql.NullInt64{Int64: r.FinishedAt.Unix(), Valid: true}
		}
		if _, err := x.ExecContext(ctx, s.Rebind(`INSERT INTO workflow_runs
(id, app_id, workflow_id, conversation_id, message_id, status, inputs, outputs, error, elapsed, total_tokens,
 total_steps, exceptions_count, created_at, finished_at, triggered_from)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET status = excluded.status, outputs = excluded.outputs, error = excluded.error,
 elapsed = excluded.elapsed, total_tokens = excluded.total_tokens, total_steps = excluded.total_steps,
 exceptions_count = excluded.exceptions_count, finished_at = excluded.finished_at`),
			r.ID, r.AppID, r.WorkflowID, nullString(r.ConversationID), nullString(r.MessageID), r.Status, orEmptyObject(r.Inputs),
			orEmptyObject(r.Outputs), r.Error, r.Elapsed, r.TotalTokens, r.TotalSteps, r.ExceptionsCount, r.CreatedAt.Unix(), finished,
			r.triggeredFrom()); err != nil {
			return err
		}
		now := time.Now().Unix()
		if p := seg.Pause; p != nil {
			if _, err := x.ExecContext(ctx, s.Rebind(`INSERT INTO workflow_pauses (workflow_run_id, state, context, created_at, updated_at)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (workflow_run_id) DO UPDATE SET state = excluded.state, context = excluded.context,
 updated_at = excluded.updated_at`), r.ID, string(p.State), string(p.Context), now, now); err != nil {
				return err
			}
		} else if !seg.First {
			if _, err := x.ExecContext(ctx, s.Rebind(`DELETE FROM workflow_pauses WHERE workflow_run_id = ?`), r.ID); err != nil {
				return err
			}
			// The run ended: forms it still waited for (other branches) cannot resume it.
			if _, err := x.ExecContext(ctx, s.Rebind(`UPDATE human_input_forms SET status = 'expired', decided_at = ?
WHERE workflow_run_id = ? AND status = 'waiting'`), now, r.ID); err != nil {
				return err
			}
		}
		for _, f := range seg.Forms {
			if _, err := x.ExecContext(ctx, s.Rebind(`INSERT INTO human_input_forms (id, workflow_run_id, app_id, node_id, token,
definition, status, expiration_time, global_deadline, consumed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`),
				f.ID, r.ID, f.AppID, f.NodeID, nullString(f.Token), string(f.Definition), FormWaiting, f.Expiration.Unix(),
				f.GlobalDeadline.Unix(), nowOr(f.CreatedAt).Unix()); err != nil {
				return err
			}
			if err := s.insertFormTimer(ctx, x, f, seg.TraceParent, now); err != nil {
				return err
			}
		}
		for _, id := range seg.Consumed {
			if _, err := x.ExecContext(ctx, s.Rebind(`UPDATE human_input_forms SET consumed = 1 WHERE id = ?`), id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: save run segment %s: %w", seg.Run.ID, mapError(err))
	}
	return nil
}

// WorkflowPauseOf returns a run's paused state, or an error wrapping ErrNotFound.
func (s *Store) WorkflowPauseOf(ctx context.Context, runID string) (WorkflowPause, error) {
	var (
		p              WorkflowPause
		state, context string
		created        int64
	)
	err := s.conn().QueryRowContext(ctx, s.Rebind(`SELECT workflow_run_id, state, context, created_at FROM workflow_pauses
WHERE workflow_run_id = ?`), runID).Scan(&p.WorkflowRunID, &state, &context, &created)
	if err != nil {
		return WorkflowPause{}, lookupErr(err, "pause of %s", runID)
	}
	p.State, p.Context, p.CreatedAt = json.RawMessage(state), json.RawMessage(context), fromUnix(created)
	return p, nil
}

// ClaimPausedRun moves a paused run to running; false when it was not paused (another
// resumption holds it, or it ended).
// Its message's heartbeat is refreshed in the same commit, so that the sweep of interrupted
// answers does not take the resumed run for one before its first heartbeat.
func (s *Store) ClaimPausedRun(ctx context.Context, runID string) (bool, error) {
	claimed := false
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		x := s.inTx(tx)
		res, err := x.ExecContext(ctx, s.Rebind(`UPDATE workflow_runs SET status = 'running' WHERE id = ? AND status = 'paused'`), runID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		claimed = true
		_, err = x.ExecContext(ctx, s.Rebind(`UPDATE messages SET updated_at = ?
WHERE status = ? AND id = (SELECT message_id FROM workflow_runs WHERE id = ?)`), time.Now().Unix(), MessageStatusRunning, runID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: claim run %s: %w", runID, mapError(err))
	}
	return claimed, nil
}

// ReleaseRun puts back a claimed run that had nothing to resume.
func (s *Store) ReleaseRun(ctx context.Context, runID string) error {
	if _, err := s.exec(ctx, `UPDATE workflow_runs SET status = 'paused' WHERE id = ? AND status = 'running'`, runID); err != nil {
		return fmt.Errorf("store: release run %s: %w", runID, err)
	}
	return nil
}

const formColumns = `id, workflow_run_id, app_id, node_id, token, definition, status, expiration_time, global_deadline,
action, submitted_data, submitted_by, decided_at, consumed, created_at`

func scanForm(sc interface{ Scan(...any) error }) (HumanInputForm, error) {
	var (
		f                             HumanInputForm
		token, action, data, by       sql.NullString
		def                           string
		exp, global, created, consume int64
		decided                       sql.NullInt64
	)
	if err := sc.Scan(&f.ID, &f.WorkflowRunID, &f.AppID, &f.NodeID, &token, &def, &f.Status, &exp, &global, &action,
		&data, &by, &decided, &consume, &created); err != nil {
		return HumanInputForm{}, err
	}
	f.Token, f.Action, f.SubmittedBy = token.String, action.String, by.String
	f.Definition, f.SubmittedData = json.RawMessage(def), rawOrNil(data)
	f.Expiration, f.GlobalDeadline, f.CreatedAt, f.Consumed = fromUnix(exp), fromUnix(global), fromUnix(created), consume != 0
	if decided.Valid {
		t := fromUnix(decided.Int64)
		f.DecidedAt = &t
	}
	return f, nil
}

// HumanInputFormByToken returns the form a token opens, or an error wrapping ErrNotFound.
func (s *Store) HumanInputFormByToken(ctx context.Context, token string) (HumanInputForm, error) {
	f, err := scanForm(s.conn().QueryRowContext(ctx, s.Rebind(`SELECT `+formColumns+` FROM human_input_forms WHERE token = ?`), token))
	if err != nil {
		return HumanInputForm{}, lookupErr(err, "human input form")
	}
	return f, nil
}

// HumanInputFormByID returns one form, or an error wrapping ErrNotFound.
func (s *Store) HumanInputFormByID(ctx context.Context, id string) (HumanInputForm, error) {
	f, err := scanForm(s.conn().QueryRowContext(ctx, s.Rebind(`SELECT `+formColumns+` FROM human_input_forms WHERE id = ?`), id))
	if err != nil {
		return HumanInputForm{}, lookupErr(err, "human input form")
	}
	return f, nil
}

// HumanInputForms returns the forms of a run, oldest first.

func (s *Store) HumanInputForms(ctx context.Context, runID string) ([]HumanInputForm, error) {
	return s.queryForms(ctx, `SELECT `+formColumns+` FROM human_input_forms WHERE workflow_run_id = ? ORDER BY created_at, id`, runID)
}

// DueHumanInputForms returns up to limit waiting forms whose timeout or global deadline is at
// or before now.
func (s *Store) DueHumanInputForms(ctx context.Context, now time.Time, limit int) ([]HumanInputForm, error) {
	return s.queryForms(ctx, `SELECT `+formColumns+` FROM human_input_forms WHERE status = 'waiting'
AND (expiration_time <= ? OR global_deadline <= ?) ORDER BY expiration_time, id LIMIT ?`, now.Unix(), now.Unix(), limit)
}

func (s *Store) queryForms(ctx context.Context, q string, args ...any) ([]HumanInputForm, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("store: human input forms: %w", err)
	}
	defer rows.Close()
	var out []HumanInputForm
	for rows.Next() {
		f, err := scanForm(rows)
		if err != nil {
			return nil, fmt.Errorf("store: human input forms: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: human input forms: %w", err)
	}
	return out, nil
}

// NextHumanInputDeadline is the earliest timeout or global deadline of a waiting form; false
// when no form waits.
func (s *Store) NextHumanInputDeadline(ctx context.Context) (time.Time, bool, error) {
	var exp, global sql.NullInt64
	err := s.conn().QueryRowContext(ctx, `SELECT MIN(expiration_time), MIN(global_deadline) FROM human_input_forms WHERE status = 'waiting'`).Scan(&exp, &global)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: next human input deadline: %w", err)
	}
	if !exp.Valid {
		return time.Time{}, false, nil
	}
	return fromUnix(min(exp.Int64, global.Int64)), true, nil
}

// SubmitHumanInputForm records a submission if the form still waits and has not expired at
// now; false otherwise (the caller reads the form again to say why).
func (s *Store) SubmitHumanInputForm(ctx context.Context, id, action string, data json.RawMessage, by string, now time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE human_input_forms SET status = 'submitted', action = ?, submitted_data = ?,
submitted_by = ?, decided_at = ? WHERE id = ? AND status = 'waiting' AND expiration_time > ? AND global_deadline > ?`,
		action, string(data), nullString(by), now.Unix(), id, now.Unix(), now.Unix())
	if err != nil {
		return false, fmt.Errorf("store: submit form %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// TimeOutHumanInputForm marks a waiting form timed out; false if it was decided already.
func (s *Store) TimeOutHumanInputForm(ctx context.Context, id string, now time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE human_input_forms SET status = 'timeout', decided_at = ? WHERE id = ? AND status = 'waiting'`,
		now.Unix(), id)
	if err != nil {
		return false, fmt.Errorf("store: time out form %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ExpireHumanInputRun ends a paused run whose form passed the global deadline: the run is
// stopped with errText, its waiting forms expire, its pause is deleted and its message (if any)
// ends stopped. False when the run was not paused (a resumption holds it; try later).
func (s *Store) ExpireHumanInputRun(ctx context.Context, runID, errText string, now time.Time) (bool, error) {
	done := false
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		x := s.inTx(tx)
		res, err := x.ExecContext(ctx, s.Rebind(`UPDATE workflow_runs SET status = 'stopped', error = ?, finished_at = ?
WHERE id = ? AND status = 'paused'`), errText, now.Unix(), runID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		done = true
		if _, err := x.ExecContext(ctx, s.Rebind(`UPDATE human_input_forms SET status = 'expired', decided_at = ?
WHERE workflow_run_id = ? AND status = 'waiting'`), now.Unix(), runID); err != nil {
			return err
		}
		if _, err := x.ExecContext(ctx, s.Rebind(`DELETE FROM workflow_pauses WHERE workflow_run_id = ?`), runID); err != nil {
			return err
		}
		_, err = x.ExecContext(ctx, s.Rebind(`UPDATE messages SET status = ?, updated_at = ?
WHERE status = ? AND id = (SELECT message_id FROM workflow_runs WHERE id = ?)`), MessageStatusStopped, now.Unix(),
			MessageStatusRunning, runID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: expire run %s: %w", runID, mapError(err))
	}
	return done, nil
}

// WorkflowRunOwner returns the end user who started a run (through its message), "" if none.
func (s *Store) WorkflowRunOwner(ctx context.Context, runID string) (string, error) {
	var u sql.NullString
	err := s.conn().QueryRowContext(ctx, s.Rebind(`SELECT m.end_user_id FROM workflow_runs r
LEFT JOIN messages m ON m.id = r.message_id WHERE r.id = ?`), runID).Scan(&u)
	if err != nil {
		return "", lookupErr(err, "workflow run %s", runID)
	}
	return u.String, nil
}

// migrationHumanInput adds the paused state of workflow runs and their human-input forms.
var migrationHumanInput = migration{
	version: 12,
	name:    "human input forms and paused workflow runs",
	sqlite: `
CREATE TABLE workflow_pauses (
	workflow_run_id TEXT    NOT NULL PRIMARY KEY REFERENCES workflow_runs (id),
	state           TEXT    NOT NULL,
	context         TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
) STRICT;

CREATE TABLE human_input_forms (
	id              TEXT    NOT NULL PRIMARY KEY,
	workflow_run_id TEXT    NOT NULL REFERENCES workflow_runs (id),
	app_id          TEXT    NOT NULL,
	node_id         TEXT    NOT NULL,
	token           TEXT    UNIQUE,
	definition      TEXT    NOT NULL,
	status          TEXT    NOT NULL CHECK (status IN ('waiting', 'submitted', 'timeout', 'expired')),
	expiration_time INTEGER NOT NULL,
	global_deadline INTEGER NOT NULL,
	action          TEXT,
	submitted_data  TEXT,
	submitted_by    TEXT,
	decided_at      INTEGER,
	consumed        INTEGER NOT NULL,
	created_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX human_input_forms_run ON human_input_forms (workflow_run_id, created_at);
CREATE INDEX human_input_forms_waiting ON human_input_forms (expiration_time) WHERE status = 'waiting';
`,
	postgres: `
CREATE TABLE workflow_pauses (
	workflow_run_id TEXT   NOT NULL PRIMARY KEY REFERENCES workflow_runs (id),
	state           TEXT   NOT NULL,
	context         TEXT   NOT NULL,
	created_at      BIGINT NOT NULL,
	updated_at      BIGINT NOT NULL
);

CREATE TABLE human_input_forms (
	id              TEXT   NOT NULL PRIMARY KEY,
	workflow_run_id TEXT   NOT NULL REFERENCES workflow_runs (id),
	app_id          TEXT   NOT NULL,
	node_id         TEXT   NOT NULL,
	token           TEXT   UNIQUE,
	definition      TEXT   NOT NULL,
	status          TEXT   NOT NULL CHECK (status IN ('waiting', 'submitted', 'timeout', 'expired')),
	expiration_time BIGINT NOT NULL,
	global_deadline BIGINT NOT NULL,
	action          TEXT,
	submitted_data  TEXT,
	submitted_by    TEXT,
	decided_at      BIGINT,
	consumed        INTEGER NOT NULL,
	created_at      BIGINT NOT NULL
);

CREATE INDEX human_input_forms_run ON human_input_forms (workflow_run_id, created_at);
CREATE INDEX human_input_forms_waiting ON human_input_forms (expiration_time) WHERE status = 'waiting';
`,
}

// DecidedForms returns the forms of a run that were decided (submitted or timed out) and not
// consumed by a resumption yet.
func (s *Store) DecidedForms(ctx context.Context, runID string) ([]HumanInputForm, error) {
	return s.queryForms(ctx, `SELECT `+formColumns+` FROM human_input_forms WHERE workflow_run_id = ?
AND status IN ('submitted', 'timeout') AND consumed = 0 ORDER BY decided_at, id`, runID)
}

// RunsToResume returns the paused runs with decided forms no resumption took (the process that
// decided them stopped first).
func (s *Store) RunsToResume(ctx context.Context) ([]WorkflowRun, error) {
	rows, err := s.conn().QueryContext(ctx, `SELECT id, app_id FROM workflow_runs WHERE status = 'paused' AND id IN
(SELECT workflow_run_id FROM human_input_forms WHERE status IN ('submitted', 'timeout') AND consumed = 0)`)
	if err != nil {
		return nil, fmt.Errorf("store: runs to resume: %w", err)
	}
	defer rows.Close()
	var out []WorkflowRun
	for rows.Next() {
		var r WorkflowRun
		if err := rows.Scan(&r.ID, &r.AppID); err != nil {
			return nil, fmt.Errorf("store: runs to resume: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
