package nodes

import (
	"context"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// aggregator (variable-aggregator, and its older name variable-assigner) outputs the first of
// its variables that has a value: the one branch of a merge that ran. With groups enabled each
// group does so on its own, under [node, group_name, output].
type aggregator struct {
	vars   [][]string
	groups []group
}

type group struct {
	name string
	vars [][]string
}

func newAggregator(n *workflow.Node) (workflow.NodeRunner, error) {
	a := &aggregator{vars: selectors(n.Data["variables"])}
	adv := mapping(n.Data["advanced_settings"])
	if on, _ := adv["group_enabled"].(bool); on {
		for _, g := range list(adv["groups"]) {
			m := mapping(g)
			a.groups = append(a.groups, group{name: str(m["group_name"]), vars: selectors(m["variables"])})
		}
	}
	return a, nil
}

func selectors(v any) [][]string {
	var out [][]string
	for _, s := range list(v) {
		if sel := workflow.Selector(s); len(sel) >= 2 {
			out = append(out, sel)
		}
	}
	return out
}

// first returns the first variable with a value.
func first(p *workflow.Pool, sels [][]string) any {
	for _, sel := range sels {
		if v, ok := p.Get(sel); ok && v != nil {
			return v
		}
	}
	return nil
}

func (a *aggregator) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	if len(a.groups) == 0 {
		v := first(x.Pool, a.vars)
		return workflow.Result{Outputs: map[string]any{"output": v}}, nil
	}
	out := make(map[string]any, len(a.groups))
	for _, g := range a.groups {
		out[g.name] = value.ObjectOf("output", first(x.Pool, g.vars))
	}
	return workflow.Result{Outputs: out}, nil
}
