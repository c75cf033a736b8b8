package nodes

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// code runs its Python 3 or JavaScript code in the sandbox: main receives the node's declared
// variables and returns its declared outputs, checked with Dify's rules and limits.
type code struct {
	sandbox func(ctx context.Context) (*sandbox.Runner, sandbox.Limits, error)
	lang    string
	src     string
	vars    []output
	outputs sandbox.OutputSpecs
}

func (d Deps) newCode(n *workflow.Node) (workflow.NodeRunner, error) {
	c := &code{sandbox: d.Code, lang: str(n.Data["code_language"]), src: str(n.Data["code"]), vars: variables(n.Data["variables"])}
	switch c.lang {
	case sandbox.Python3, sandbox.JavaScript:
	default:
		return nil, configError("code_language %q is not supported (python3 or javascript)", c.lang)
	}
	// The graph's data has lost the order of the outputs mapping; they are checked (and Dify
	// reports them) in name order.
	if raw, ok := n.Data["outputs"]; ok && raw != nil {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, configError("outputs: %v", err)
		}
		if err := json.Unmarshal(b, &c.outputs); err != nil {
			return nil, configError("outputs: %v", err)
		}
	}
	return c, nil
}

func (c *code) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	// Values of the value model marshal as Dify hands them to code: objects in their order,
	// files as Dify's file dicts.
	inputs := values(x.Pool, c.vars)
	res := workflow.Result{Inputs: inputs}
	if c.sandbox == nil {
		return res, workflow.Errorf(sandbox.TypeExecution, "code nodes cannot run on this server: no code sandbox is configured")
	}
	runner, lim, err := c.sandbox(ctx)
	if err != nil {
		return res, workflow.Errorf(sandbox.TypeExecution, "code nodes cannot run on this server: %v", err)
	}
	out, err := runner.Run(ctx, sandbox.Request{Language: c.lang, Code: c.src, Inputs: inputs})
	if err != nil {
		return res, codeError(err)
	}
	checked, err := sandbox.CheckOutputs(out.JSON, c.outputs, lim)
	if err != nil {
		return res, codeError(err)
	}
	v, err := value.Decode(checked.JSON)
	if err != nil {
		return res, workflow.Errorf(sandbox.TypeExecution, "Failed to parse JSON response: %v.", err)
	}
	obj, _ := v.(*value.Object)
	res.Outputs = map[string]any{}
	if obj != nil {
		obj.Range(func(k string, v any) bool {
			res.Outputs[k] = v
			return true
		})
	}
	return res, nil
}

// codeError makes a sandbox failure the node's error, of the sandbox's Dify error type; the
// end of the run's context stays what it is.
func codeError(err error) error {
	var se *sandbox.Error
	if errors.As(err, &se) {
		return &workflow.NodeError{Type: se.Type, Err: se}
	}
	return err
}
