package nodes

import (
	"context"

	"github.com/parleyhq/parley/internal/workflow"
)

// start puts the request's inputs in the pool under the start node. As in Dify its outputs also
// list the system variables, as "sys.<name>".
type start struct{ vars []string }

func newStart(n *workflow.Node) (workflow.NodeRunner, error) {
	s := &start{}
	for _, v := range list(n.Data["variables"]) {
		if name := str(mapping(v)["variable"]); name != "" {
			s.vars = append(s.vars, name)
		}
	}
	return s, nil
}

func (s *start) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	in := env(x).Inputs
	out := make(map[string]any, len(s.vars)+8)
	for _, name := range s.vars {
		if v, ok := in[name]; ok {
			out[name] = fromGo(v)
		} else {
			out[name] = nil
		}
	}
	for k, v := range x.Pool.Scope(workflow.ScopeSys) {
		out["sys."+k] = v
	}
	return workflow.Result{Inputs: out, Outputs: out}, nil
}
