package store

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestAgentThoughts(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		msgs := newMessages(t, s, f.app, f.alice, 2)

		// A step starts empty, then fills in under the same id.
		first, err := s.SaveAgentThought(ctx, AgentThought{MessageID: msgs[0].ID, Position: 1})
		if err != nil {
			t.Fatal(err)
		}
		if first.ID == "" || string(first.ToolLabels) != "{}" || first.Files == nil {
			t.Fatalf("new thought = %+v", first)
		}
		filled := first
		filled.Thought, filled.Tool = "Let me check.", "current_time"
		filled.ToolLabels = json.RawMessage(`{"current_time":{"en_US":"Current Time","zh_Hans":"获取当前时间"}}`)
		filled.ToolInput, filled.Observation = `{"current_time": {}}`, `{"current_time": "2026-01-01 00:00:00"}`
		filled.Files = []string{"f1"}
		filled.MessageTokens, filled.AnswerTokens, filled.Latency = 12, 3, 0.25
		if _, err := s.SaveAgentThought(ctx, filled); err != nil {
			t.Fatal(err)
		}
		second, err := s.SaveAgentThought(ctx, AgentThought{MessageID: msgs[0].ID, Position: 2, Thought: "It is midnight."})
		if err != nil {
			t.Fatal(err)
		}
		other, err := s.SaveAgentThought(ctx, AgentThought{MessageID: msgs[1].ID, Position: 1, Thought: "x"})
		if err != nil {
			t.Fatal(err)
		}
		// Two steps cannot share a position.
		if _, err := s.SaveAgentThought(ctx, AgentThought{MessageID: msgs[0].ID, Position: 2}); err == nil {
			t.Fatal("a second step at position 2 was stored")
		}
		if _, err := s.SaveAgentThought(ctx, AgentThought{MessageID: msgs[0].ID, Position: 3, ToolLabels: json.RawMessage("{")}); err == nil {
			t.Fatal("invalid tool labels were stored")
		}

		got, err := s.AgentThoughts(ctx, []string{msgs[0].ID, msgs[1].ID, NewID()})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || len(got[msgs[0].ID]) != 2 || len(got[msgs[1].ID]) != 1 || got[msgs[1].ID][0].ID != other.ID {
			t.Fatalf("AgentThoughts = %+v", got)
		}
		a, b := got[msgs[0].ID][0], got[msgs[0].ID][1]
		if a.ID != first.ID || a.Position != 1 || a.Thought != filled.Thought || a.Tool != filled.Tool ||
			a.ToolInput != filled.ToolInput || a.Observation != filled.Observation || !slices.Equal(a.Files, []string{"f1"}) ||
			a.MessageTokens != 12 || a.AnswerTokens != 3 || a.Latency != 0.25 || !a.CreatedAt.Equal(first.CreatedAt.Truncate(1e9)) {
			t.Fatalf("first step = %+v", a)
		}
		var labels map[string]map[string]string
		if err := json.Unmarshal(a.ToolLabels, &labels); err != nil || labels["current_time"]["zh_Hans"] != "获取当前时间" {
			t.Fatalf("labels = %s, %v", a.ToolLabels, err)
		}
		if b.ID != second.ID || b.Position != 2 || b.Thought != "It is midnight." || b.Tool != "" || len(b.Files) != 0 {
			t.Fatalf("second step = %+v", b)
		}
		// A step must belong to a stored message.
		if _, err := s.SaveAgentThought(ctx, AgentThought{MessageID: NewID(), Position: 1}); err == nil {
			t.Fatal("a step of no message was stored")
		}
	})
}
