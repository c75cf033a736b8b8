package nodes_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

type discard struct{}

func (discard) Emit(run.Event) {}

// BenchmarkToolNode measures a tool node's run beside a direct call of the same built-in tool:
// start, a maths tool node with a mixed parameter, and an answer showing its text. The
// difference is what the node adds (lookup, arguments, outputs, events, the engine).
func BenchmarkToolNode(b *testing.B) {
	g, err := workflow.Parse(map[string]any{"nodes": []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("calc", "tool", map[string]any{"provider_type": "builtin", "provider_id": "maths", "tool_name": "eval_expression",
			"tool_parameters": map[string]any{"expression": map[string]any{"type": "mixed", "value": "{{#sys.query#}} * 2"}}}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#calc.text#}}"}),
	}, "edges": []any{edgeOf("start", "source", "calc"), edgeOf("calc", "source", "a")}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("node", func(b *testing.B) {
		e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{Tools: builtin.Find})})
		b.ReportAllocs()
		for b.Loop() {
			pool := workflow.NewPool()
			pool.Set(workflow.ScopeSys, workflow.SysQuery, "21")
			if rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, Out: discard{}, Env: &nodes.Env{}}); rep.Status != workflow.StatusSucceeded {
				b.Fatalf("%+v", rep)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		tool, err := builtin.Lookup("maths", "eval_expression", nil)
		if err != nil {
			b.Fatal(err)
		}
		args := json.RawMessage(`{"expression":"21 * 2"}`)
		b.ReportAllocs()
		for b.Loop() {
			if r, err := tool.Invoke(context.Background(), args); err != nil || r.Text != "42" {
				b.Fatalf("%v %+v", err, r)
			}
		}
	})
}
