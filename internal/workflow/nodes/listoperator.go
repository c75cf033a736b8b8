package nodes

import (
	"context"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/listop"
)

// listOperator filters, extracts, orders and limits an array (package listop).
type listOperator struct{ cfg listop.Config }

func newListOperator(n *workflow.Node) (workflow.NodeRunner, error) {
	l := &listOperator{}
	if err := decodeInto(n.Data, &l.cfg); err != nil {
		return nil, configError("%v", err)
	}
	return l, nil
}

func (l *listOperator) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	in, _ := x.Pool.Get(l.cfg.Variable)
	res, err := listop.Apply(l.cfg, in, x.Pool.Get)
	if err != nil {
		return workflow.Result{}, workflow.Errorf("ListOperatorError", "%v", err)
	}
	out := map[string]any{}
	var order []string
	res.Outputs().Range(func(k string, v any) bool {
		out[k] = v
		order = append(order, k)
		return true
	})
	// node_finished lists them as Dify does: result, first_record, last_record.
	return workflow.Result{Inputs: map[string]any{"variable": in}, Outputs: out, OutputOrder: order}, nil
}
