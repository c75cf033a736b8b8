package nodes

import (
	"context"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// answer renders its template into its output `answer`. The text the user sees is streamed by
// the engine's answer coordinator from the same template; this output is what later nodes
// read.
type answer struct{ tmpl string }

func newAnswer(n *workflow.Node) (workflow.NodeRunner, error) {
	return &answer{tmpl: str(n.Data["answer"])}, nil
}

func (a *answer) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	text := template.Render(a.tmpl, x.Pool.Get, value.Markdown)
	return workflow.Result{Outputs: map[string]any{"answer": text, "files": []any{}}}, nil
}
