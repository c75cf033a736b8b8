package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// BenchmarkChatflow20NodesLLM measures what a 20-node Chatflow adds to its model calls: each
// round runs the graph (start, three LLM nodes, fourteen variable aggregators, an if-else and an
// answer quoting the three LLMs' texts) against the fake OpenAI-compatible upstream over
// loopback HTTP, then makes the same three streamed calls directly through the provider client.
// Both are timed in the same loop, so machine load weighs on them alike; graph-µs and direct-µs
// are their times per round, added-µs/graph the difference: the engine, the nodes, the prompts,
// the events and the answer stream on top of the calls.
func BenchmarkChatflow20NodesLLM(b *testing.B) {
	d, up := deps(b)
	up.On("bench ", openaitest.Reply{Chunks: []string{"Hello", " there", "!"}, Usage: &providers.Usage{PromptTokens: 8, CompletionTokens: 3}})
	llmNode := func(id string) any {
		return nodeOf(id, "llm", map[string]any{
			"model":           map[string]any{"provider": "openai", "name": "gpt-4o-mini", "mode": "chat"},
			"prompt_template": []any{map[string]any{"role": "user", "text": "bench {{#sys.query#}}"}},
		})
	}
	ns := []any{nodeOf("start", "start", map[string]any{"variables": []any{map[string]any{"variable": "name"}}})}
	es := []any{}
	prev := "start"
	link := func(id string, n any) {
		ns = append(ns, n)
		es = append(es, edgeOf(prev, "source", id))
		prev = id
	}
	link("llm1", llmNode("llm1"))
	for i := range 14 {
		id := fmt.Sprintf("agg%d", i)
		src := []any{prev, "output"}
		switch prev {
		case "llm1", "llm2":
			src = []any{prev, "text"}
		}
		link(id, nodeOf(id, "variable-aggregator", map[string]any{"variables": []any{src}}))
		if i == 6 {
			link("llm2", llmNode("llm2"))
		}
	}
	link("llm3", llmNode("llm3"))
	link("check", nodeOf("check", "if-else", map[string]any{"cases": []any{map[string]any{"case_id": "true", "logical_operator": "and",
		"conditions": []any{map[string]any{"variable_selector": []any{"llm3", "text"}, "comparison_operator": "not empty"}}}}}))
	ns = append(ns, nodeOf("answer", "answer", map[string]any{"answer": "{{#llm1.text#}} {{#llm2.text#}} {{#llm3.text#}} {{#agg13.output#}}"}))
	es = append(es, edgeOf("check", "true", "answer"))
	if len(ns) != 20 {
		b.Fatalf("%d nodes", len(ns))
	}
	g, err := workflow.Parse(map[string]any{"nodes": ns, "edges": es})
	if err != nil {
		b.Fatal(err)
	}
	e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(d)})
	env := &nodes.Env{Inputs: map[string]any{"name": "Ada"}}
	const want = "Hello there! Hello there! Hello there! Hello there!"

	m, err := llm.Resolve(d.Models, d.Providers, "openai", "gpt-4o-mini")
	if err != nil {
		b.Fatal(err)
	}
	model, prompt := m.Client, []providers.Message{{Role: providers.RoleUser, Content: "bench hi"}}
	req := providers.ChatRequest{Model: m.Spec.Name, Messages: prompt, Parameters: llm.FitReply(llm.Params(nil, m.Spec), m.Spec, prompt)}
	direct := func() {
		stream, err := model.ChatStream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		defer stream.Close()
		text := ""
		for {
			c, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			text += c.Delta
		}
		if text != "Hello there!" {
			b.Fatalf("direct %q", text)
		}
	}

	var graphTime, directTime time.Duration
	round := func() {
		start := time.Now()
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeSys, workflow.SysQuery, "hi")
		s := &sink{}
		rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: s, Env: env})
		graphTime += time.Since(start)
		if rep.Status != workflow.StatusSucceeded || rep.Steps != 20 || s.answer.String() != want {
			b.Fatalf("report %+v, answer %q", rep, s.answer.String())
		}
		start = time.Now()
		for range 3 {
			direct()
		}
		directTime += time.Since(start)
		up.Reset() // the fake server records every request: keep it from growing
		up.On("bench ", openaitest.Reply{Chunks: []string{"Hello", " there", "!"}, Usage: &providers.Usage{PromptTokens: 8, CompletionTokens: 3}})
	}
	// A warm-up round opens the connections both sides reuse; it is not counted.
	round()
	graphTime, directTime = 0, 0
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
	n := float64(b.N)
	graph, calls := float64(graphTime.Microseconds())/n, float64(directTime.Microseconds())/n
	b.ReportMetric(graph, "graph-µs")
	b.ReportMetric(calls, "direct-µs")
	b.ReportMetric(graph-calls, "added-µs/graph")
}
