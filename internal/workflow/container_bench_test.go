package workflow_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// BenchmarkIteration100Items measures what an iteration adds per item: 100 items, each running
// a body of iteration-start and a variable aggregator, sequentially and 10 at a time. The
// µs/item metric is the run's time divided by the items.
func BenchmarkIteration100Items(b *testing.B) {
	items := make([]any, 100)
	for i := range items {
		items[i] = fmt.Sprint("item", i)
	}
	for _, parallel := range []bool{false, true} {
		b.Run(fmt.Sprint("parallel=", parallel), func(b *testing.B) {
			g, err := workflow.Parse(map[string]any{"nodes": []any{
				node("start", "start", nil),
				node("it", "iteration", map[string]any{"iterator_selector": []any{"start", "list"}, "output_selector": []any{"agg", "output"},
					"start_node_id": "is", "is_parallel": parallel, "parallel_nums": 10}),
				child("it", "is", "iteration-start", nil),
				child("it", "agg", "variable-aggregator", map[string]any{"variables": []any{[]any{"it", "item"}}}),
			}, "edges": []any{edge("start", "source", "it"), edge("is", "source", "agg")}})
			if err != nil {
				b.Fatal(err)
			}
			e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{})})
			b.ReportAllocs()
			for b.Loop() {
				pool := workflow.NewPool()
				pool.Set("start", "list", items)
				rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: discard{}, Env: &nodes.Env{}})
				if rep.Status != workflow.StatusSucceeded || rep.Steps != 202 {
					b.Fatalf("report %+v", rep)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/100, "µs/item")
		})
	}
}
