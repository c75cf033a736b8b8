package chatflow_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/apps/dsl"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/parleytest"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/workflow/chatflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

const testConfig = `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - name: gpt-4o-mini
        type: llm
        context_size: 16000
`

// collect reads a run's events to the end, failing after 20 s.
func collect(t *testing.T, rn *run.Run) []run.Event {
	t.Helper()
	var evs []run.Event
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-rn.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatal("the run did not end")
		}
	}
}

// TestRunsAreStored runs the example Chatflow twice in one conversation through the run engine
// and reads back what it stored: the workflow run with its status and counts, one node execution
// per node with its outputs and tokens, and the conversation variables carried from one turn to
// the next.
// basicEnv is the example Chatflow (docs/examples/chatflow-basic.yml) published and served by
// the run engine, on engine e.
type basicEnv struct {
	engine *run.Engine
	app    *apps.App
	st     *store.Store
	up     *openaitest.Server
}

func newBasicEnv(t testing.TB, e storetest.Engine) *basicEnv {
	t.Helper()
	ctx := context.Background()
	up, file := openaitest.NewConfigured(t, testConfig)
	st := testdb.Open(t, e)
	reg, err := apps.NewRegistry(nil, nil, func(n int) int { return n })
	if err != nil {
		t.Fatal(err)
	}
	reg = reg.WithStore(st)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "examples", "chatflow-basic.yml"))
	if err != nil {
		t.Fatal(err)
	}
	registryNodes := nodes.Registry(nodes.Deps{})
	res, err := dsl.Import(data, dsl.Env{Providers: file.Providers}, dsl.Options{NodeTypes: registryNodes.Supports})
	if err != nil {
		t.Fatal(err)
	}
	created, err := reg.Create(ctx, res.App)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Publish(ctx, created.Name); err != nil {
		t.Fatal(err)
	}
	app, err := reg.Get(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	chatSvc := chat.New(chat.Options{Store: st, Models: catalog, Providers: registry.New(catalog.APIKey), Logger: log})
	runner := chatflow.New(chatflow.Options{Store: st, Logger: log, Files: chatSvc.MessageFiles,
		Nodes: nodes.Registry(nodes.Deps{Models: catalog, Providers: registry.New(catalog.APIKey)})})
	engine := run.New(run.Options{Store: st, Limiter: limiter.NewLocal(), Tasks: tasks.NewLocal(), Logger: log,
		Kinds: map[string]run.Kind{apps.ModeAdvancedChat: {Runner: runner}}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = engine.Shutdown(ctx)
	})
	return &basicEnv{engine: engine, app: app, st: st, up: up}
}

func TestRunsAreStored(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		env := newBasicEnv(t, e)
		engine, app, st, up := env.engine, env.app, env.st, env.up
		up.On("first question", openaitest.Reply{Chunks: []string{"One."}})
		up.On("second question", openaitest.Reply{Chunks: []string{"Two."}})

		rn, err := engine.Start(ctx, run.Request{App: app, User: "u1", Query: "first question", Inputs: map[string]any{"name": "Ada"}, Streaming: true,
			Files: []run.File{{Type: "image", TransferMethod: "remote_url", URL: "https://example.com/cat.png"}}})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, rn)
		// The message's file is sys.files, as a file object.
		started, _ := json.Marshal(evs[0].Data)
		var ws struct {
			Inputs map[string]json.RawMessage `json:"inputs"`
		}
		if err := json.Unmarshal(started, &ws); err != nil || evs[0].Kind != run.EventWorkflowStarted ||
			!strings.Contains(string(ws.Inputs["sys.files"]), `"remote_url":"https://example.com/cat.png"`) ||
			!strings.Contains(string(ws.Inputs["sys.files"]), `"dify_model_identity":"__dify__file__"`) {
			t.Fatalf("workflow_started %s", started)
		}
		<-rn.Done()
		wr, err := st.WorkflowRunByID(ctx, rn.WorkflowRunID)
		if err != nil {
			t.Fatal(err)
		}
		if wr.Status != "succeeded" || wr.TotalSteps != 4 || wr.MessageID != rn.MessageID || wr.ConversationID != rn.ConversationID ||
			wr.WorkflowID != app.PublishedVersion || wr.FinishedAt == nil || wr.TotalTokens == 0 {
			t.Fatalf("workflow run %+v", wr)
		}
		execs, err := st.NodeExecutions(ctx, rn.WorkflowRunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(execs) != 4 {
			t.Fatalf("%d node executions", len(execs))
		}
		types := ""
		for i, ex := range execs {
			types += ex.NodeType + " "
			if ex.Index != i+1 || ex.Status != "succeeded" || ex.FinishedAt == nil {
				t.Fatalf("execution %+v", ex)
			}
		}
		if types != "start assigner llm answer " {
			t.Fatalf("node types %q", types)
		}
		var llmOut struct{ Text string }
		if err := json.Unmarshal(execs[2].Outputs, &llmOut); err != nil || llmOut.Text != "One." {
			t.Fatalf("llm outputs %s", execs[2].Outputs)
		}
		var meta struct {
			TotalTokens int `json:"total_tokens"`
		}
		if err := json.Unmarshal(execs[2].Metadata, &meta); err != nil || meta.TotalTokens == 0 {
			t.Fatalf("llm metadata %s", execs[2].Metadata)
		}
		vars := func() map[string]string {
			vs, err := st.ConversationVariables(ctx, rn.ConversationID)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, v := range vs {
				out[v.Name] = string(v.Value)
			}
			return out
		}
		if got := vars(); got["turns"] != "1" || got["last_question"] != `"first question"` {
			t.Fatalf("variables after turn 1: %v", got)
		}

		rn2, err := engine.Start(ctx, run.Request{App: app, User: "u1", Query: "second question", ConversationID: rn.ConversationID, Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		collect(t, rn2)
		<-rn2.Done()
		if got := vars(); got["turns"] != "2" || got["last_question"] != `"second question"` {
			t.Fatalf("variables after turn 2: %v", got)
		}
		u, err := st.EndUser(ctx, app.ID, "u1")
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.Message(ctx, app.ID, u.ID, rn2.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Answer != "Hi Ada: Two." || m.Status != store.MessageStatusNormal {
			t.Fatalf("message %+v", m)
		}
	})
}

// Budget of a run of the example Chatflow (start, assigner, LLM, answer) in a new conversation,
// through the run engine on SQLite, the fake upstream's allocations included. Measured on
// 2026-11-29: 1,409 allocations and 15 statements (the four node executions stored together,
// finished, at the end: none runs for runningSaveDelay; a first segment that finishes has no
// pause or forms to clean up; a new conversation is not touched after its insert). The
// allocation budget leaves about 10%; the statements are exact.
var chatflowRunBudget = parleytest.Budget{Allocs: 1550, Statements: 15}

// TestChatflowRunBudget pins what a Chatflow run costs in allocations and SQL statements
// (parleytest.CheckBudget): a change that adds work to a run fails here.
func TestChatflowRunBudget(t *testing.T) {
	env := newBasicEnv(t, storetest.Engine{Name: storetest.SQLite, DataDir: t.TempDir()})
	env.up.On("budget question", openaitest.Reply{Chunks: []string{"One."}})
	parleytest.CheckBudget(t, chatflowRunBudget, 20, env.st.Statements, func() {
		rn, err := env.engine.Start(t.Context(), run.Request{App: env.app, User: "u1", Query: "budget question",
			Inputs: map[string]any{"name": "Ada"}, Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range rn.Events() {
			if ev.Kind == run.EventError {
				t.Fatal(ev.Err)
			}
		}
		<-rn.Done()
	})
}
