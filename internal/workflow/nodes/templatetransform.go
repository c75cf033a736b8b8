package nodes

import (
	"context"
	"errors"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template/jinja"
)

// templateTransform renders its Jinja2 template over its declared variables into `output`.
type templateTransform struct {
	tmpl string
	vars []output
}

func newTemplateTransform(n *workflow.Node) (workflow.NodeRunner, error) {
	t := &templateTransform{tmpl: str(n.Data["template"]), vars: variables(n.Data["variables"])}
	if err := jinja.Check(t.tmpl); err != nil {
		return nil, configError("template: %v", err)
	}
	return t, nil
}

// variables reads a node's [{variable, value_selector}] list.
func variables(v any) []output {
	var out []output
	for _, it := range list(v) {
		m := mapping(it)
		if name := str(m["variable"]); name != "" {
			out = append(out, output{name: name, sel: workflow.Selector(m["value_selector"])})
		}
	}
	return out
}

// values reads declared variables from the pool; a missing one is None.
func values(p *workflow.Pool, vars []output) map[string]any {
	out := make(map[string]any, len(vars))
	for _, v := range vars {
		val, _ := p.Get(v.sel)
		out[v.name] = val
	}
	return out
}

func (t *templateTransform) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	vars := values(x.Pool, t.vars)
	text, err := jinja.Render(ctx, t.tmpl, vars, jinja.Limits{})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return workflow.Result{Inputs: vars}, err
		}
		return workflow.Result{Inputs: vars}, workflow.Errorf("TemplateTransformNodeError", "%v", err)
	}
	return workflow.Result{Inputs: vars, Outputs: map[string]any{"output": text}}, nil
}
