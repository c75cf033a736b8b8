package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// tool runs one tool of the workspace (a built-in tool, an operation of a registered API, a tool
// of a registered MCP server), found as agents find theirs, with the arguments the node sets:
// tool_configurations (the tool's form settings) and tool_parameters, each a constant, a
// variable (a selector) or mixed text whose {{#…#}} references are filled in; a parameter the
// tool takes files in gets the bytes of the files its variable names (see arguments). The
// outputs are Dify's: text, files (the files the tool returned, stored as files of the message)
// and json, then the outputs the tool declares (an MCP tool's structured content under its
// output schema).
type tool struct {
	d      Deps
	ref    tools.Ref
	params []toolParam
}

// toolParam is one argument of a tool node.
type toolParam struct {
	name, kind string
	value      any
}

// Error types of a tool node, as Dify names them.
const (
	toolNodeErrorType      = "ToolNodeError"
	toolParameterErrorType = "ToolParameterError"
	toolInvokeErrorType    = "ToolInvokeError"
)

func (d Deps) newTool(n *workflow.Node) (workflow.NodeRunner, error) {
	t := &tool{d: d, ref: tools.Ref{Type: str(n.Data["provider_type"]), ProviderID: str(n.Data["provider_id"]),
		ProviderName: str(n.Data["provider_name"]), Name: str(n.Data["tool_name"])}}
	if t.ref.Name == "" || t.ref.Provider() == "" {
		return nil, configError("the node names no tool")
	}
	// The form settings come first; a parameter of the same name replaces one.
	for name, v := range mapping(n.Data["tool_configurations"]) {
		t.params = append(t.params, param(name, v))
	}
	for name, v := range mapping(n.Data["tool_parameters"]) {
		t.params = append(t.params, param(name, v))
	}
	for _, p := range t.params {
		switch p.kind {
		case "constant", "mixed", "variable":
		default:
			return nil, configError("tool_parameters.%s: unknown type %q", p.name, p.kind)
		}
	}
	return t, nil
}

// param reads one entry of tool_parameters or tool_configurations: {type, value}, or (a form
// setting of older files) the value itself.
func param(name string, v any) toolParam {
	if m := mapping(v); m != nil {
		if kind, ok := m["type"].(string); ok {
			if val, ok := m["value"]; ok {
				return toolParam{name: name, kind: kind, value: val}
			}
		}
	}
	return toolParam{name: name, kind: "constant", value: v}
}

func (t *tool) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	res := workflow.Result{Inputs: map[string]any{}, Metadata: map[string]any{"tool_info": map[string]any{
		"provider_type": t.ref.Type, "provider_id": t.ref.Provider(), "tool_name": t.ref.Name}}}
	if t.d.Tools == nil {
		return res, workflow.Errorf(toolNodeErrorType, "tool %q of provider %q is not available: no tools are configured", t.ref.Name, t.ref.Provider())
	}
	found, err := t.d.Tools(ctx, t.ref)
	if err != nil {
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		return res, workflow.Errorf(toolNodeErrorType, "tool %q of provider %q is not available on this server: %v", t.ref.Name, t.ref.Provider(), err)
	}
	raw, err := t.arguments(ctx, x, found, res.Inputs)
	if err != nil {
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		return res, err
	}
	timeout := t.d.ToolTimeout
	if timeout <= 0 {
		timeout = llm.DefaultToolTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	callCtx, span := tracing.StartTool(callCtx, t.ref.Name, "")
	if span.IsRecording() {
		span.SetAttributes(tracing.ToolProvider.String(t.ref.Provider()))
	}
	out, err := found.Invoke(callCtx, raw)
	if span.IsRecording() { // a span that records nothing has nothing to end
		failed := err
		if err == nil && out.IsError {
			failed = errors.New(out.Text)
		}
		tracing.EndTool(span, string(raw), out.Text, failed)
	}
	switch {
	case ctx.Err() != nil:
		return res, context.Cause(ctx)
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return res, workflow.Errorf(toolInvokeErrorType, "the tool %s did not answer within %v", t.ref.Name, timeout)
	case err != nil && errors.Is(err, tools.ErrBadArguments):
		return res, workflow.Errorf(toolParameterErrorType, "%v", err)
	case err != nil:
		return res, workflow.Errorf(toolInvokeErrorType, "%v", err)
	case out.IsError:
		return res, workflow.Errorf(toolInvokeErrorType, "%s", out.Text)
	}
	fs, err := t.d.keepFiles(ctx, env(x), out.Files)
	if err != nil {
		return res, workflow.Errorf(toolNodeErrorType, "%v", err)
	}
	text, objects := toolOutput(t.ref.Type, out.Text, out.JSON)
	res.Outputs = map[string]any{"text": text, "files": fs, "json": objects}
	res.OutputOrder = []string{"text", "files", "json"}
	// The tool's declared outputs follow, each a variable of its own (over a built-in output of
	// the same name), as Dify adds a tool's variable messages to text, files and json.
	if len(out.Variables) > 0 {
		if v, err := value.Decode(out.Variables); err == nil {
			if vars, ok := v.(*value.Object); ok {
				vars.Range(func(k string, v any) bool {
					if _, seen := res.Outputs[k]; !seen {
						res.OutputOrder = append(res.OutputOrder, k)
					}
					res.Outputs[k] = v
					return true
				})
			}
		}
	}
	return res, nil
}

// arguments are the node's arguments for the tool found, as the JSON object Invoke takes; inputs
// gets each as the node's inputs show it. A parameter the tool takes files in (tools.FileTaker)
// gets the file, or list of files, of its value with their bytes, read through the files service
// within tools.MaxFileArgBytes and tools.MaxFileArgs for the whole call; its input is the file
// as Dify shows it, without the bytes.
func (t *tool) arguments(ctx context.Context, x *workflow.Exec, found tools.Tool, inputs map[string]any) (json.RawMessage, error) {
	args := value.NewObject()
	types := paramTypes(found.Parameters())
	takesFiles := fileParameters(found)
	budget := fileBudget{bytes: tools.MaxFileArgBytes, files: tools.MaxFileArgs}
	for _, p := range t.params {
		v, err := p.resolve(x)
		if err != nil {
			return nil, err
		}
		if takesFiles[p.name] {
			inputs[p.name] = v // the file as Dify shows it, never its bytes
			arg, err := t.d.toolFileArg(ctx, env(x), v, &budget)
			if err != nil {
				return nil, workflow.Errorf(toolParameterErrorType, "the file of parameter %s: %v", p.name, err)
			}
			args.Set(p.name, arg)
			continue
		}
		v = coerce(v, types[p.name])
		args.Set(p.name, v)
		inputs[p.name] = v
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, workflow.Errorf(toolParameterErrorType, "the arguments cannot be sent: %v", err)
	}
	return raw, nil
}

// resolve is the parameter's value: the constant, the mixed text rendered, or the variable's
// value.
func (p toolParam) resolve(x *workflow.Exec) (any, error) {
	switch p.kind {
	case "mixed":
		return template.Render(value.Text(fromGo(p.value)), x.Pool.Get, value.Text), nil
	case "variable":
		sel := workflow.Selector(p.value)
		got, ok := x.Pool.Get(sel)
		if !ok {
			return nil, workflow.Errorf(toolParameterErrorType, "variable %s of parameter %s does not exist", strings.Join(sel, "."), p.name)
		}
		return got, nil
	}
	return fromGo(p.value), nil
}

// fileParameters are the parameters found takes files in.
func fileParameters(found tools.Tool) map[string]bool {
	ft, ok := found.(tools.FileTaker)
	if !ok {
		return nil
	}
	out := map[string]bool{}
	for _, name := range ft.FileParameters() {
		out[name] = true
	}
	return out
}

// toolOutput splits a tool's answer into Dify's text and json outputs. An API tool's JSON object
// answer is both the json output and the text; an MCP tool's JSON answer (an object, or a list
// of them) is json only, as Dify reads an MCP text content; other answers are text. A JSON object
// the tool sent besides its text (tools.Result.JSON, a plugin's JSON message) comes first in
// json. json is never empty: with no object it is [{"data": []}], as Dify's tool node leaves it.
func toolOutput(providerType, text string, sent json.RawMessage) (string, []any) {
	var objects []any
	if v, err := value.Decode(sent); err == nil {
		if o, ok := v.(*value.Object); ok {
			objects = append(objects, o)
		}
	}
	if providerType == tools.TypeAPI || providerType == tools.TypeMCP {
		if v, err := value.Decode([]byte(text)); err == nil {
			switch x := v.(type) {
			case *value.Object:
				objects = append(objects, x)
			case []any:
				if providerType == tools.TypeMCP {
					for _, it := range x {
						if o, ok := it.(*value.Object); ok {
							objects = append(objects, o)
						}
					}
				}
			}
		}
		if providerType == tools.TypeMCP && len(objects) > 0 {
			text = ""
		}
	}
	if len(objects) == 0 {
		objects = []any{value.ObjectOf("data", []any{})}
	}
	return text, objects
}

// keepFiles stores the files a tool returned as files of the message being answered, through
// the same files service agents use, and returns them as file values (transfer method
// tool_file). Without a file store, or outside a message, they are dropped.
func (d Deps) keepFiles(ctx context.Context, e *Env, produced []tools.File) ([]any, error) {
	out := []any{}
	if len(produced) == 0 || d.Files == nil || e.MessageID == "" {
		return out, nil
	}
	for i, f := range produced {
		if i >= llm.MaxToolFiles {
			break
		}
		saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		saved, err := d.Files.SaveToolFile(saveCtx, files.ToolFile{AppID: e.AppID, MessageID: e.MessageID, CreatedBy: e.EndUserID,
			Name: f.Name, MIMEType: f.MIMEType, Data: f.Data})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("a file the tool returned was not kept: %w", err)
		}
		up := saved.Upload
		fv := &value.File{ID: up.ID, Type: saved.Message.Type, TransferMethod: saved.Message.TransferMethod, RelatedID: up.ID,
			Filename: up.Name, MimeType: up.MimeType, Size: up.Size, URL: saved.URL}
		if up.Extension != "" {
			fv.Extension = "." + up.Extension
		}
		out = append(out, fv)
	}
	return out, nil
}

// paramTypes reads the JSON Schema types of a tool's parameters.
func paramTypes(schema json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := make(map[string]string, len(s.Properties))
	for name, p := range s.Properties {
		if t, ok := p.Type.(string); ok {
			out[name] = t
		}
	}
	return out
}

// coerce turns a text into the number or boolean a tool's parameter declares, as Dify converts
// a form's or a template's text to the parameter's type; anything else is left as it is.
func coerce(v any, typ string) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	switch typ {
	case "integer":
		if n, ok := value.ParseInt(strings.TrimSpace(s)); ok {
			return n
		}
	case "number":
		if n, ok := value.ParseInt(strings.TrimSpace(s)); ok {
			return n
		}
		if f, ok := value.ParseFloat(strings.TrimSpace(s)); ok {
			return f
		}
	case "boolean":
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return b
		}
	}
	return v
}
