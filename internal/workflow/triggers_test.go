package workflow_test

import (
	"context"
	"testing"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// TestRunFromATrigger: a graph that starts from triggers runs from the one named (Spec.Root): a
// webhook's request is its variables, the other trigger does not run and what only it leads to
// is skipped, and a node both lead to runs. A root that is no entry of the graph fails the run.
func TestRunFromATrigger(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("hook", workflow.TypeTriggerWebhook, map[string]any{"method": "POST",
			"body": []any{map[string]any{"name": "city", "type": "string"}}}),
		node("tick", workflow.TypeTriggerSchedule, map[string]any{"mode": "cron", "cron_expression": "0 9 * * *"}),
		node("only_tick", "template-transform", map[string]any{"template": "tick", "variables": []any{}}),
		node("both", "template-transform", map[string]any{"template": "{{ city }}",
			"variables": []any{map[string]any{"variable": "city", "value_selector": []any{"hook", "city"}}}}),
		node("end", workflow.TypeEnd, map[string]any{"outputs": []any{
			map[string]any{"variable": "text", "value_selector": []any{"both", "output"}}}}),
	}, []any{
		edge("hook", "source", "both"), edge("tick", "source", "only_tick"), edge("only_tick", "source", "both"),
		edge("both", "source", "end"),
	})
	if g.Root != "" || len(g.Triggers) != 2 || !g.IsRoot("hook") || g.IsRoot("both") {
		t.Fatalf("roots: %q %v", g.Root, g.Triggers)
	}
	if ps := g.Validate(nodes.Registry(nodes.Deps{}).Supports); len(ps) != 0 {
		t.Fatalf("problems: %v", ps)
	}
	e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{})})
	s := &sink{}
	inputs := map[string]any{nodes.WebhookData: map[string]any{"method": "POST", "body": map[string]any{"city": "Lyon"}}}
	rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: workflow.NewPool(), RunID: "r", Out: s,
		Env: &nodes.Env{Inputs: inputs}, Root: "hook", TextChunks: true})
	status, started := s.nodes(t)
	if rep.Status != workflow.StatusSucceeded || rep.Outputs["text"] != "Lyon" || rep.Steps != 3 {
		t.Fatalf("report %+v", rep)
	}
	if len(started) != 3 || status["tick"] != "" || status["only_tick"] != "" || status["end"] != workflow.NodeSucceeded {
		t.Fatalf("started %v, finished %v", started, status)
	}
	rep = e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: workflow.NewPool(), RunID: "r2", Out: &sink{},
		Env: &nodes.Env{}, Root: "both"})
	if rep.Status != workflow.StatusFailed || rep.Err == nil {
		t.Fatalf("a root that is no entry: %+v", rep)
	}
}
