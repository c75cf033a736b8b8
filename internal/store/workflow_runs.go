package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// WorkflowRun is one run of a workflow graph: a Chatflow answering a message. It is written
// when the run starts and again when it ends.
type WorkflowRun struct {
	ID    string
	AppID string
	// WorkflowID is the app version whose graph ran.
	WorkflowID     string
	ConversationID string
	MessageID      string
	// Status is running, succeeded, failed, partial-succeeded or stopped.
	Status string
	// Inputs and Outputs are JSON objects.
	Inputs, Outputs json.RawMessage
	Error           string
	// Elapsed is in seconds.
	Elapsed         float64
	TotalTokens     int64
	TotalSteps      int
	ExceptionsCount int
	CreatedAt       time.Time
	FinishedAt      *time.Time
	// TriggeredFrom is how the run was started (Dify's triggered_from): TriggeredFromAppRun
	// (the default) through the API, TriggerWebhook or TriggerSchedule by a trigger.
	TriggeredFrom string
}

// triggeredFrom is what a run records of how it was started.
func (r WorkflowRun) triggeredFrom() string {
	if r.TriggeredFrom == "" {
		return TriggeredFromAppRun
	}
	return r.TriggeredFrom
}

// NodeExecution is one run of one node of a workflow run. It is written when the node starts
// and again when it ends.
type NodeExecution struct {
	ID                string
	WorkflowRunID     string
	NodeID            string
	NodeType          string
	Title             string
	Index             int
	PredecessorNodeID string
	// Inputs, ProcessData, Outputs and Metadata (execution metadata, tokens included) are JSON
	// objects, or empty for none.
	Inputs, ProcessData, Outputs, Metadata json.RawMessage
	Status                                 string
	Error                                  string
	Elapsed                                float64
	CreatedAt                              time.Time
	FinishedAt                             *time.Time
}

// ConversationVariable is the value of one of a Chatflow's conversation variables in one
// conversation.
type ConversationVariable struct {
	// ID is the variable's id in the app's definition.
	ID             string
	ConversationID string
	Name           string
	ValueType      string
	// Value is JSON.
	Value     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SaveWorkflowRun writes r: a new run, or the new state of a run already written.
func (s *Store) SaveWorkflowRun(ctx context.Context, r WorkflowRun) error {
	r.CreatedAt = nowOr(r.CreatedAt)
	var finished sql.NullInt64
	if r.FinishedAt != nil {
		finished = sql.NullInt64{Int64: r.FinishedAt.Unix(), Valid: true}
	}
	_, err := s.exec(ctx, `INSERT INTO workflow_runs
(id, app_id, workflow_id, conversation_id, message_id, status, inputs, outputs, error, elapsed, total_tokens,
 total_steps, exceptions_count, created_at, finished_at, triggered_from)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET status = excluded.status, outputs = excluded.outputs, error = excluded.error,
 elapsed = excluded.elapsed, total_tokens = excluded.total_tokens, total_steps = excluded.total_steps,
 exceptions_count = excluded.exceptions_count, finished_at = excluded.finished_at`,
		r.ID, r.AppID, r.WorkflowID, nullString(r.ConversationID), nullString(r.MessageID), r.Status, orEmptyObject(r.Inputs),
		orEmptyObject(r.Outputs), r.Error, r.Elapsed, r.TotalTokens, r.TotalSteps, r.ExceptionsCount, r.CreatedAt.Unix(), finished,
		r.triggeredFrom())
	if err != nil {
		return fmt.Errorf("store: save workflow run %s: %w", r.ID, err)
	}
	return nil
}

// WorkflowRunByID returns a run, or an error wrapping ErrNotFound.
func (s *Store) WorkflowRunByID(ctx context.Context, id string) (WorkflowRun, error) {
	var (
		r               WorkflowRun
		conv, msg       sql.NullString
		inputs, outputs string
		created         int64
		finished        sql.NullInt64
	)
	err := s.conn().QueryRowContext(ctx, s.Rebind(`SELECT id, app_id, workflow_id, conversation_id, message_id, status,
inputs, outputs, error, elapsed, total_tokens, total_steps, exceptions_count, created_at, finished_at, triggered_from
FROM workflow_runs WHERE id = ?`), id).Scan(&r.ID, &r.AppID, &r.WorkflowID, &conv, &msg, &r.Status, &inputs, &outputs,
		&r.Error, &r.Elapsed, &r.TotalTokens, &r.TotalSteps, &r.ExceptionsCount, &created, &finished, &r.TriggeredFrom)
	if errors.Is(err, sql.ErrNoRows) {
		return WorkflowRun{}, fmt.Errorf("store: workflow run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return WorkflowRun{}, fmt.Errorf("store: workflow run %s: %w", id, err)
	}
	r.ConversationID, r.MessageID = conv.String, msg.String
	r.Inputs, r.Outputs = json.RawMessage(inputs), json.RawMessage(outputs)
	r.CreatedAt = fromUnix(created)
	if finished.Valid {
		t := fromUnix(finished.Int64)
		r.FinishedAt = &t
	}
	return r, nil
}

// SaveNodeExecution writes e: a node that started, or the new state of one already written.
func (s *Store) SaveNodeExecution(ctx context.Context, e NodeExecution) error {
	return s.SaveNodeExecutions(ctx, []NodeExecution{e})
}

// SaveNodeExecutions stores node executions as SaveNodeExecution does, in one statement (of at
// most maxNodeExecutionsPerStatement rows at a time): a Chatflow run stores those of its quick
// nodes together, in one commit rather than one each.
func (s *Store) SaveNodeExecutions(ctx context.Context, es []NodeExecution) error {
	for len(es) > 0 {
		n := min(len(es), maxNodeExecutionsPerStatement)
		var q strings.Builder
		q.WriteString(`INSERT INTO workflow_node_executions
(id, workflow_run_id, node_id, node_type, title, idx, predecessor_node_id, inputs, process_data, outputs, status,
 error, elapsed, execution_metadata, created_at, finished_at)
VALUES `)
		args := make([]any, 0, 16*n)
		for i, e := range es[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			e.CreatedAt = nowOr(e.CreatedAt)
			var finished sql.NullInt64
			if e.FinishedAt != nil {
				finished = sql.NullInt64{Int64: e.FinishedAt.Unix(), Valid: true}
			}
			args = append(args, e.ID, e.WorkflowRunID, e.NodeID, e.NodeType, e.Title, e.Index, nullString(e.PredecessorNodeID),
				optJSON(e.Inputs), optJSON(e.ProcessData), optJSON(e.Outputs), e.Status, e.Error, e.Elapsed,
				optJSON(e.Metadata), e.CreatedAt.Unix(), finished)
		}
		q.WriteString(`
ON CONFLICT (id) DO UPDATE SET inputs = excluded.inputs, process_data = excluded.process_data,
 outputs = excluded.outputs, status = excluded.status, error = excluded.error, elapsed = excluded.elapsed,
 execution_metadata = excluded.execution_metadata, finished_at = excluded.finished_at`)
		if _, err := s.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("store: save node executions of %s: %w", es[0].WorkflowRunID, err)
		}
		es = es[n:]
	}
	return nil
}

// maxNodeExecutionsPerStatement bounds the rows of one SaveNodeExecutions statement (16
// parameters each, far below either engine's limit), and so the texts the statement cache
// keeps for it.
const maxNodeExecutionsPerStatement = 32

// NodeExecutions returns the node executions of a run, in execution order.
func (s *Store) NodeExecutions(ctx context.Context, runID string) ([]NodeExecution, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT id, workflow_run_id, node_id, node_type, title, idx,
predecessor_node_id, inputs, process_data, outputs, status, error, elapsed, execution_metadata, created_at, finished_at
FROM workflow_node_executions WHERE workflow_run_id = ? ORDER BY idx, created_at, id`), runID)
	if err != nil {
		return nil, fmt.Errorf("store: node executions of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []NodeExecution
	for rows.Next() {
		var (
			e                        NodeExecution
			pred                     sql.NullString
			inputs, process, outputs sql.NullString
			meta                     sql.NullString
			created                  int64
			finished                 sql.NullInt64
		)
		if err := rows.Scan(&e.ID, &e.WorkflowRunID, &e.NodeID, &e.NodeType, &e.Title, &e.Index, &pred, &inputs, &process,
			&outputs, &e.Status, &e.Error, &e.Elapsed, &meta, &created, &finished); err != nil {
			return nil, fmt.Errorf("store: node executions of %s: %w", runID, err)
		}
		e.PredecessorNodeID = pred.String
		e.Inputs, e.ProcessData, e.Outputs, e.Metadata = rawOrNil(inputs), rawOrNil(process), rawOrNil(outputs), rawOrNil(meta)
		e.CreatedAt = fromUnix(created)
		if finished.Valid {
			t := fromUnix(finished.Int64)
			e.FinishedAt = &t
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: node executions of %s: %w", runID, err)
	}
	return out, nil
}

// ConversationVariables returns the conversation variables stored for a conversation, by
// name order; none before its first Chatflow run ended.
func (s *Store) ConversationVariables(ctx context.Context, conversationID string) ([]ConversationVariable, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT id, conversation_id, name, value_type, value, created_at, updated_at
FROM conversation_variables WHERE conversation_id = ? ORDER BY name, id`), conversationID)
	if err != nil {
		return nil, fmt.Errorf("store: conversation variables of %s: %w", conversationID, err)
	}
	defer rows.Close()
	var out []ConversationVariable
	for rows.Next() {
		var (
			v                ConversationVariable
			val              string
			created, updated int64
		)
		if err := rows.Scan(&v.ID, &v.ConversationID, &v.Name, &v.ValueType, &val, &created, &updated); err != nil {
			return nil, fmt.Errorf("store: conversation variables of %s: %w", conversationID, err)
		}
		v.Value, v.CreatedAt, v.UpdatedAt = json.RawMessage(val), fromUnix(created), fromUnix(updated)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: conversation variables of %s: %w", conversationID, err)
	}
	return out, nil
}

// SaveConversationVariables writes the values of a conversation's variables, in one
// transaction: new ones are created, the others updated (their creation time stays).
func (s *Store) SaveConversationVariables(ctx context.Context, vs []ConversationVariable) error {
	if len(vs) == 0 {
		return nil
	}
	now := time.Now().UTC()
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		for _, v := range vs {
			if _, err := s.inTx(tx).ExecContext(ctx, s.Rebind(`INSERT INTO conversation_variables
(conversation_id, id, name, value_type, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (conversation_id, id) DO UPDATE SET name = excluded.name, value_type = excluded.value_type,
 value = excluded.value, updated_at = excluded.updated_at`),
				v.ConversationID, v.ID, v.Name, v.ValueType, string(orNull(v.Value)), nowOr(v.CreatedAt).Unix(), now.Unix()); err != nil {
				return mapError(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: save conversation variables: %w", err)
	}
	return nil
}

// optJSON is the column value of an optional JSON value written by the engine: NULL for none.
func optJSON(v json.RawMessage) sql.NullString {
	return sql.NullString{String: string(v), Valid: len(v) > 0}
}

func rawOrNil(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

func orEmptyObject(v json.RawMessage) string {
	if len(v) == 0 {
		return "{}"
	}
	return string(v)
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// migrationWorkflowRuns keeps what a workflow run leaves: the run (its status, inputs, outputs,
// error, timings, tokens, steps), one row per node execution (written when the node starts and
// when it ends), and the conversation variables of each Chatflow conversation. JSON values are
// TEXT. A run belongs to an app and, for a Chatflow, to the message it answered.
var migrationWorkflowRuns = migration{
	version: 10,
	name:    "workflow runs, node executions, conversation variables",
	sqlite: `
CREATE TABLE workflow_runs (
	id               TEXT    NOT NULL PRIMARY KEY,
	app_id           TEXT    NOT NULL REFERENCES apps (id),
	workflow_id      TEXT    NOT NULL,
	conversation_id  TEXT    REFERENCES conversations (id),
	message_id       TEXT    REFERENCES messages (id),
	status           TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'partial-succeeded', 'stopped', 'paused')),
	inputs           TEXT    NOT NULL,
	outputs          TEXT    NOT NULL,
	error            TEXT    NOT NULL,
	elapsed          REAL    NOT NULL,
	total_tokens     INTEGER NOT NULL,
	total_steps      INTEGER NOT NULL,
	exceptions_count INTEGER NOT NULL,
	created_at       INTEGER NOT NULL,
	finished_at      INTEGER
) STRICT;

CREATE INDEX workflow_runs_app_id ON workflow_runs (app_id, created_at);
CREATE INDEX workflow_runs_message_id ON workflow_runs (message_id);

CREATE TABLE workflow_node_executions (
	id                  TEXT    NOT NULL PRIMARY KEY,
	workflow_run_id     TEXT    NOT NULL REFERENCES workflow_runs (id),
	node_id             TEXT    NOT NULL,
	node_type           TEXT    NOT NULL,
	title               TEXT    NOT NULL,
	idx                 INTEGER NOT NULL,
	predecessor_node_id TEXT,
	inputs              TEXT,
	process_data        TEXT,
	outputs             TEXT,
	status              TEXT    NOT NULL,
	error               TEXT    NOT NULL,
	elapsed             REAL    NOT NULL,
	execution_metadata  TEXT,
	created_at          INTEGER NOT NULL,
	finished_at         INTEGER
) STRICT;

CREATE INDEX workflow_node_executions_run ON workflow_node_executions (workflow_run_id, idx);

CREATE TABLE conversation_variables (
	conversation_id TEXT    NOT NULL REFERENCES conversations (id),
	id              TEXT    NOT NULL,
	name            TEXT    NOT NULL,
	value_type      TEXT    NOT NULL,
	value           TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	PRIMARY KEY (conversation_id, id)
) STRICT;
`,
	postgres: `
CREATE TABLE workflow_runs (
	id               TEXT             NOT NULL PRIMARY KEY,
	app_id           TEXT             NOT NULL REFERENCES apps (id),
	workflow_id      TEXT             NOT NULL,
	conversation_id  TEXT             REFERENCES conversations (id),
	message_id       TEXT             REFERENCES messages (id),
	status           TEXT             NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'partial-succeeded', 'stopped', 'paused')),
	inputs           TEXT             NOT NULL,
	outputs          TEXT             NOT NULL,
	error            TEXT             NOT NULL,
	elapsed          DOUBLE PRECISION NOT NULL,
	total_tokens     BIGINT           NOT NULL,
	total_steps      INTEGER          NOT NULL,
	exceptions_count INTEGER          NOT NULL,
	created_at       BIGINT           NOT NULL,
	finished_at      BIGINT
);

CREATE INDEX workflow_runs_app_id ON workflow_runs (app_id, created_at);
CREATE INDEX workflow_runs_message_id ON workflow_runs (message_id);

CREATE TABLE workflow_node_executions (
	id                  TEXT             NOT NULL PRIMARY KEY,
	workflow_run_id     TEXT             NOT NULL REFERENCES workflow_runs (id),
	node_id             TEXT             NOT NULL,
	node_type           TEXT             NOT NULL,
	title               TEXT             NOT NULL,
	idx                 INTEGER          NOT NULL,
	predecessor_node_id TEXT,
	inputs              TEXT,
	process_data        TEXT,
	outputs             TEXT,
	status              TEXT             NOT NULL,
	error               TEXT             NOT NULL,
	elapsed             DOUBLE PRECISION NOT NULL,
	execution_metadata  TEXT,
	created_at          BIGINT           NOT NULL,
	finished_at         BIGINT
);

CREATE INDEX workflow_node_executions_run ON workflow_node_executions (workflow_run_id, idx);

CREATE TABLE conversation_variables (
	conversation_id TEXT   NOT NULL REFERENCES conversations (id),
	id              TEXT   NOT NULL,
	name            TEXT   NOT NULL,
	value_type      TEXT   NOT NULL,
	value           TEXT   NOT NULL,
	created_at      BIGINT NOT NULL,
	updated_at      BIGINT NOT NULL,
	PRIMARY KEY (conversation_id, id)
);
`,
}
