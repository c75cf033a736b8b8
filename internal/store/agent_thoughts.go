package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AgentThought is one step of an agent's answer: what the model said in one round, the tools it
// called with their arguments, and what they returned. A step is written when it starts, empty,
// and again as it fills in; its id stays the same.
type AgentThought struct {
	ID        string
	MessageID string
	// Position numbers the steps of a message from 1.
	Position int
	// Thought is the text the model produced in this round.
	Thought string
	// Tool names the tools called, ";"-separated; empty when none was.
	Tool string
	// ToolLabels maps each tool name to its label object; "{}" when empty.
	ToolLabels json.RawMessage
	// ToolInput is a JSON object text of the arguments by tool name; empty when no tool ran.
	ToolInput string
	// Observation is a JSON object text of each tool's result by name; empty until tools ran.
	Observation string
	// Files lists the ids of message files the tools of this step produced.
	Files []string
	// Tokens spent by the model call of this round, and how long it took.
	MessageTokens int64
	AnswerTokens  int64
	Latency       float64
	CreatedAt     time.Time
}

// SaveAgentThought writes t: a new step, or the new state of a step already written (same id).
// A step keeps its message, position and creation time.
func (s *Store) SaveAgentThought(ctx context.Context, t AgentThought) (AgentThought, error) {
	if t.ID == "" {
		t.ID = NewID()
	}
	t.CreatedAt = nowOr(t.CreatedAt)
	labels, err := jsonText(t.ToolLabels)
	if err != nil {
		return AgentThought{}, fmt.Errorf("store: save agent thought: tool labels: %w", err)
	}
	if t.Files == nil {
		t.Files = []string{}
	}
	files, err := json.Marshal(t.Files)
	if err != nil {
		return AgentThought{}, fmt.Errorf("store: save agent thought: %w", err)
	}
	t.ToolLabels = json.RawMessage(labels)
	_, err = s.exec(ctx, `INSERT INTO message_agent_thoughts
(id, message_id, position, thought, tool, tool_labels, tool_input, observation, message_files,
 message_tokens, answer_tokens, latency, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET thought = excluded.thought, tool = excluded.tool,
 tool_labels = excluded.tool_labels, tool_input = excluded.tool_input, observation = excluded.observation,
 message_files = excluded.message_files, message_tokens = excluded.message_tokens,
 answer_tokens = excluded.answer_tokens, latency = excluded.latency`,
		t.ID, t.MessageID, t.Position, t.Thought, t.Tool, labels, t.ToolInput, t.Observation, string(files),
		t.MessageTokens, t.AnswerTokens, t.Latency, t.CreatedAt.Unix())
	if err != nil {
		return AgentThought{}, fmt.Errorf("store: save agent thought: %w", err)
	}
	return t, nil
}

// AgentThoughts returns the steps of the given messages, by message id, in position order.
func (s *Store) AgentThoughts(ctx context.Context, messageIDs []string) (map[string][]AgentThought, error) {
	out := make(map[string][]AgentThought)
	for _, chunk := range chunks(messageIDs) {
		rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT id, message_id, position, thought, tool, tool_labels,
tool_input, observation, message_files, message_tokens, answer_tokens, latency, created_at
FROM message_agent_thoughts WHERE message_id IN (`+placeholders(len(chunk))+`) ORDER BY message_id, position`), anys(chunk)...)
		if err != nil {
			return nil, fmt.Errorf("store: agent thoughts: %w", err)
		}
		err = func() error {
			defer rows.Close()
			for rows.Next() {
				var (
					t             AgentThought
					labels, files string
					created       int64
				)
				if err := rows.Scan(&t.ID, &t.MessageID, &t.Position, &t.Thought, &t.Tool, &labels, &t.ToolInput,
					&t.Observation, &files, &t.MessageTokens, &t.AnswerTokens, &t.Latency, &created); err != nil {
					return err
				}
				t.ToolLabels = json.RawMessage(labels)
				if err := json.Unmarshal([]byte(files), &t.Files); err != nil {
					return fmt.Errorf("message_files of %s: %w", t.ID, err)
				}
				t.CreatedAt = fromUnix(created)
				out[t.MessageID] = append(out[t.MessageID], t)
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("store: agent thoughts: %w", err)
		}
	}
	return out, nil
}

// migrationAgentThoughts creates message_agent_thoughts, the steps of agent answers. Each step
// belongs to one message; (message_id, position) is unique. tool_labels and message_files are
// JSON texts (an object and an array of message file ids).
var migrationAgentThoughts = migration{
	version: 7,
	name:    "message agent thoughts",
	sqlite: `
CREATE TABLE message_agent_thoughts (
	id             TEXT    NOT NULL PRIMARY KEY,
	message_id     TEXT    NOT NULL REFERENCES messages (id),
	position       INTEGER NOT NULL CHECK (position >= 1),
	thought        TEXT    NOT NULL,
	tool           TEXT    NOT NULL,
	tool_labels    TEXT    NOT NULL,
	tool_input     TEXT    NOT NULL,
	observation    TEXT    NOT NULL,
	message_files  TEXT    NOT NULL,
	message_tokens INTEGER NOT NULL,
	answer_tokens  INTEGER NOT NULL,
	latency        REAL    NOT NULL,
	created_at     INTEGER NOT NULL,
	UNIQUE (message_id, position)
) STRICT;
`,
	postgres: `
CREATE TABLE message_agent_thoughts (
	id             TEXT             NOT NULL PRIMARY KEY,
	message_id     TEXT             NOT NULL REFERENCES messages (id),
	position       INTEGER          NOT NULL CHECK (position >= 1),
	thought        TEXT             NOT NULL,
	tool           TEXT             NOT NULL,
	tool_labels    TEXT             NOT NULL,
	tool_input     TEXT             NOT NULL,
	observation    TEXT             NOT NULL,
	message_files  TEXT             NOT NULL,
	message_tokens BIGINT           NOT NULL,
	answer_tokens  BIGINT           NOT NULL,
	latency        DOUBLE PRECISION NOT NULL,
	created_at     BIGINT           NOT NULL,
	UNIQUE (message_id, position)
);
`,
}
