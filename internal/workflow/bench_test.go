package workflow_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

type discard struct{}

func (discard) Emit(run.Event) {}

// BenchmarkEngine20Nodes measures the engine's own cost per node: a 20-node Chatflow (start, 17
// variable aggregators in a chain, if-else, answer) whose nodes do almost nothing, so the time is
// scheduling, events, the pool and the answer stream. The µs/node metric is the run's time
// divided by its nodes.
func BenchmarkEngine20Nodes(b *testing.B) {
	ns := []any{node("start", "start", map[string]any{"variables": []any{map[string]any{"variable": "name"}}})}
	es := []any{}
	prev := "start"
	for i := range 17 {
		id := fmt.Sprintf("agg%d", i)
		src := []any{prev, "output"}
		if prev == "start" {
			src = []any{"start", "name"}
		}
		ns = append(ns, node(id, "variable-aggregator", map[string]any{"variables": []any{src}}))
		es = append(es, edge(prev, "source", id))
		prev = id
	}
	ns = append(ns, node("check", "if-else", map[string]any{"cases": []any{map[string]any{"case_id": "true", "logical_operator": "and",
		"conditions": []any{map[string]any{"variable_selector": []any{prev, "output"}, "comparison_operator": "not empty"}}}}}))
	ns = append(ns, node("answer", "answer", map[string]any{"answer": "Hello {{#" + prev + ".output#}}!"}))
	es = append(es, edge(prev, "source", "check"), edge("check", "true", "answer"))
	g, err := workflow.Parse(map[string]any{"nodes": ns, "edges": es})
	if err != nil {
		b.Fatal(err)
	}
	e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{})})
	env := &nodes.Env{Inputs: map[string]any{"name": "Ada"}}
	b.ReportAllocs()
	for b.Loop() {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeSys, workflow.SysQuery, "hi")
		rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: discard{}, Env: env})
		if rep.Status != workflow.StatusSucceeded || rep.Steps != 20 {
			b.Fatalf("report %+v", rep)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/20, "µs/node")
}
