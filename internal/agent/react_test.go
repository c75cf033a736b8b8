package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

var reactMaths = apps.Agent{Enabled: true, Strategy: "react", Tools: mathsTool.Tools}

func TestUseReAct(t *testing.T) {
	plain := models.ModelSpec{}
	tools := models.ModelSpec{Features: []string{"multi-tool-call"}}
	for _, tc := range []struct {
		strategy string
		spec     models.ModelSpec
		want     bool
	}{
		{"react", plain, true}, {"cot", plain, true}, {"", plain, true}, {"function_call", plain, false},
		{"react", tools, false}, {"function_call", tools, false},
	} {
		if got := useReAct(tc.strategy, tc.spec); got != tc.want {
			t.Errorf("useReAct(%q, %v) = %v", tc.strategy, tc.spec.Features, got)
		}
	}
}

// TestReActToolThenAnswer: a model without tool calls reads the tools in its prompt, writes an
// action, reads the observation and gives the final answer. Its thoughts stream, its actions do
// not; each step is stored as in function calling.
func TestReActToolThenAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, reactMaths)
		env.upstream.OnEach("", openaitest.Reply{Chunks: []string{
			"Thought: I need", " to compute.\nAction:\n```json\n{\"action\": \"eval_expression\", ",
			"\"action_input\": {\"expression\": \"6*7\"}}\n```",
		}}, openaitest.Reply{Chunks: []string{"Thought: I know.\nAction:\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"It is 42.\"}\n```"}})
		rn := env.send(t, "What is six times seven?", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 A A T1t T1to T2 A A E"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		var text []string
		for _, ev := range evs {
			if ev.Kind == run.EventAgentMessage {
				text = append(text, ev.Answer)
			}
		}
		if got := strings.Join(text, "|"); got != "I need| to compute.|I know.|It is 42." {
			t.Fatalf("agent_message chunks %q", got)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 2 || stored[0].Thought != "I need to compute." || stored[0].Tool != "eval_expression" ||
			stored[0].ToolInput != `{"eval_expression": {"expression": "6*7"}}` || stored[0].Observation != `{"eval_expression": "42"}` ||
			stored[1].Thought != "I know.It is 42." || stored[1].Tool != "" {
			t.Fatalf("stored thoughts %+v", stored)
		}
		reqs := env.upstream.Requests()
		if len(reqs) != 2 || len(reqs[0].Tools) != 0 || len(reqs[1].Tools) != 0 {
			t.Fatalf("requests %d, tools must not be sent natively", len(reqs))
		}
		sys := reqs[0].Messages[0]
		if sys.Role != providers.RoleSystem || !strings.HasPrefix(sys.Content, "You help Ada.") || !strings.Contains(sys.Content, `"eval_expression"`) {
			t.Fatalf("system message %q", sys.Content)
		}
		if stop, _ := reqs[0].Params["stop"].([]any); len(stop) != 1 || stop[0] != "Observation" {
			t.Fatalf("stop %v", reqs[0].Params["stop"])
		}
		msgs := reqs[1].Messages
		pad, cont := msgs[len(msgs)-2], msgs[len(msgs)-1]
		if pad.Role != providers.RoleAssistant || !strings.Contains(pad.Content, "Thought: I need to compute.") ||
			!strings.Contains(pad.Content, "Observation: 42") || cont.Role != providers.RoleUser || cont.Content != "continue" {
			t.Fatalf("second round %+v", msgs)
		}
		if m := env.message(t, rn); m.Status != store.MessageStatusNormal || m.Answer != "I need to compute.I know.It is 42." {
			t.Fatalf("stored %+v", m)
		}

		// The next turn replays the tool call as protocol text, with no tool messages.
		env.upstream.Reset()
		env.upstream.On("", openaitest.Reply{Chunks: []string{"43."}})
		collect(t, env.send(t, "And plus one?", rn.ConversationID))
		reqs = env.upstream.Requests()
		var roles []string
		for _, m := range reqs[0].Messages {
			roles = append(roles, m.Role)
		}
		hist := reqs[0].Messages
		if got := strings.Join(roles, " "); got != "system user assistant assistant user" ||
			hist[2].Content != "Thought: I need to compute.\nAction: ```{\"action\":\"eval_expression\",\"action_input\":{\"expression\":\"6*7\"}}```\nObservation: 42\n" ||
			hist[3].Content != "I know.It is 42." {
			t.Fatalf("second turn prompt %s: %+v", got, hist)
		}
	})
}

// TestReActPlainAnswer: text without an action is the answer.
func TestReActPlainAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, reactMaths)
		env.upstream.On("", openaitest.Reply{Chunks: []string{"Hello", " Ada."}})
		rn := env.send(t, "hi", "")
		evs := collect(t, rn)
		if got := trace(evs); got != "T1 A A E" {
			t.Fatalf("events %s", got)
		}
		if m := env.message(t, rn); m.Answer != "Hello Ada." {
			t.Fatalf("stored %+v", m)
		}
	})
}

// TestReActLastRound: the last round lists no tools; an action there ends the run with
// ErrMaxIterations.
func TestReActLastRound(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		cfg := reactMaths
		cfg.MaxIteration = 1
		env := newEnv(t, e, cfg)
		env.upstream.On("", openaitest.Reply{Chunks: []string{"Action: {\"action\": \"eval_expression\", \"action_input\": {\"expression\": \"1+1\"}}"}})
		rn := env.send(t, "loop", "")
		evs := collect(t, rn)
		if got := trace(evs); got != "T1 T1t T1to T2 X" {
			t.Fatalf("events %s", got)
		}
		if err := evs[len(evs)-1].Err; !errors.Is(err, ErrMaxIterations) {
			t.Fatalf("error %v", err)
		}
		reqs := env.upstream.Requests()
		if len(reqs) != 2 || !strings.Contains(reqs[0].Messages[0].Content, "eval_expression") || strings.Contains(reqs[1].Messages[0].Content, "eval_expression") {
			t.Fatalf("the last round must list no tools")
		}
	})
}

func TestCompletionModel(t *testing.T) {
	for _, tc := range []struct {
		app, spec string
		want      bool
	}{
		{"", "", false}, {"", "chat", false}, {"", "completion", true},
		{"completion", "chat", true}, {"chat", "completion", false},
	} {
		app := &apps.App{Model: apps.Model{Mode: tc.app}}
		if got := completionModel(app, models.ModelSpec{Mode: tc.spec}); got != tc.want {
			t.Errorf("completionModel(app %q, model %q) = %v", tc.app, tc.spec, got)
		}
	}
}

// asCompletionModel makes the app's model a completion model, which takes one text.
func asCompletionModel(app *apps.App, _ *Options) { app.Model.Mode = "completion" }

// oneText returns the text of a request that must be a completion model's prompt: a single user
// message, no tools.
func oneText(t *testing.T, r openaitest.Request) string {
	t.Helper()
	if len(r.Messages) != 1 || r.Messages[0].Role != providers.RoleUser || len(r.Tools) != 0 {
		t.Fatalf("a completion model's prompt must be one user message without tools: %+v", r.Messages)
	}
	return r.Messages[0].Content
}

// TestReActCompletionToolThenAnswer: a completion model gets each round as one text, with the
// instructions, the tools, the question, the steps so far and "Thought:" to continue from; it
// streams and stores its steps as the chat variant does, and the next turn sees the exchange as
// protocol text.
func TestReActCompletionToolThenAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, reactMaths, asCompletionModel)
		env.upstream.OnEach("", openaitest.Reply{Chunks: []string{
			" I need", " to compute.\nAction:\n```json\n{\"action\": \"eval_expression\", ",
			"\"action_input\": {\"expression\": \"6*7\"}}\n```",
		}}, openaitest.Reply{Chunks: []string{" I know.\nAction:\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"It is 42.\"}\n```"}})
		rn := env.send(t, "What is six times seven?", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 A A T1t T1to T2 A A E"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		var text []string
		for _, ev := range evs {
			if ev.Kind == run.EventAgentMessage {
				text = append(text, ev.Answer)
			}
		}
		if got := strings.Join(text, "|"); got != "I need| to compute.|I know.|It is 42." {
			t.Fatalf("agent_message chunks %q", got)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 2 || stored[0].Thought != "I need to compute." || stored[0].Tool != "eval_expression" ||
			stored[0].ToolInput != `{"eval_expression": {"expression": "6*7"}}` || stored[0].Observation != `{"eval_expression": "42"}` ||
			stored[1].Thought != "I know.It is 42." {
			t.Fatalf("stored thoughts %+v", stored)
		}
		reqs := env.upstream.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		first, second := oneText(t, reqs[0]), oneText(t, reqs[1])
		if !strings.HasPrefix(first, "You help Ada.") || !strings.Contains(first, `"eval_expression"`) ||
			!strings.HasSuffix(first, "\n\nQuestion: What is six times seven?\nThought:") {
			t.Fatalf("first round prompt %q", first)
		}
		if stop, _ := reqs[0].Params["stop"].([]any); len(stop) != 1 || stop[0] != "Observation" {
			t.Fatalf("stop %v", reqs[0].Params["stop"])
		}
		wantPad := "Question: What is six times seven?\nThought: I need to compute.\nAction: ```{\"action\": \"eval_expression\", \"action_input\": {\"expression\": \"6*7\"}}```\nObservation: 42\nThought:"
		if !strings.HasSuffix(second, wantPad) {
			t.Fatalf("second round prompt %q, want it to end with %q", second, wantPad)
		}
		if m := env.message(t, rn); m.Status != store.MessageStatusNormal || m.Answer != "I need to compute.I know.It is 42." {
			t.Fatalf("stored %+v", m)
		}

		// The next turn: the earlier exchange as text, before the new question.
		env.upstream.Reset()
		env.upstream.On("", openaitest.Reply{Chunks: []string{" 43."}})
		rn = env.send(t, "And plus one?", rn.ConversationID)
		collect(t, rn)
		next := oneText(t, env.upstream.Requests()[0])
		wantHist := "Question: What is six times seven?\n\nThought: I need to compute.\nAction: ```{\"action\":\"eval_expression\",\"action_input\":{\"expression\":\"6*7\"}}```\nObservation: 42\n\nI know.It is 42.\n\nQuestion: And plus one?\nThought:"
		if !strings.HasSuffix(next, wantHist) {
			t.Fatalf("second turn prompt %q, want it to end with %q", next, wantHist)
		}
		if m := env.message(t, rn); m.Answer != "43." {
			t.Fatalf("stored %+v", m)
		}
	})
}

// TestReActCompletionPlainAnswer: text without an action is the answer.
func TestReActCompletionPlainAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, reactMaths, asCompletionModel)
		env.upstream.On("", openaitest.Reply{Chunks: []string{" Hello", " Ada."}})
		rn := env.send(t, "hi", "")
		if got := trace(collect(t, rn)); got != "T1 A A E" {
			t.Fatalf("events %s", got)
		}
		if m := env.message(t, rn); m.Answer != "Hello Ada." {
			t.Fatalf("stored %+v", m)
		}
		if text := oneText(t, env.upstream.Requests()[0]); !strings.HasSuffix(text, "Question: hi\nThought:") {
			t.Fatalf("prompt %q", text)
		}
	})
}

// TestReActCompletionLastRound: the last round's text lists no tools; an action there ends the
// run with ErrMaxIterations.
func TestReActCompletionLastRound(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		cfg := reactMaths
		cfg.MaxIteration = 1
		env := newEnv(t, e, cfg, asCompletionModel)
		env.upstream.On("", openaitest.Reply{Chunks: []string{"Action: {\"action\": \"eval_expression\", \"action_input\": {\"expression\": \"1+1\"}}"}})
		rn := env.send(t, "loop", "")
		evs := collect(t, rn)
		if got := trace(evs); got != "T1 T1t T1to T2 X" {
			t.Fatalf("events %s", got)
		}
		if err := evs[len(evs)-1].Err; !errors.Is(err, ErrMaxIterations) {
			t.Fatalf("error %v", err)
		}
		reqs := env.upstream.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		first, last := oneText(t, reqs[0]), oneText(t, reqs[1])
		if !strings.Contains(first, `"name":"eval_expression"`) || strings.Contains(last, `"name":"eval_expression"`) ||
			!strings.Contains(last, "Tools:\n[]") || !strings.HasSuffix(last, "Observation: 2\nThought:") {
			t.Fatalf("the last round must list no tools: %q", last)
		}
	})
}
