package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// migrationJobs holds background work (indexing a document, an annotation-reply job, naming a
// conversation, a human-input deadline) as rows, so that it survives the process that queued
// it and any replica may run it.
//
// A job is queued until a worker claims it: the claim sets state running, a lease owner and a
// lease expiry, and counts an attempt. The owner renews the lease while the handler runs and
// deletes the row when it succeeds, or puts it back (queued, run_after later) when it fails, or
// marks it failed after its last attempt. A running job whose lease has expired — its owner
// crashed or lost the database — is claimable again by any worker. On PostgreSQL the claim
// selects with FOR UPDATE SKIP LOCKED, so concurrent workers never take the same row; SQLite has
// one writer at a time, so its claim is one conditional UPDATE.
//
// Times are Unix milliseconds: leases are seconds long. The migration queues the work an earlier
// version would have found by scanning: the deadline of every waiting human-input form and the
// indexing of every unfinished document (run 0: no process has a run registered for it).
var migrationJobs = migration{
	version: 14,
	name:    "durable jobs with leases",
	sqlite: `
CREATE TABLE jobs (
	id           TEXT    NOT NULL PRIMARY KEY,
	kind         TEXT    NOT NULL,
	payload      BLOB    NOT NULL,
	state        TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'failed')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	max_attempts INTEGER NOT NULL,
	run_after    INTEGER NOT NULL,
	lease_owner  TEXT,
	lease_until  INTEGER NOT NULL DEFAULT 0,
	last_error   TEXT    NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX jobs_due ON jobs (state, run_after);
CREATE INDEX jobs_lease ON jobs (state, lease_until);

INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_after, lease_until, last_error, created_at, updated_at)
SELECT 'humaninput.timer:' || id, 'humaninput.timer', CAST(id AS BLOB), 'queued', 0, 5,
	MIN(expiration_time, global_deadline) * 1000, 0, '', created_at * 1000, created_at * 1000
FROM human_input_forms WHERE status = 'waiting';

INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_after, lease_until, last_error, created_at, updated_at)
SELECT 'knowledge.index:' || id, 'knowledge.index', CAST(dataset_id || '/' || id || '/0' AS BLOB), 'queued', 0, 5,
	created_at * 1000, 0, '', created_at * 1000, created_at * 1000
FROM documents WHERE indexing_status NOT IN ('completed', 'error') AND NOT is_paused;
`,
	postgres: `
CREATE TABLE jobs (
	id           TEXT    NOT NULL PRIMARY KEY,
	kind         TEXT    NOT NULL,
	payload      BYTEA   NOT NULL,
	state        TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'failed')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	max_attempts INTEGER NOT NULL,
	run_after    BIGINT  NOT NULL,
	lease_owner  TEXT,
	lease_until  BIGINT  NOT NULL DEFAULT 0,
	last_error   TEXT    NOT NULL DEFAULT '',
	created_at   BIGINT  NOT NULL,
	updated_at   BIGINT  NOT NULL
);

CREATE INDEX jobs_due ON jobs (state, run_after);
CREATE INDEX jobs_lease ON jobs (state, lease_until);

INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_after, lease_until, last_error, created_at, updated_at)
SELECT 'humaninput.timer:' || id, 'humaninput.timer', convert_to(id, 'UTF8'), 'queued', 0, 5,
	LEAST(expiration_time, global_deadline) * 1000, 0, '', created_at * 1000, created_at * 1000
FROM human_input_forms WHERE status = 'waiting';

INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_after, lease_until, last_error, created_at, updated_at)
SELECT 'knowledge.index:' || id, 'knowledge.index', convert_to(dataset_id || '/' || id || '/0', 'UTF8'), 'queued', 0, 5,
	created_at * 1000, 0, '', created_at * 1000, created_at * 1000
FROM documents WHERE indexing_status NOT IN ('completed', 'error') AND NOT is_paused;
`,
}

// migrationJobTraces keeps with each job the trace context (a W3C traceparent) of the request
// or run that queued it, so that the job's span, on whichever replica runs it and however much
// later, links to the work that caused it. Empty when tracing was off.
var migrationJobTraces = migration{
	version: 20,
	name:    "jobs remember the trace that queued them",
	sqlite: `
ALTER TABLE jobs ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
`,
	postgres: `
ALTER TABLE jobs ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
`,
}

// JobKindHumanInputTimer is the job that fires a human-input form's deadline (its timeout or
// the run's global deadline, whichever comes first); the payload is the form's id. The job is
// written with the form, in the same transaction, so no form waits without its timer.
const JobKindHumanInputTimer = "humaninput.timer"

// insertFormTimer queues the deadline job of a new waiting form within the caller's transaction.
func (s *Store) insertFormTimer(ctx context.Context, x execer, f HumanInputForm, traceparent string, now int64) error {
	due := min(f.Expiration.Unix(), f.GlobalDeadline.Unix()) * 1000
	_, err := x.ExecContext(ctx, s.Rebind(`INSERT INTO jobs
		(id, kind, payload, state, attempts, max_attempts, run_after, lease_until, last_error, created_at, updated_at, traceparent)
		VALUES (?, ?, ?, 'queued', 0, 5, ?, 0, '', ?, ?, ?)`),
		JobKindHumanInputTimer+":"+f.ID, JobKindHumanInputTimer, []byte(f.ID), due, now*1000, now*1000, traceparent)
	return err
}

// Job states.
const (
	JobQueued  = "queued"
	JobRunning = "running"
	JobFailed  = "failed"
)

// ErrLeaseLost means the job's lease is no longer this owner's: it expired and another worker
// claimed the job, or the job is gone.
var ErrLeaseLost = errors.New("store: job lease lost")

// JobRow is one durable job.
type JobRow struct {
	ID          string
	Kind        string
	Payload     []byte
	State       string
	Attempts    int
	MaxAttempts int
	RunAfter    time.Time
	LeaseOwner  string
	LeaseUntil  time.Time
	LastError   string
	CreatedAt   time.Time
	// TraceParent is the W3C traceparent of the span that queued the job, "" for none.
	TraceParent string
}

// InsertJob queues a job to run once run_after has passed. A job given in state running with a
// lease owner and expiry is stored already claimed by that owner, its first attempt counted: the
// queue that inserts it runs it at once, saving the claim's round trip, and the lease protects
// it as any claimed job's does.
func (s *Store) InsertJob(ctx context.Context, j JobRow) error {
	if j.ID == "" || j.Kind == "" || j.MaxAttempts <= 0 {
		return errors.New("store: insert job: id, kind and max attempts are required")
	}
	state, attempts, owner, until := JobQueued, 0, sql.NullString{}, int64(0)
	if j.State == JobRunning {
		if j.LeaseOwner == "" || j.LeaseUntil.IsZero() {
			return errors.New("store: insert job: a running job needs a lease owner and expiry")
		}
		state, attempts, owner, until = JobRunning, 1, sql.NullString{String: j.LeaseOwner, Valid: true}, j.LeaseUntil.UnixMilli()
	}
	now := time.Now().UnixMilli()
	if j.Payload == nil {
		j.Payload = []byte{}
	}
	_, err := s.exec(ctx, `INSERT INTO jobs
		(id, kind, payload, state, attempts, max_attempts, run_after, lease_owner, lease_until, last_error, created_at, updated_at, traceparent)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?)`,
		j.ID, j.Kind, j.Payload, state, attempts, j.MaxAttempts, j.RunAfter.UnixMilli(), owner, until, now, now, j.TraceParent)
	if err != nil {
		return fmt.Errorf("store: insert job: %w", mapError(err))
	}
	return nil
}

// ClaimJob takes one due job of the given kinds for owner until now+lease: a queued job whose
// run_after has passed, or a running job whose lease has expired. The claim counts an attempt.
// It returns nil, nil when no job is due.
func (s *Store) ClaimJob(ctx context.Context, kinds []string, owner string, now time.Time, lease time.Duration) (*JobRow, error) {
	if len(kinds) == 0 {
		return nil, nil
	}
	ms := now.UnixMilli()
	q, args := s.claimQuery(kinds, owner, ms, lease)
	var (
		j                 JobRow
		runAfter, created int64
	)
	err := s.writeRow(ctx, q, args, func(r *sql.Row) error {
		return r.Scan(&j.ID, &j.Kind, &j.Payload, &j.Attempts, &j.MaxAttempts, &runAfter, &created, &j.TraceParent)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: claim job: %w", mapError(err))
	}
	j.State, j.LeaseOwner = JobRunning, owner
	j.LeaseUntil = time.UnixMilli(ms + lease.Milliseconds())
	j.RunAfter, j.CreatedAt = time.UnixMilli(runAfter), time.UnixMilli(created)
	return &j, nil
}

// claimQuery is ClaimJob's statement. The due job is the queued one that has waited longest,
// else a running one whose lease has expired: each found by its own index in order, so a
// claim reads one index entry, however many jobs are waiting. (One OR over both sets made
// SQLite collect every due job and sort them for each claim: under a backlog of thousands of
// conversation names, claims took most of the server's CPU.) COALESCE looks for an expired
// lease only when no queued job is due.
func (s *Store) claimQuery(kinds []string, owner string, ms int64, lease time.Duration) (string, []any) {
	in := strings.TrimSuffix(strings.Repeat("?, ", len(kinds)), ", ")
	lock := ""
	if s.dialect == DialectPostgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	queued := `SELECT id FROM jobs WHERE state = 'queued' AND run_after <= ? AND kind IN (` + in + `)
		ORDER BY run_after LIMIT 1` + lock
	expired := `SELECT id FROM jobs WHERE state = 'running' AND lease_until <= ? AND kind IN (` + in + `)
		ORDER BY lease_until LIMIT 1` + lock
	q := `UPDATE jobs SET state = 'running', lease_owner = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
		WHERE id = COALESCE((` + queued + `), (` + expired + `))
		RETURNING id, kind, payload, attempts, max_attempts, run_after, created_at, traceparent`
	args := make([]any, 0, 5+2*len(kinds))
	args = append(args, owner, ms+lease.Milliseconds(), ms, ms)
	for _, k := range kinds {
		args = append(args, k)
	}
	args = append(args, ms)
	for _, k := range kinds {
		args = append(args, k)
	}
	return q, args
}

// leased runs an UPDATE of the job that applies only while owner holds its lease for attempt.
func (s *Store) leased(ctx context.Context, what, set string, args []any, id, owner string, attempt int) error {
	args = append(args, id, owner, attempt)
	res, err := s.exec(ctx, `UPDATE jobs SET `+set+
		` WHERE id = ? AND state = 'running' AND lease_owner = ? AND attempts = ?`, args...)
	if err != nil {
		return fmt.Errorf("store: %s job: %w", what, mapError(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: %s job: %w", what, err)
	} else if n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// RenewJobLease extends the lease owner holds on the job's attempt to until.
func (s *Store) RenewJobLease(ctx context.Context, id, owner string, attempt int, until time.Time) error {
	return s.leased(ctx, "renew", "lease_until = ?, updated_at = ?",
		[]any{until.UnixMilli(), time.Now().UnixMilli()}, id, owner, attempt)
}

// CompleteJob removes a job whose attempt succeeded.
func (s *Store) CompleteJob(ctx context.Context, id, owner string, attempt int) error {
	res, err := s.exec(ctx, `DELETE FROM jobs WHERE id = ? AND state = 'running' AND lease_owner = ? AND attempts = ?`,
		id, owner, attempt)
	if err != nil {
		return fmt.Errorf("store: complete job: %w", mapError(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: complete job: %w", err)
	} else if n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// RetryJob puts back a job whose attempt failed, to run again after runAfter.
func (s *Store) RetryJob(ctx context.Context, id, owner string, attempt int, runAfter time.Time, lastError string) error {
	return s.leased(ctx, "retry", "state = 'queued', run_after = ?, lease_owner = NULL, lease_until = 0, last_error = ?, updated_at = ?",
		[]any{runAfter.UnixMilli(), lastError, time.Now().UnixMilli()}, id, owner, attempt)
}

// FailJob ends a job for good: it stays in state failed with its last error.
func (s *Store) FailJob(ctx context.Context, id, owner string, attempt int, lastError string) error {
	return s.leased(ctx, "fail", "state = 'failed', lease_owner = NULL, lease_until = 0, last_error = ?, updated_at = ?",
		[]any{lastError, time.Now().UnixMilli()}, id, owner, attempt)
}

// ReleaseJob returns a running job to the queue without counting its attempt: the worker is
// shutting down and did not finish it.
func (s *Store) ReleaseJob(ctx context.Context, id, owner string, attempt int) error {
	return s.leased(ctx, "release", "state = 'queued', attempts = attempts - 1, lease_owner = NULL, lease_until = 0, updated_at = ?",
		[]any{time.Now().UnixMilli()}, id, owner, attempt)
}

// ReleaseAllJobLeases returns every running job to the queue. Only for a database a single
// process uses (SQLite): at start, the jobs its previous run held are free at once instead of
// after their leases.
func (s *Store) ReleaseAllJobLeases(ctx context.Context) (int64, error) {
	res, err := s.exec(ctx, `UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_until = 0, updated_at = ? WHERE state = 'running'`,
		time.Now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("store: release job leases: %w", mapError(err))
	}
	return res.RowsAffected()
}

// GetJob returns one job, or ErrNotFound.
func (s *Store) GetJob(ctx context.Context, id string) (JobRow, error) {
	var (
		j                             JobRow
		owner                         sql.NullString
		runAfter, leaseUntil, created int64
	)
	err := s.db.QueryRowContext(ctx, s.Rebind(`SELECT id, kind, payload, state, attempts, max_attempts, run_after, lease_owner, lease_until, last_error, created_at, traceparent
		FROM jobs WHERE id = ?`), id).Scan(&j.ID, &j.Kind, &j.Payload, &j.State, &j.Attempts, &j.MaxAttempts, &runAfter, &owner, &leaseUntil, &j.LastError, &created, &j.TraceParent)
	if errors.Is(err, sql.ErrNoRows) {
		return JobRow{}, ErrNotFound
	}
	if err != nil {
		return JobRow{}, fmt.Errorf("store: get job: %w", mapError(err))
	}
	j.LeaseOwner = owner.String
	j.RunAfter, j.LeaseUntil, j.CreatedAt = time.UnixMilli(runAfter), time.UnixMilli(leaseUntil), time.UnixMilli(created)
	return j, nil
}

// JobCount is the jobs of one kind in one state; OldestDue is, for queued jobs, the run_after
// of the oldest one already due (zero when none is).
type JobCount struct {
	Kind, State string
	Jobs        int
	OldestDue   time.Time
}

// JobCounts counts the jobs by kind and state, for the queue's metrics. It reads the whole
// table, which holds only the jobs not yet done: finished jobs are deleted.
func (s *Store) JobCounts(ctx context.Context) ([]JobCount, error) {
	rows, err := s.db.QueryContext(ctx, s.Rebind(`SELECT kind, state, COUNT(*),
		MIN(CASE WHEN state = 'queued' AND run_after <= ? THEN run_after END)
		FROM jobs GROUP BY kind, state ORDER BY kind, state`), time.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("store: count jobs: %w", mapError(err))
	}
	defer rows.Close()
	var out []JobCount
	for rows.Next() {
		var (
			c   JobCount
			due sql.NullInt64
		)
		if err := rows.Scan(&c.Kind, &c.State, &c.Jobs, &due); err != nil {
			return nil, fmt.Errorf("store: count jobs: %w", err)
		}
		if due.Valid {
			c.OldestDue = time.UnixMilli(due.Int64)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: count jobs: %w", mapError(err))
	}
	return out, nil
}

// DeleteJob removes a job whatever its state (a deadline that no longer applies).
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, `DELETE FROM jobs WHERE id = ?`, id); err != nil {
		return fmt.Errorf("store: delete job: %w", mapError(err))
	}
	return nil
}
