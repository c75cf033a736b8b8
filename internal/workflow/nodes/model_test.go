package nodes_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

type sink struct {
	mu     sync.Mutex
	answer strings.Builder
}

func (s *sink) Emit(ev run.Event) {
	if ev.Kind == run.EventMessage {
		s.mu.Lock()
		s.answer.WriteString(ev.Answer)
		s.mu.Unlock()
	}
}

// deps are the node dependencies with one model served by a fake upstream.
func deps(t *testing.T) (nodes.Deps, *openaitest.Server) {
	t.Helper()
	up := openaitest.NewServer()
	t.Cleanup(up.Close)
	getenv := func(k string) string {
		return map[string]string{"UPSTREAM": up.URL(), "UPSTREAM_KEY": up.APIKey()}[k]
	}
	file, err := config.ParseFile([]byte(`
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - {name: gpt-4o-mini, type: llm, context_size: 16000}
`), getenv)
	if err != nil {
		t.Fatal(err)
	}
	catalog := models.NewCatalog(file.Providers, getenv)
	return nodes.Deps{Models: catalog, Providers: registry.New(catalog.APIKey)}, up
}

func nodeOf(id, typ string, data map[string]any) any {
	data["type"], data["title"] = typ, id
	return map[string]any{"id": id, "data": data}
}

func edgeOf(src, handle, dst string) any {
	return map[string]any{"source": src, "sourceHandle": handle, "target": dst}
}

// TestQuestionClassifierBranches: the model's answer picks the class whose branch runs; an answer
// naming no class takes the first, as in Dify.
func TestQuestionClassifierBranches(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	model := map[string]any{"provider": "openai", "name": "gpt-4o-mini", "mode": "chat"}
	g, err := workflow.Parse(map[string]any{"nodes": []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("qc", "question-classifier", map[string]any{"model": model, "query_variable_selector": []any{"sys", "query"},
			"instruction": "Be strict.", "classes": []any{
				map[string]any{"id": "1", "name": "weather"}, map[string]any{"id": "2", "name": "billing"}}}),
		nodeOf("w", "answer", map[string]any{"answer": "weather: {{#qc.class_name#}}"}),
		nodeOf("b", "answer", map[string]any{"answer": "billing: {{#qc.class_name#}}"}),
	}, "edges": []any{edgeOf("start", "source", "qc"), edgeOf("qc", "1", "w"), edgeOf("qc", "2", "b")}})
	if err != nil {
		t.Fatal(err)
	}
	up.On("my invoice", openaitest.Reply{Text: `{"category_id": "2", "category_name": "billing"}`})
	up.On("rain tomorrow", openaitest.Reply{Text: `It is {"category_name": "weather"}`})
	up.On("gibberish", openaitest.Reply{Text: "no idea"})
	e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)})
	for query, want := range map[string]string{"about my invoice": "billing: billing", "rain tomorrow?": "weather: weather", "gibberish": "weather: weather"} {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeSys, workflow.SysQuery, query)
		s := &sink{}
		rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, Out: s, Env: &nodes.Env{}})
		if rep.Status != workflow.StatusSucceeded || s.answer.String() != want || rep.Usage.TotalTokens == 0 {
			t.Fatalf("%s: %+v, answer %q", query, rep, s.answer.String())
		}
	}
	for _, req := range up.Requests() {
		if !strings.Contains(req.Messages[0].Text(), "Be strict.") || !strings.Contains(req.LastUserMessage(), `"category_name":"billing"`) {
			t.Fatalf("prompt %+v", req.Messages)
		}
	}
}

// TestLLMJinjaAndContext: a jinja2 message renders over the node's jinja2 variables, {{#context#}}
// is the context variable's text, and the answer streams the model's text.
func TestLLMJinjaAndContext(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	g, err := workflow.Parse(map[string]any{"nodes": []any{
		nodeOf("start", "start", map[string]any{"variables": []any{map[string]any{"variable": "topic"}}}),
		nodeOf("llm", "llm", map[string]any{
			"model": map[string]any{"provider": "openai", "name": "gpt-4o-mini", "mode": "chat"},
			"prompt_template": []any{
				map[string]any{"role": "system", "edition_type": "jinja2", "text": "", "jinja2_text": "Topic: {{ t | upper }}"},
				map[string]any{"role": "user", "text": "Context: {{#context#}} Q: {{#sys.query#}}"},
			},
			"prompt_config": map[string]any{"jinja2_variables": []any{map[string]any{"variable": "t", "value_selector": []any{"start", "topic"}}}},
			"context":       map[string]any{"enabled": true, "variable_selector": []any{"start", "topic"}},
		}),
		nodeOf("a", "answer", map[string]any{"answer": "[{{#llm.text#}}]"}),
	}, "edges": []any{edgeOf("start", "source", "llm"), edgeOf("llm", "source", "a")}})
	if err != nil {
		t.Fatal(err)
	}
	up.On("Context: cats Q: why", openaitest.Reply{Chunks: []string{"Because", "."}})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, "why")
	s := &sink{}
	rep := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)}).Execute(context.Background(),
		workflow.Spec{Graph: g, Pool: pool, Out: s, Env: &nodes.Env{Inputs: map[string]any{"topic": "cats"}}})
	if rep.Status != workflow.StatusSucceeded || s.answer.String() != "[Because.]" {
		t.Fatalf("%+v, answer %q", rep, s.answer.String())
	}
	if sys := up.Requests()[0].Messages[0].Text(); sys != "Topic: CATS" {
		t.Fatalf("system %q", sys)
	}
}
