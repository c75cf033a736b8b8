package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestAgentApp: an Agent app runs its bound agent's published configuration (not the draft):
// the same steps as a Legacy Agent, then one message with the whole answer, then message_end
// without retriever resources even though the agent's knowledge base was searched and the
// configuration asks for citations; the stored message has no retriever_resources either.
func TestAgentApp(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		kb := &tideKnowledge{}
		env := newEnv(t, e, apps.Agent{}, func(_ *apps.App, o *Options) { o.Knowledge = kb })
		legacy := env.app
		published := &apps.AgentConfig{Model: legacy.Model, SystemPrompt: "Published prompt for {{name}}.",
			KnowledgeBases: []string{"Sea notes"}, Features: apps.Features{RetrieverResource: apps.Toggle{Enabled: true}},
			UserInputForm: []apps.InputField{{Type: apps.InputText, Variable: "name", Required: true}}}
		draft := *published
		draft.SystemPrompt = "Draft prompt."
		app := &apps.App{ID: legacy.ID, Name: "agent app", Mode: apps.ModeAgent, Enabled: true,
			Bound: &apps.BoundAgent{Draft: &draft, Published: published, Version: 1}}

		// The configured model has no native tool calls: ReAct, as for a Legacy Agent that does
		// not choose.
		q := "why tides, as an agent app"
		env.upstream.OnEach("", openaitest.Reply{Chunks: []string{
			"Thought: I look it up.\nAction:\n```json\n{\"action\": \"dataset_Sea_notes\", \"action_input\": {\"query\": \"tides\"}}\n```",
		}}, openaitest.Reply{Chunks: []string{"Thought: I know.\nAction:\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"The moon.\"}\n```"}})
		// As the server does, the request carries the app as its published version makes it
		// (its input form is the agent's).
		runApp, err := apps.AgentRun(app, q)
		if err != nil {
			t.Fatal(err)
		}
		rn, err := env.engine.Start(context.Background(), run.Request{App: runApp, User: "u1", Query: q,
			Inputs: map[string]any{"name": "Ada"}, Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, rn)
		if got := trace(evs); got != "T1 A T1t T1to T2 A A message E" {
			t.Fatalf("events %s", got)
		}
		var streamed string
		for _, ev := range evs {
			if ev.Kind == run.EventAgentMessage {
				streamed += ev.Answer
			}
		}
		if closing := evs[len(evs)-2]; closing.Answer != streamed || !strings.HasSuffix(streamed, "The moon.") {
			t.Fatalf("closing message %q, streamed %q", closing.Answer, streamed)
		}
		end := evs[len(evs)-1].End
		if !end.Uncited || len(end.Resources) != 0 || len(kb.queries) != 1 {
			t.Fatalf("message_end %+v after %d searches", end, len(kb.queries))
		}
		reqs := env.upstream.Requests()
		if len(reqs) != 2 || !strings.Contains(reqs[0].Messages[0].Text(), "Published prompt for Ada.") {
			t.Fatalf("first call %+v", reqs[0].Messages)
		}
		m := env.message(t, rn)
		var meta map[string]any
		if err := json.Unmarshal(m.Metadata, &meta); err != nil {
			t.Fatal(err)
		}
		if _, cited := meta["retriever_resources"]; m.Answer != streamed || cited || meta["usage"] == nil {
			t.Fatalf("stored %q, metadata %s", m.Answer, m.Metadata)
		}

		// Without a published version, or without a bound agent, nothing runs.
		for _, tc := range []struct {
			bound *apps.BoundAgent
			want  error
		}{{&apps.BoundAgent{Draft: &draft}, apps.ErrAgentNotPublished}, {nil, apps.ErrNoBoundAgent}} {
			a := *app
			a.Bound = tc.bound
			if _, err := env.engine.Start(context.Background(), run.Request{App: &a, User: "u1", Query: q,
				Inputs: map[string]any{"name": "Ada"}, Streaming: true}); !errors.Is(err, tc.want) {
				t.Errorf("bound %+v: err %v, want %v", tc.bound, err, tc.want)
			}
		}
	})
}
