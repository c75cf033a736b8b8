package store

import (
	"encoding/json"
	"testing"
	"time"
)

func TestWorkflowRunsAndNodeExecutions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		msg := newMessages(t, s, f.app, f.alice, 1)[0]

		r := WorkflowRun{ID: NewID(), AppID: f.app, WorkflowID: "v1", ConversationID: msg.ConversationID, MessageID: msg.ID,
			Status: "running", Inputs: json.RawMessage(`{"city":"Paris"}`)}
		if err := s.SaveWorkflowRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		start := NodeExecution{ID: NewID(), WorkflowRunID: r.ID, NodeID: "start", NodeType: "start", Title: "Start", Index: 1, Status: "running"}
		if err := s.SaveNodeExecution(ctx, start); err != nil {
			t.Fatal(err)
		}
		done := time.Now()
		start.Status, start.Outputs, start.Elapsed, start.FinishedAt = "succeeded", json.RawMessage(`{"city":"Paris"}`), 0.5, &done
		start.Metadata = json.RawMessage(`{"total_tokens":3}`)
		if err := s.SaveNodeExecution(ctx, start); err != nil {
			t.Fatal(err)
		}
		llm := NodeExecution{ID: NewID(), WorkflowRunID: r.ID, NodeID: "llm", NodeType: "llm", Title: "LLM", Index: 2,
			PredecessorNodeID: "start", Status: "failed", Error: "boom"}
		if err := s.SaveNodeExecution(ctx, llm); err != nil {
			t.Fatal(err)
		}
		// A node execution of a run that does not exist is refused.
		if err := s.SaveNodeExecution(ctx, NodeExecution{ID: NewID(), WorkflowRunID: NewID(), NodeID: "x", Status: "running"}); err == nil {
			t.Fatal("orphan node execution stored")
		}
		r.Status, r.Error, r.TotalSteps, r.TotalTokens, r.Elapsed, r.FinishedAt = "failed", "boom", 2, 3, 1.25, &done
		if err := s.SaveWorkflowRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := s.WorkflowRunByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "failed" || got.Error != "boom" || got.TotalSteps != 2 || got.TotalTokens != 3 || got.Elapsed != 1.25 ||
			got.FinishedAt == nil || string(got.Inputs) != `{"city":"Paris"}` || string(got.Outputs) != "{}" || got.MessageID != msg.ID {
			t.Fatalf("run = %+v", got)
		}
		if _, err := s.WorkflowRunByID(ctx, NewID()); err == nil {
			t.Fatal("unknown run found")
		}
		execs, err := s.NodeExecutions(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(execs) != 2 || execs[0].NodeID != "start" || execs[0].Status != "succeeded" || string(execs[0].Metadata) != `{"total_tokens":3}` ||
			execs[0].FinishedAt == nil || execs[1].PredecessorNodeID != "start" || execs[1].Error != "boom" || execs[1].Outputs != nil {
			t.Fatalf("executions = %+v", execs)
		}
	})
}

func TestConversationVariables(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		conv := newMessages(t, s, f.app, f.alice, 1)[0].ConversationID
		if vs, err := s.ConversationVariables(ctx, conv); err != nil || len(vs) != 0 {
			t.Fatalf("before = %v, %v", vs, err)
		}
		err := s.SaveConversationVariables(ctx, []ConversationVariable{
			{ID: "v1", ConversationID: conv, Name: "topic", ValueType: "string", Value: json.RawMessage(`"cats"`)},
			{ID: "v2", ConversationID: conv, Name: "count", ValueType: "number", Value: json.RawMessage(`1`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SaveConversationVariables(ctx, []ConversationVariable{{ID: "v2", ConversationID: conv, Name: "count", ValueType: "number", Value: json.RawMessage(`2`)}}); err != nil {
			t.Fatal(err)
		}
		vs, err := s.ConversationVariables(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 2 || vs[0].Name != "count" || string(vs[0].Value) != "2" || vs[1].Name != "topic" || string(vs[1].Value) != `"cats"` {
			t.Fatalf("variables = %+v", vs)
		}
		// Variables of a conversation that does not exist are refused.
		if err := s.SaveConversationVariables(ctx, []ConversationVariable{{ID: "v", ConversationID: NewID(), Name: "x", ValueType: "string", Value: json.RawMessage(`""`)}}); err == nil {
			t.Fatal("orphan variable stored")
		}
	})
}

// TestStaleMessagesEndTheirWorkflowRuns: a Chatflow run whose process died fails with its message.
func TestStaleMessagesEndTheirWorkflowRuns(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)
		stale, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, Query: "q", Status: MessageStatusRunning})
		if err != nil {
			t.Fatal(err)
		}
		done, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, Query: "q", Status: MessageStatusNormal})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []Message{stale, done} {
			if err := s.SaveWorkflowRun(ctx, WorkflowRun{ID: m.ID, AppID: f.app, WorkflowID: "v", MessageID: m.ID, Status: "running"}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.EndStaleMessages(ctx, time.Now().Add(time.Hour), "interrupted")
		if err != nil || n != 1 {
			t.Fatalf("ended %d, %v", n, err)
		}
		if r, _ := s.WorkflowRunByID(ctx, stale.ID); r.Status != "failed" || r.Error != "interrupted" || r.FinishedAt == nil {
			t.Fatalf("stale run %+v", r)
		}
		if r, _ := s.WorkflowRunByID(ctx, done.ID); r.Status != "running" {
			t.Fatalf("run of a finished message %+v", r)
		}
	})
}
