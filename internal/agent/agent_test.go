package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/tools/builtin"
)

const testConfig = `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - name: gpt-4o
        type: llm
        context_size: 8192
        max_output_tokens: 512
        pricing: {input: "2.50", output: "10.00", unit: "0.000001"}
apps:
  - name: helper
    mode: agent-chat
    model: {provider: openai, name: gpt-4o}
    pre_prompt: "You help {{name}}."
    user_input_form:
      - {type: text-input, variable: name, required: true}
`

// env is the run engine with the agent runner over a real store, the real OpenAI-compatible
// client, the built-in tools and a fake upstream speaking the OpenAI wire protocol.
type env struct {
	engine   *run.Engine
	tasks    *tasks.Local
	store    *store.Store
	upstream *openaitest.Server
	app      *apps.App
}

func newEnv(t testing.TB, e storetest.Engine, agentCfg apps.Agent, opts ...func(*apps.App, *Options)) *env {
	t.Helper()
	ctx := context.Background()
	up, file := openaitest.NewConfigured(t, testConfig)
	st := testdb.Open(t, e)
	synced, err := st.SyncApps(ctx, []store.AppSpec{{Name: "helper", Mode: "agent-chat"}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := apps.NewRegistry(file.Apps, map[string]string{"helper": synced["helper"].ID}, func(n int) int { return n })
	if err != nil {
		t.Fatal(err)
	}
	registered, _ := reg.ByID(synced["helper"].ID)
	app := *registered
	app.Agent = &agentCfg
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	// The web-page reader may reach the loopback pages of the tests.
	toolSet := builtin.New(builtin.Options{AllowPrivateNetworks: true})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	chatSvc := chat.New(chat.Options{Store: st, Models: catalog, Providers: registry.New(catalog.APIKey), Logger: log})
	tr := tasks.NewLocal()
	o := Options{Store: st, Chat: chatSvc, Tools: toolSet.Find, Logger: log}
	for _, opt := range opts {
		opt(&app, &o)
	}
	engine := run.New(run.Options{Store: st, Limiter: limiter.NewLocal(), Tasks: tr, Logger: log,
		Kinds: map[string]run.Kind{config.AppModeAgentChat: {Runner: New(o)}, apps.ModeAgent: {Runner: New(o).AgentApp()}},
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := engine.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return &env{engine: engine, tasks: tr, store: st, upstream: up, app: &app}
}

func (e *env) send(t *testing.T, query, conversation string) *run.Run {
	t.Helper()
	rn, err := e.engine.Start(context.Background(), run.Request{App: e.app, User: "u1", Query: query,
		Inputs: map[string]any{"name": "Ada"}, ConversationID: conversation, Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

// collect reads a run's events to the end and waits for the run to finish.
func collect(t *testing.T, rn *run.Run) []run.Event {
	t.Helper()
	var evs []run.Event
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-rn.Events():
			if !ok {
				select {
				case <-rn.Done():
				case <-timeout:
					t.Fatal("run did not finish")
				}
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("run did not end; events so far: %+v", evs)
		}
	}
}

func (e *env) message(t *testing.T, rn *run.Run) store.Message {
	t.Helper()
	u, err := e.store.EndUser(context.Background(), e.app.ID, "u1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.store.Message(context.Background(), e.app.ID, u.ID, rn.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *env) thoughts(t *testing.T, rn *run.Run) []store.AgentThought {
	t.Helper()
	got, err := e.store.AgentThoughts(context.Background(), []string{rn.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	return got[rn.MessageID]
}

// trace spells the events as kind letters: T agent_thought, A agent_message, E message_end,
// X error, the thought's position and what it holds so far after T ("T1", "T1t" with a tool,
// "T1to" with an observation).
func trace(evs []run.Event) string {
	var b []string
	for _, ev := range evs {
		switch ev.Kind {
		case run.EventAgentThought:
			th := ev.Data.(thoughtEvent)
			s := "T" + string(rune('0'+th.Position))
			if th.Tool != "" {
				s += "t"
			}
			if th.Observation != "" {
				s += "o"
			}
			b = append(b, s)
		case run.EventAgentMessage:
			b = append(b, "A")
		case run.EventMessageEnd:
			b = append(b, "E")
		case run.EventError:
			b = append(b, "X")
		default:
			b = append(b, ev.Kind.String())
		}
	}
	return strings.Join(b, " ")
}

func thoughtsOf(evs []run.Event) []thoughtEvent {
	var out []thoughtEvent
	for _, ev := range evs {
		if ev.Kind == run.EventAgentThought {
			out = append(out, ev.Data.(thoughtEvent))
		}
	}
	return out
}

var mathsTool = apps.Agent{Enabled: true, Strategy: "function_call", Tools: []apps.Tool{
	{ProviderType: "builtin", ProviderID: "maths", Name: "eval_expression", Enabled: true},
	{ProviderType: "builtin", ProviderID: "webscraper", Name: "webscraper", Enabled: true},
}}

// TestToolCallThenAnswer: the model calls a tool, reads its result and answers. Each step is
// streamed as it fills in under one id, stored, and the usage of both rounds is summed.
func TestToolCallThenAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, mathsTool)
		env.upstream.OnEach("six times seven", openaitest.Reply{
			Chunks:    []string{"Let me compute."},
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression": "6*7"}`}},
			Usage:     &providers.Usage{PromptTokens: 100, CompletionTokens: 10},
		}, openaitest.Reply{Chunks: []string{"It is ", "42."}, Usage: &providers.Usage{PromptTokens: 150, CompletionTokens: 5}})
		rn := env.send(t, "What is six times seven?", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 A T1t T1to T2 A A T2 E"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		ths := thoughtsOf(evs)
		if ths[0].ID != ths[1].ID || ths[1].ID != ths[2].ID || ths[3].ID == ths[0].ID || ths[3].ID != ths[4].ID {
			t.Fatalf("thought ids %+v", ths)
		}
		if ths[0].Thought != "" || ths[0].Tool != "" || ths[0].ToolInput != "" || len(ths[0].ToolLabels) != 0 || ths[0].MessageFiles == nil {
			t.Fatalf("first publication %+v, want an empty step", ths[0])
		}
		step := ths[2]
		if step.Thought != "Let me compute." || step.Tool != "eval_expression" ||
			step.ToolInput != `{"eval_expression": {"expression": "6*7"}}` || step.Observation != `{"eval_expression": "42"}` {
			t.Fatalf("tool step %+v", step)
		}
		if l, ok := step.ToolLabels["eval_expression"].(map[string]string); !ok || l["en_US"] == "" || l["zh_Hans"] == "" {
			t.Fatalf("tool labels %+v", step.ToolLabels)
		}
		if ths[4].Thought != "It is 42." || ths[4].Tool != "" || ths[4].Observation != "" {
			t.Fatalf("answer step %+v", ths[4])
		}
		end := evs[len(evs)-1].End
		if end.Usage.PromptTokens != 250 || end.Usage.CompletionTokens != 15 {
			t.Fatalf("usage %+v, want the sum of both rounds", end.Usage)
		}
		// The second round saw the tool call and its result.
		reqs := env.upstream.Requests()
		if len(reqs) != 2 || len(reqs[0].Tools) != 2 || reqs[0].Tools[0].Name != "eval_expression" {
			t.Fatalf("requests %+v", reqs)
		}
		msgs := reqs[1].Messages
		call, result := msgs[len(msgs)-2], msgs[len(msgs)-1]
		if msgs[0].Role != providers.RoleSystem || msgs[0].Content != "You help Ada." ||
			len(call.ToolCalls) != 1 || call.ToolCalls[0].Name != "eval_expression" ||
			result.Role != providers.RoleTool || result.ToolCallID != call.ToolCalls[0].ID || result.Content != "42" {
			t.Fatalf("second round prompt %+v", msgs)
		}
		m := env.message(t, rn)
		if m.Status != store.MessageStatusNormal || m.Answer != "Let me compute.It is 42." || m.MessageTokens != 250 {
			t.Fatalf("stored %+v", m)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 2 || stored[0].ID != step.ID || stored[0].Observation != step.Observation ||
			stored[0].ToolInput != step.ToolInput || stored[0].MessageTokens != 100 || stored[1].Thought != "It is 42." {
			t.Fatalf("stored thoughts %+v", stored)
		}

		// The next turn replays the tool call and its result from the stored steps.
		env.upstream.On("And plus one?", openaitest.Reply{Chunks: []string{"43."}})
		next := env.send(t, "And plus one?", rn.ConversationID)
		if got := trace(collect(t, next)); got != "T1 A T1 E" {
			t.Fatalf("second turn events %s", got)
		}
		reqs = env.upstream.Requests()
		hist := reqs[len(reqs)-1].Messages
		var roles []string
		for _, m := range hist {
			r := m.Role
			if len(m.ToolCalls) > 0 {
				r += "+call"
			}
			roles = append(roles, r)
		}
		if got := strings.Join(roles, " "); got != "system user assistant+call tool assistant user" {
			t.Fatalf("second turn prompt roles %s: %+v", got, hist)
		}
		if hist[3].Content != "42" || hist[2].ToolCalls[0].Arguments != `{"expression": "6*7"}` || hist[4].Content != "It is 42." {
			t.Fatalf("replayed history %+v", hist)
		}
	})
}

// TestToolFailuresAreObservations: a tool that fails, arguments that are not JSON and a tool
// the app does not have are all told to the model as observations; the agent goes on.
func TestToolFailuresAreObservations(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, mathsTool)
		broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}))
		defer broken.Close()
		env.upstream.OnEach("break things", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "webscraper", Arguments: `{"url": "` + broken.URL + `"}`}},
		}, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression": "1+`}},
		}, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "web_search", Arguments: `{}`}},
		}, openaitest.Reply{Chunks: []string{"I could", " not", "."}})
		rn := env.send(t, "Please break things", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 T1t T1to T2 T2t T2to T3 T3t T3to T4 A A A T4 E"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 4 {
			t.Fatalf("stored %+v", stored)
		}
		var obs []string
		for _, s := range stored[:3] {
			var o map[string]string
			if err := json.Unmarshal([]byte(s.Observation), &o); err != nil {
				t.Fatalf("observation %q: %v", s.Observation, err)
			}
			obs = append(obs, o[s.Tool])
		}
		if !strings.HasPrefix(obs[0], "tool invoke error: ") || !strings.Contains(obs[0], "500") {
			t.Errorf("failing tool observation %q", obs[0])
		}
		if !strings.HasPrefix(obs[1], "tool parameters validation error: ") {
			t.Errorf("bad arguments observation %q", obs[1])
		}
		if obs[2] != "there is not a tool named web_search" {
			t.Errorf("unknown tool observation %q", obs[2])
		}
		// Arguments that are not JSON are recorded as the model wrote them.
		if stored[1].ToolInput != `{"eval_expression": "{\"expression\": \"1+"}` {
			t.Errorf("tool_input of bad arguments %s", stored[1].ToolInput)
		}
		if m := env.message(t, rn); m.Status != store.MessageStatusNormal || m.Answer != "I could not." {
			t.Fatalf("stored %+v", m)
		}
	})
}

// TestLastRoundForcesAnswer: after max_iteration rounds the tools are withdrawn; a model that
// still calls one ends the run with ErrMaxIterations, its steps stored.
func TestLastRoundForcesAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		cfg := mathsTool
		cfg.MaxIteration = 2
		env := newEnv(t, e, cfg)
		env.upstream.On("loop forever", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression": "1+1"}`}},
		})
		rn := env.send(t, "loop forever", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 T1t T1to T2 T2t T2to T3 T3t X"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		if err := evs[len(evs)-1].Err; !errors.Is(err, ErrMaxIterations) {
			t.Fatalf("error %v", err)
		}
		reqs := env.upstream.Requests()
		if len(reqs) != 3 || len(reqs[0].Tools) != 2 || len(reqs[1].Tools) != 2 || len(reqs[2].Tools) != 0 {
			t.Fatalf("tools offered per round: %d requests", len(reqs))
		}
		if m := env.message(t, rn); m.Status != store.MessageStatusError {
			t.Fatalf("stored %+v", m)
		}
		if stored := env.thoughts(t, rn); len(stored) != 3 || stored[2].Tool != "eval_expression" || stored[2].Observation != "" {
			t.Fatalf("stored thoughts %+v", stored)
		}

		// A model that answers in the last round ends normally.
		env.upstream.OnEach("stop eventually", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression": "2+2"}`}},
		}, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression": "2+2"}`}},
		}, openaitest.Reply{Chunks: []string{"Four."}})
		rn = env.send(t, "stop eventually", "")
		if got := trace(collect(t, rn)); got != "T1 T1t T1to T2 T2t T2to T3 A T3 E" {
			t.Fatalf("events %s", got)
		}
	})
}

// TestProviderErrorMidLoop: a provider failure in the second round ends the run with the
// error; the first round's step is stored complete and the answer so far kept.
func TestProviderErrorMidLoop(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, mathsTool)
		env.upstream.OnEach("fragile", openaitest.Reply{
			Chunks:    []string{"Computing."},
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression": "3*3"}`}},
		}, openaitest.Reply{Status: 500, ErrorMessage: "upstream exploded"})
		rn := env.send(t, "fragile sum", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 A T1t T1to X"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		if err := evs[len(evs)-1].Err; providers.KindOf(err) == "" {
			t.Fatalf("error %v, want a provider error", err)
		}
		m := env.message(t, rn)
		if m.Status != store.MessageStatusError || m.Answer != "Computing." {
			t.Fatalf("stored %+v", m)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 1 || stored[0].Observation != `{"eval_expression": "9"}` {
			t.Fatalf("stored thoughts %+v", stored)
		}
	})
}

// TestNewConversationNamed: an agent's new conversation is named after its first query when
// the request asks for it, as a Chatbot's is.
func TestNewConversationNamed(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, mathsTool)
		env.upstream.On("plan my trip", openaitest.Reply{Chunks: []string{"Trip planning"}})
		rn, err := env.engine.Start(context.Background(), run.Request{App: env.app, User: "u1", Query: "plan my trip",
			Inputs: map[string]any{"name": "Ada"}, AutoGenerateName: true, Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, rn)
		u, err := env.store.EndUser(context.Background(), env.app.ID, "u1")
		if err != nil {
			t.Fatal(err)
		}
		c, err := env.store.Conversation(context.Background(), env.app.ID, u.ID, rn.ConversationID)
		if err != nil || c.Name != "Trip planning" {
			t.Fatalf("conversation %+v, %v", c, err)
		}
	})
}

// TestStopMidRound: a stop while the model streams its second round ends the message stopped,
// with the answer so far and both steps stored.
func TestStopMidRound(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, mathsTool)
		env.upstream.OnEach("slow answer", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression": "2*2"}`}},
		}, openaitest.Reply{Chunks: []string{"It is", " four"}, HangAfterChunks: 1})
		rn := env.send(t, "slow answer", "")
		var evs []run.Event
		for ev := range rn.Events() {
			evs = append(evs, ev)
			if ev.Kind == run.EventAgentMessage {
				break
			}
		}
		if err := env.tasks.Stop(context.Background(), rn.TaskID, env.app.ID, "u1"); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, collect(t, rn)...)
		if got := trace(evs); got != "T1 T1t T1to T2 A T2 E" {
			t.Fatalf("events %s", got)
		}
		if m := env.message(t, rn); m.Status != store.MessageStatusStopped || m.Answer != "It is" {
			t.Fatalf("stored %+v", m)
		}
		if stored := env.thoughts(t, rn); len(stored) != 2 || stored[1].Thought != "It is" {
			t.Fatalf("stored thoughts %+v", stored)
		}
	})
}

// tideKnowledge answers every search with two chunks and records the queries.
type tideKnowledge struct {
	mu      sync.Mutex
	queries []string
}

func (k *tideKnowledge) RetrieveForChat(_ context.Context, names []string, query string) (knowledge.ChatContext, error) {
	k.mu.Lock()
	k.queries = append(k.queries, strings.Join(names, ",")+": "+query)
	k.mu.Unlock()
	rs := []store.RetrieverResource{
		{Position: 1, DatasetID: store.NewID(), DatasetName: names[0], DocumentID: store.NewID(), DocumentName: "a.txt",
			SegmentID: store.NewID(), Content: "Tides follow the moon.", Score: 0.9},
		{Position: 2, DatasetID: store.NewID(), DatasetName: names[0], DocumentID: store.NewID(), DocumentName: "b.txt",
			SegmentID: store.NewID(), Content: "Waves are wind.", Score: 0.8},
	}
	return knowledge.ChatContext{Resources: rs, Text: "Tides follow the moon.\nWaves are wind."}, nil
}

// TestKnowledgeBaseTool: an agent's knowledge base is a tool the model calls with a query; the
// chunks are the observation and, when the app cites its sources, the answer's resources.
func TestKnowledgeBaseTool(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		for _, cite := range []bool{true, false} {
			kb := &tideKnowledge{}
			env := newEnv(t, e, apps.Agent{Enabled: true, Strategy: "function_call"}, func(a *apps.App, o *Options) {
				a.KnowledgeBases = []string{"Sea notes"}
				a.Features.RetrieverResource.Enabled = cite
				o.Knowledge = kb
			})
			q := fmt.Sprintf("why tides, cite %v", cite)
			env.upstream.OnEach(q, openaitest.Reply{
				ToolCalls: []providers.ToolCall{{Name: "dataset_Sea_notes", Arguments: `{"query": "tides"}`}},
			}, openaitest.Reply{Chunks: []string{"The moon."}})
			rn := env.send(t, q, "")
			evs := collect(t, rn)
			if got := trace(evs); got != "T1 T1t T1to T2 A T2 E" {
				t.Fatalf("events %s", got)
			}
			reqs := env.upstream.Requests()
			if len(reqs) != 2 || len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "dataset_Sea_notes" ||
				!strings.Contains(reqs[0].Tools[0].Description, "Sea notes") {
				t.Fatalf("tools offered %+v", reqs[0].Tools)
			}
			if th := thoughtsOf(evs)[2]; th.Observation != `{"dataset_Sea_notes": "Tides follow the moon.\nWaves are wind."}` {
				t.Fatalf("observation %s", th.Observation)
			}
			if len(kb.queries) != 1 || kb.queries[0] != "Sea notes: tides" {
				t.Fatalf("searches %v", kb.queries)
			}
			end := evs[len(evs)-1].End
			if cite && (len(end.Resources) != 2 || end.Resources[1].Position != 2 || end.Resources[0].Content != "Tides follow the moon.") ||
				!cite && len(end.Resources) != 0 {
				t.Fatalf("cite %v: resources %+v", cite, end.Resources)
			}
		}
	})
}

// TestToolTimeout: a tool that does not answer in time is a failure the model reads; the agent
// goes on.
func TestToolTimeout(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer slow.Close()
		defer close(release)
		env := newEnv(t, e, mathsTool, func(_ *apps.App, o *Options) {
			// The page reader's own limit is far away: the agent's limit is the one that ends the call.
			o.Tools = builtin.New(builtin.Options{AllowPrivateNetworks: true, PageTimeout: time.Hour}).Find
			o.ToolTimeout = 200 * time.Millisecond
		})
		env.upstream.OnEach("read slowly", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "webscraper", Arguments: `{"url": "` + slow.URL + `"}`}},
		}, openaitest.Reply{Chunks: []string{"The page did not load."}})
		rn := env.send(t, "read slowly", "")
		if got := trace(collect(t, rn)); got != "T1 T1t T1to T2 A T2 E" {
			t.Fatalf("events %s", got)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 2 || stored[0].Observation != `{"webscraper": "tool invoke error: the tool webscraper did not answer within 200ms"}` {
			t.Fatalf("stored thoughts %+v", stored)
		}
	})
}
