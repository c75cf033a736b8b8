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

func TestVisible(t *testing.T) {
	for _, tc := range []struct {
		text  string
		final bool
		want  string
	}{
		{"Thought: I think", false, "I think"},
		{"Thought: I think\nAct", false, "I think"},
		{"Thought: I think\nAct", true, "I think\nAct"},
		{"Thought: ok\nAction: ```json {", false, "ok"},
		{"Sure {\"a\":1}", true, "Sure"},
	} {
		if got := visible(tc.text, tc.final); got != tc.want {
			t.Errorf("visible(%q, %v) = %q, want %q", tc.text, tc.final, got, tc.want)
		}
	}
}

func TestWithStop(t *testing.T) {
	for _, tc := range []struct {
		stop any
		want string
	}{
		{nil, "Observation"}, {"END", "END,Observation"}, {[]any{"a", "Observation"}, "a,Observation"}, {[]string{"x"}, "x,Observation"},
	} {
		if got := strings.Join(withStop(tc.stop, "Observation"), ","); got != tc.want {
			t.Errorf("withStop(%v) = %s, want %s", tc.stop, got, tc.want)
		}
	}
}
