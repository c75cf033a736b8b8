package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

const (
	testConversation = "7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"
	testMessage      = "8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22"
	testTask         = "9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33"
	testWorkflowRun  = "ae3e5e4f-8d7a-4b7a-8d88-6f3e8a3bcf44"
)

// sampleEvents is one event of every kind (but ping, which is a bare frame), each with a payload
// shaped as the contract describes that event.
func sampleEvents() []run.Event {
	node := map[string]any{"id": "ne-1", "node_id": "llm", "node_type": "llm", "title": "LLM", "index": 2,
		"created_at": 1705407629}
	finished := map[string]any{"id": "ne-1", "node_id": "llm", "node_type": "llm", "title": "LLM", "index": 2,
		"status": "succeeded", "outputs": map[string]any{"text": "hi"}, "execution_metadata": nil, "elapsed_time": 0.8,
		"created_at": 1705407629, "finished_at": 1705407630}
	retry := map[string]any{"retry_index": 1}
	for k, v := range finished {
		retry[k] = v
	}
	progress := map[string]any{"id": "ne-2", "node_id": "iter", "node_type": "iteration", "title": "Each", "index": 1}
	form := map[string]any{"form_id": "f1", "form_token": "tok", "node_id": "ask", "node_title": "Ask",
		"form_content": "Approve?", "inputs": []any{}, "actions": []any{map[string]any{"id": "ok", "title": "OK", "button_style": "primary"}},
		"display_in_ui": true, "resolved_default_values": map[string]any{}, "expiration_time": 1705407999}
	reason := map[string]any{"TYPE": "human_input_required"}
	for k, v := range form {
		reason[k] = v
	}
	return []run.Event{
		{Kind: run.EventMessage, Answer: "Hello <b> & \"quoted\"\n"},
		{Kind: run.EventAgentMessage, Answer: "Thinking"},
		{Kind: run.EventAgentThought, Data: map[string]any{"id": testMessage, "position": 1, "thought": "", "observation": "",
			"tool": "", "tool_labels": map[string]any{}, "tool_input": "", "message_files": []string{}}},
		{Kind: run.EventMessageReplace, Answer: "Replaced", Data: map[string]any{"reason": "moderation"}},
		{Kind: run.EventReasoningChunk, Data: map[string]any{"message_id": testMessage, "reasoning": "so", "node_id": "llm", "is_final": false}},
		{Kind: run.EventMessageFile, Data: map[string]any{"id": "file-1", "type": "image", "belongs_to": "assistant", "url": "https://files.example/a.png"}},
		{Kind: run.EventMessageEnd, End: &run.End{Usage: models.ComputeUsage(nil, 3, 4, time.Second), Resources: []store.RetrieverResource{{
			ID: testTask, MessageID: testMessage, Position: 1, DatasetID: testConversation, DatasetName: "kb", DocumentID: testConversation,
			DocumentName: "doc", SegmentID: testTask, Content: "chunk", Score: 0.7, CreatedAt: time.Unix(1705407629, 0)}}}},
		{Kind: run.EventTTSMessage, Answer: "UklGRg=="},
		{Kind: run.EventTTSMessageEnd},
		{Kind: run.EventWorkflowStarted, Data: map[string]any{"id": testWorkflowRun, "workflow_id": "wf", "inputs": map[string]any{}, "created_at": 1705407629, "reason": "initial"}},
		{Kind: run.EventNodeStarted, Data: node},
		{Kind: run.EventNodeFinished, Data: finished},
		{Kind: run.EventNodeRetry, Data: retry},
		{Kind: run.EventIterationStarted, Data: progress},
		{Kind: run.EventIterationNext, Data: progress},
		{Kind: run.EventIterationCompleted, Data: progress},
		{Kind: run.EventLoopStarted, Data: progress},
		{Kind: run.EventLoopNext, Data: progress},
		{Kind: run.EventLoopCompleted, Data: progress},
		{Kind: run.EventAgentLog, Data: map[string]any{"id": "log-1", "node_id": "agent", "label": "Round 1", "status": "success", "data": map[string]any{}}},
		{Kind: run.EventWorkflowFinished, Data: map[string]any{"id": testWorkflowRun, "workflow_id": "wf", "status": "succeeded",
			"outputs": map[string]any{}, "elapsed_time": 1.5, "total_tokens": 7, "total_steps": 3, "created_at": 1705407629, "finished_at": 1705407631}},
		{Kind: run.EventWorkflowPaused, Data: map[string]any{"workflow_run_id": testWorkflowRun, "paused_nodes": []string{"ask"}, "outputs": nil,
			"reasons": []any{reason}, "status": "paused", "created_at": 1705407629, "elapsed_time": 1.0, "total_tokens": 7, "total_steps": 2}},
		{Kind: run.EventHumanInputRequired, Data: form},
		{Kind: run.EventHumanInputFormFilled, Data: map[string]any{"node_id": "ask", "node_title": "Ask", "action_id": "ok"}},
		{Kind: run.EventHumanInputFormTimeout, Data: map[string]any{"node_id": "ask", "node_title": "Ask", "expiration_time": 1705407999}},
		{Kind: run.EventError, Err: &providers.Error{Kind: providers.KindQuota, Message: "Quota exceeded."}},
	}
}

// TestEncodeEveryEventKind encodes an event of every kind and checks it against the contract's
// schema of that event, as the server's response validator would on a real stream.
func TestEncodeEveryEventKind(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	r := &run.Run{TaskID: testTask, MessageID: testMessage, ConversationID: testConversation, WorkflowRunID: testWorkflowRun,
		CreatedAt: time.Unix(1705398420, 0), Mode: config.AppModeAdvancedChat}
	enc := newEventEncoder(r)
	evs := sampleEvents()
	// Besides ping, text_chunk is the one kind a chat stream never carries (TestEncodeWorkflowEvents).
	if len(evs) != len(run.EventKinds())-2 {
		t.Fatalf("%d sample events for %d kinds besides ping and text_chunk", len(evs), len(run.EventKinds())-2)
	}
	for _, ev := range evs {
		t.Run(ev.Kind.String(), func(t *testing.T) {
			data, err := enc.encode(ev)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.srv.validator.CheckEvent("sendChatMessage", append([]byte("data: "), data...)); err != nil {
				t.Fatalf("%s\n%s", err, data)
			}
			var obj map[string]any
			if err := json.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			if obj["event"] != ev.Kind.String() || obj["conversation_id"] != testConversation || obj["message_id"] != testMessage {
				t.Fatalf("envelope %s", data)
			}
			if _, has := obj["workflow_run_id"]; has != (ev.Kind.WorkflowScoped() || ev.Kind == run.EventError) {
				t.Fatalf("workflow_run_id present = %v: %s", has, data)
			}
			if _, has := obj["task_id"]; has == (ev.Kind == run.EventError) {
				t.Fatalf("task_id present = %v: %s", has, data)
			}
		})
	}
	// An event of a run without a workflow run breaks the workflow envelope: the check above can
	// fail.
	plain := newEventEncoder(&run.Run{TaskID: testTask, MessageID: testMessage, ConversationID: testConversation, Mode: config.AppModeChat})
	data, err := plain.encode(run.Event{Kind: run.EventNodeStarted, Data: evs[10].Data})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.validator.CheckEvent("sendChatMessage", append([]byte("data: "), data...)); err == nil {
		t.Fatalf("node_started without workflow_run_id passed: %s", data)
	}
}

// TestEncodeWorkflowEvents checks the events of a Workflow app's stream against the contract of
// its run operation and pins their envelope: the run's id first, no conversation or message.
func TestEncodeWorkflowEvents(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	r := &run.Run{TaskID: testTask, MessageID: testMessage, WorkflowRunID: testWorkflowRun,
		CreatedAt: time.Unix(1705398420, 0), Mode: apps.ModeWorkflow}
	enc := newEventEncoder(r)
	evs := sampleEvents()
	head := `{"event":"%s","workflow_run_id":"` + testWorkflowRun + `"`
	for _, tc := range []struct {
		ev   run.Event
		want string
	}{
		{evs[9], ""},  // workflow_started
		{evs[10], ""}, // node_started
		{evs[11], ""}, // node_finished
		{evs[19], ""}, // agent_log: in a Workflow app's stream it carries the run's id too
		{run.Event{Kind: run.EventWorkflowFinished, Data: map[string]any{"id": testWorkflowRun, "workflow_id": "wf", "status": "failed",
			"outputs": map[string]any{}, "error": "node llm: down", "elapsed_time": 1.5, "total_tokens": 7, "total_steps": 3,
			"created_at": 1705407629, "finished_at": 1705407631, "exceptions_count": 0, "files": []any{}}}, ""},
		{run.Event{Kind: run.EventTextChunk, Data: map[string]any{"text": "Hi", "from_variable_selector": []string{"llm", "text"}}},
			fmt.Sprintf(head, "text_chunk") + `,"task_id":"` + testTask + `","data":{"from_variable_selector":["llm","text"],"text":"Hi"}}`},
		{run.Event{Kind: run.EventError, Err: errors.New("boom")},
			fmt.Sprintf(head, "error") + `,"code":"internal_server_error","message":"Internal Server Error.","status":500}`},
	} {
		data, err := enc.encode(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.srv.validator.CheckEvent("runWorkflow", append([]byte("data: "), data...)); err != nil {
			t.Fatalf("%s\n%s", err, data)
		}
		if tc.want != "" && string(data) != tc.want {
			t.Fatalf("got  %s\nwant %s", data, tc.want)
		}
		if !strings.HasPrefix(string(data), fmt.Sprintf(head, tc.ev.Kind.String())) || strings.Contains(string(data), "conversation_id") {
			t.Fatalf("envelope %s", data)
		}
	}
	// A chat event is not a Workflow app's: the check above can fail.
	chat := newEventEncoder(&run.Run{TaskID: testTask, MessageID: testMessage, ConversationID: testConversation, Mode: config.AppModeChat})
	data, _ := chat.encode(run.Event{Kind: run.EventMessage, Answer: "hi"})
	if err := f.srv.validator.CheckEvent("runWorkflow", append([]byte("data: "), data...)); err == nil {
		t.Fatalf("a message event passed as a Workflow app's: %s", data)
	}
}

// TestEncodeChatEventsExactly pins the bytes of the events chat streams send today.
func TestEncodeChatEventsExactly(t *testing.T) {
	r := &run.Run{TaskID: testTask, MessageID: testMessage, ConversationID: testConversation,
		CreatedAt: time.Unix(1705398420, 0), Mode: config.AppModeChat}
	enc := newEventEncoder(r)
	env := `"conversation_id":"` + testConversation + `","message_id":"` + testMessage + `","created_at":1705398420`
	for _, tc := range []struct {
		ev   run.Event
		want string
	}{
		{run.Event{Kind: run.EventMessage, Answer: "Hi \"you\"\n"},
			`{"event":"message",` + env + `,"task_id":"` + testTask + `","id":"` + testMessage + `","answer":"Hi \"you\"\n","from_variable_selector":null}`},
		{run.Event{Kind: run.EventError, Err: errors.New("boom")},
			`{"event":"error",` + env + `,"code":"internal_server_error","message":"Internal Server Error.","status":500}`},
		{run.Event{Kind: run.EventAgentThought, Data: map[string]any{"id": "t", "position": 2}},
			`{"event":"agent_thought",` + env + `,"task_id":"` + testTask + `","id":"t","position":2}`},
	} {
		got, err := enc.encode(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.ev.Kind, got, tc.want)
		}
	}
	if _, err := enc.encode(run.Event{Kind: run.EventAgentThought, Data: []string{"not", "an object"}}); err == nil ||
		!strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("payload that is no object: %v", err)
	}
}

// TestEncodeCompletionEvents: a Completion stream's events have no conversation and match the
// completion operation's event schemas.
func TestEncodeCompletionEvents(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	enc := newEventEncoder(&run.Run{TaskID: testTask, MessageID: testMessage, CreatedAt: time.Unix(1705398420, 0), Mode: config.AppModeCompletion})
	for _, ev := range []run.Event{
		{Kind: run.EventMessage, Answer: "Once"},
		{Kind: run.EventMessageEnd, End: &run.End{Usage: models.ComputeUsage(nil, 3, 4, time.Second)}},
		{Kind: run.EventError, Err: &providers.Error{Kind: providers.KindInvocation, Message: "Upstream failed."}},
	} {
		data, err := enc.encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.srv.validator.CheckEvent("sendCompletionMessage", append([]byte("data: "), data...)); err != nil {
			t.Fatalf("%s\n%s", err, data)
		}
		if strings.Contains(string(data), "conversation_id") || !strings.HasPrefix(string(data), `{"event":"`+ev.Kind.String()+`","message_id":"`+testMessage+`","created_at":1705398420`) {
			t.Fatalf("envelope %s", data)
		}
	}
}
