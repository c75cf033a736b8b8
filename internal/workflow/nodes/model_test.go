package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
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
func deps(t testing.TB) (nodes.Deps, *openaitest.Server) {
	t.Helper()
	up, file := openaitest.NewConfigured(t, `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - {name: gpt-4o-mini, type: llm, context_size: 16000}
      - {name: gpt-4.1, type: llm, context_size: 16000, features: [tool-call]}
      - {name: gpt-4o, type: llm, context_size: 16000, features: [structured-output, vision]}
`)
	catalog := models.NewCatalog(file.Providers, up.Getenv)
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

// TestParameterExtractor: a model that calls functions fills the parameters through the
// function's arguments, converted to their types; another answers JSON; an answer without a
// required parameter leaves every parameter empty with __is_success 0 and the reason.
func TestParameterExtractor(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	graphOf := func(model string) *workflow.Graph {
		g, err := workflow.Parse(map[string]any{"nodes": []any{
			nodeOf("start", "start", map[string]any{}),
			nodeOf("pe", "parameter-extractor", map[string]any{
				"model": map[string]any{"provider": "openai", "name": model, "mode": "chat"},
				"query": []any{"sys", "query"}, "reasoning_mode": "function_call", "instruction": "Dates are days.",
				"parameters": []any{
					map[string]any{"name": "city", "type": "string", "description": "the city", "required": true},
					map[string]any{"name": "days", "type": "number", "description": "how many days", "required": true},
					map[string]any{"name": "class", "type": "select", "options": []any{"economy", "business"}},
				}}),
			nodeOf("a", "answer", map[string]any{"answer": "{{#pe.city#}}/{{#pe.days#}}/{{#pe.class#}}/{{#pe.__is_success#}}/{{#pe.__reason#}}"}),
		}, "edges": []any{edgeOf("start", "source", "pe"), edgeOf("pe", "source", "a")}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	up.On("three days in Paris", openaitest.Reply{ToolCalls: []providers.ToolCall{{Name: "extract_parameters", Arguments: `{"city":"Paris","days":"3","class":"business"}`}}})
	up.On("Rome, no dates", openaitest.Reply{Text: `Here: {"city": "Rome"}`})
	up.On("two days in Oslo", openaitest.Reply{Text: `{"city": "Oslo", "days": 2}`})
	e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)})
	for _, tc := range []struct{ model, query, want string }{
		{"gpt-4.1", "three days in Paris", "Paris/3/business/1/"},
		{"gpt-4o-mini", "two days in Oslo", "Oslo/2//1/"},
		{"gpt-4o-mini", "Rome, no dates", "/0//0/parameter days is required"},
	} {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeSys, workflow.SysQuery, tc.query)
		s := &sink{}
		rep := e.Execute(context.Background(), workflow.Spec{Graph: graphOf(tc.model), Pool: pool, Out: s, Env: &nodes.Env{}})
		if rep.Status != workflow.StatusSucceeded || s.answer.String() != tc.want {
			t.Fatalf("%s: %+v, answer %q, want %q", tc.query, rep, s.answer.String(), tc.want)
		}
	}
	for _, req := range up.Requests() {
		fc := req.Model == "gpt-4.1"
		if fc != (len(req.Tools) == 1) || !strings.Contains(req.Messages[0].Text(), "Dates are days.") {
			t.Fatalf("request %+v", req)
		}
	}
}

// TestLLMCompletionTemplate: a completion-style template is one user message, with the memory
// written as labelled lines where it says {{#histories#}}.
func TestLLMCompletionTemplate(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	g, err := workflow.Parse(map[string]any{"nodes": []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("llm", "llm", map[string]any{
			"model":           map[string]any{"provider": "openai", "name": "gpt-4o-mini", "mode": "completion"},
			"prompt_template": map[string]any{"text": "History:\n{{#histories#}}\nQuestion: {{#sys.query#}}"},
			"memory":          map[string]any{"window": map[string]any{"enabled": true, "size": 1}, "role_prefix": map[string]any{"user": "U", "assistant": "A"}},
		}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#llm.text#}}"}),
	}, "edges": []any{edgeOf("start", "source", "llm"), edgeOf("llm", "source", "a")}})
	if err != nil {
		t.Fatal(err)
	}
	up.On("Question: third", openaitest.Reply{Text: "ok"})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, "third")
	history := func(_ context.Context, n int) ([]store.Message, error) {
		h := []store.Message{{Query: "first", Answer: "one"}, {Query: "second", Answer: "two"}}
		return h[len(h)-n:], nil
	}
	s := &sink{}
	rep := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)}).Execute(context.Background(),
		workflow.Spec{Graph: g, Pool: pool, Out: s, Env: &nodes.Env{History: history}})
	if rep.Status != workflow.StatusSucceeded || s.answer.String() != "ok" {
		t.Fatalf("%+v, answer %q", rep, s.answer.String())
	}
	msgs := up.Requests()[0].Messages
	if len(msgs) != 1 || msgs[0].Text() != "History:\nU: second\nA: two\nQuestion: third" {
		t.Fatalf("prompt %+v", msgs)
	}
}

// TestLLMStructuredOutput: with structured output on, a model that has the structured-output
// feature is asked through response_format json_schema, another through a system message with
// the schema; the answer, code fence or not, becomes the structured_output object later nodes
// read, and an answer that is not a JSON object fails the node with Dify's OutputParserError.
func TestLLMStructuredOutput(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}, "age": map[string]any{"type": "number"}}}
	graph := func(model string) *workflow.Graph {
		g, err := workflow.Parse(map[string]any{"nodes": []any{
			nodeOf("start", "start", map[string]any{}),
			nodeOf("llm", "llm", map[string]any{
				"model":                     map[string]any{"provider": "openai", "name": model, "mode": "chat"},
				"prompt_template":           []any{map[string]any{"role": "system", "text": "Be exact."}, map[string]any{"role": "user", "text": "{{#sys.query#}}"}},
				"structured_output_enabled": true,
				"structured_output":         map[string]any{"schema": schema},
			}),
			nodeOf("a", "answer", map[string]any{"answer": "{{#llm.structured_output.name#}} is {{#llm.structured_output.age#}}"}),
		}, "edges": []any{edgeOf("start", "source", "llm"), edgeOf("llm", "source", "a")}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	up.On("who natively", openaitest.Reply{Text: `{"name": "Ada", "age": 36}`})
	up.On("who by prompt", openaitest.Reply{Text: "```json\n{\"name\": \"Alan\", \"age\": 41}\n```"})
	up.On("who badly", openaitest.Reply{Text: "Ada, 36"})
	e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)})
	exec := func(model, query string) (workflow.Report, string) {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeSys, workflow.SysQuery, query)
		s := &sink{}
		rep := e.Execute(context.Background(), workflow.Spec{Graph: graph(model), Pool: pool, Out: s, Env: &nodes.Env{}})
		return rep, s.answer.String()
	}
	request := func(query string) openaitest.Request {
		for _, r := range up.Requests() {
			if r.LastUserMessage() == query {
				return r
			}
		}
		t.Fatalf("no request for %q", query)
		return openaitest.Request{}
	}

	if rep, answer := exec("gpt-4o", "who natively"); rep.Status != workflow.StatusSucceeded || answer != "Ada is 36" {
		t.Fatalf("native: %+v, answer %q", rep, answer)
	}
	r := request("who natively")
	rf, _ := json.Marshal(r.Params["response_format"])
	want, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "llm_response", "schema": schema}})
	if string(rf) != string(want) || r.Messages[0].Text() != "Be exact." {
		t.Fatalf("native request: response_format %s, messages %+v", rf, r.Messages)
	}

	if rep, answer := exec("gpt-4o-mini", "who by prompt"); rep.Status != workflow.StatusSucceeded || answer != "Alan is 41" {
		t.Fatalf("prompted: %+v, answer %q", rep, answer)
	}
	r = request("who by prompt")
	if _, ok := r.Params["response_format"]; ok || r.Messages[0].Role != providers.RoleSystem ||
		!strings.Contains(r.Messages[0].Text(), `"properties":{"age":{"type":"number"}`) || r.Messages[1].Text() != "Be exact." {
		t.Fatalf("prompted request: %v %+v", r.Params, r.Messages)
	}

	rep, _ := exec("gpt-4o", "who badly")
	var ne *workflow.NodeError
	if rep.Status != workflow.StatusFailed || !errors.As(rep.Err, &ne) || ne.Type != "OutputParserError" ||
		!strings.Contains(rep.Err.Error(), "Failed to parse structured output: Ada, 36") {
		t.Fatalf("not JSON: %+v", rep)
	}
}

// TestLLMVision: with vision on, the images among the node's files (sys.files by default) go to
// a vision model as data URLs with the node's detail, before the text of the last user message;
// other files are not sent, and a model without the vision feature gets the text alone.
func TestLLMVision(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d, up := deps(t)
	d.Files = f.files
	png := []byte("\x89PNG\r\n\x1a\nfake image")
	img := f.upload(t, "cat.png", "image/png", png)
	doc := f.upload(t, "notes.txt", "text/plain", []byte("notes"))
	graph := func(model string) *workflow.Graph {
		g, err := workflow.Parse(map[string]any{"nodes": []any{
			nodeOf("start", "start", map[string]any{}),
			nodeOf("llm", "llm", map[string]any{
				"model":           map[string]any{"provider": "openai", "name": model, "mode": "chat"},
				"prompt_template": []any{map[string]any{"role": "system", "text": "Describe."}, map[string]any{"role": "user", "text": "{{#sys.query#}}"}},
				"vision":          map[string]any{"enabled": true, "configs": map[string]any{"detail": "low"}},
			}),
			nodeOf("a", "answer", map[string]any{"answer": "{{#llm.text#}}"}),
		}, "edges": []any{edgeOf("start", "source", "llm"), edgeOf("llm", "source", "a")}})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	up.On("what is this", openaitest.Reply{Text: "A cat."})
	e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)})
	for _, model := range []string{"gpt-4o", "gpt-4o-mini"} {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeSys, workflow.SysQuery, "what is this "+model)
		pool.Set(workflow.ScopeSys, workflow.SysFiles, []any{img, doc})
		s := &sink{}
		rep := e.Execute(context.Background(), workflow.Spec{Graph: graph(model), Pool: pool, Out: s, Env: f.env})
		if rep.Status != workflow.StatusSucceeded || s.answer.String() != "A cat." {
			t.Fatalf("%s: %+v, answer %q", model, rep, s.answer.String())
		}
	}
	var seen int
	for _, r := range up.Requests() {
		last := r.Messages[len(r.Messages)-1]
		switch r.LastUserMessage() {
		case "what is this gpt-4o":
			seen++
			want := []providers.Part{{Type: providers.PartImageURL, ImageURL: files.DataURL("image/png", png), Detail: "low"},
				{Type: providers.PartText, Text: "what is this gpt-4o"}}
			if len(r.Messages) != 2 || !slices.Equal(last.Parts, want) {
				t.Fatalf("vision request %+v", r.Messages)
			}
		case "what is this gpt-4o-mini":
			seen++
			if len(last.Parts) != 0 || last.Content != "what is this gpt-4o-mini" {
				t.Fatalf("request of a model without vision %+v", r.Messages)
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d requests", seen)
	}
}
