package nodes

import (
	"context"

	"github.com/parleyhq/parley/internal/workflow"
)

// end collects the declared outputs of a workflow app ({variable, value_selector}); they are the
// run's outputs.
type end struct{ outputs []output }

type output struct {
	name string
	sel  []string
}

func newEnd(n *workflow.Node) (workflow.NodeRunner, error) {
	e := &end{}
	for _, o := range list(n.Data["outputs"]) {
		m := mapping(o)
		if name := str(m["variable"]); name != "" {
			e.outputs = append(e.outputs, output{name: name, sel: workflow.Selector(m["value_selector"])})
		}
	}
	return e, nil
}

func (e *end) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	out := make(map[string]any, len(e.outputs))
	for _, o := range e.outputs {
		v, _ := get(x.Pool, o.sel)
		out[o.name] = v
	}
	return workflow.Result{Inputs: out, Outputs: out}, nil
}
