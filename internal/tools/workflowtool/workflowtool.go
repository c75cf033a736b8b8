// Package workflowtool offers the published Workflow apps of this server as tools, under the
// shape of Dify's workflow tool providers (provider_type workflow), so that agents and tool
// nodes of imported apps that call a workflow as a tool run it here.
//
// Dify names a workflow tool by its provider's id (a UUID of the exporting workspace, which
// means nothing here), its provider's name (the label, by default the app's name) and the
// tool's name (an identifier chosen when the workflow was published as a tool). A reference
// resolves to the Workflow app of this server named like the provider, else like the tool.
// The tool's parameters are the app's input form; a call runs the app's published version to
// its end and answers with its outputs, as Dify's workflow tool does (the outputs as JSON text,
// and as the tool's variables).
package workflowtool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/tools"
)

// MaxDepth bounds workflows that call workflows as tools, as Dify's WORKFLOW_CALL_MAX_DEPTH
// does: a workflow tool called this deep fails instead of running, so that a workflow that
// calls itself (through others or not) ends.
const MaxDepth = 5

// Outcome is how a run of a workflow ended.
type Outcome struct {
	// Status is succeeded, failed, stopped or partial-succeeded.
	Status string
	// Outputs are the end nodes' outputs.
	Outputs map[string]any
	// Error is a failed run's error.
	Error string
}

// Options configure a Set.
type Options struct {
	// App finds an app of the server by name (apps.Registry.ByName).
	App func(ctx context.Context, name string) (*apps.App, error)
	// Run runs the app's published version with the inputs for user, blocking, to its end.
	Run func(ctx context.Context, app *apps.App, user string, inputs map[string]any) (Outcome, error)
}

// Set finds workflow tools.
type Set struct{ o Options }

// New returns the workflow tools of o.
func New(o Options) *Set { return &Set{o: o} }

// User is the end user the runs of workflow tools belong to: a tool call does not say whose
// request it serves.
const User = "workflow-tool"

// Find returns the workflow tool ref names, configured with the app's values; an error
// wrapping tools.ErrUnknownTool when no published Workflow app of this server matches.
func (s *Set) Find(ctx context.Context, ref tools.Ref) (tools.Tool, error) {
	if ref.Type != tools.TypeWorkflow {
		return nil, fmt.Errorf("%w: %s tools are not workflow tools", tools.ErrUnknownTool, ref.Type)
	}
	var tried []string
	for _, name := range []string{ref.ProviderName, ref.Name} {
		if name == "" {
			continue
		}
		tried = append(tried, fmt.Sprintf("%q", name))
		a, err := s.o.App(ctx, name)
		if errors.Is(err, apps.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		switch {
		case a.Mode != apps.ModeWorkflow:
			return nil, fmt.Errorf("%w: app %q is a %s app, not a Workflow app", tools.ErrUnknownTool, a.Name, a.Mode)
		case a.PublishedVersion == "":
			return nil, fmt.Errorf("%w: Workflow app %q is not published (parley apps publish)", tools.ErrUnknownTool, a.Name)
		}
		return &tool{set: s, app: a, name: ref.Name, provider: ref.ProviderName, configured: ref.Configured}, nil
	}
	return nil, fmt.Errorf("%w: no Workflow app of this server is named %s (import the workflow the tool runs)",
		tools.ErrUnknownTool, strings.Join(tried, " or "))
}

// tool is one Workflow app as a tool of one app.
type tool struct {
	set            *Set
	app            *apps.App
	name, provider string
	configured     map[string]any
}

func (t *tool) Identity() tools.Identity {
	name := t.name
	if name == "" {
		name = t.app.Name
	}
	provider := t.provider
	if provider == "" {
		provider = t.app.Name
	}
	return tools.Identity{Provider: provider, Name: name, Label: map[string]string{"en_US": t.app.Name}}
}

func (t *tool) Description() string {
	if t.app.Description != "" {
		return t.app.Description
	}
	return "Runs the workflow " + t.app.Name + "."
}

// Parameters are the app's input form: text inputs as strings, numbers as numbers, checkboxes
// as booleans, selects with their options; file inputs are left out (a model cannot give one).
func (t *tool) Parameters() json.RawMessage {
	props := map[string]any{}
	required := []string{}
	for _, f := range t.app.UserInputForm {
		p := map[string]any{"type": "string", "description": f.Label}
		switch f.Type {
		case apps.InputNumber:
			p["type"] = "number"
		case apps.InputCheckbox:
			p["type"] = "boolean"
		case apps.InputSelect:
			p["enum"] = f.Options
		case apps.InputText, apps.InputParagraph:
		default:
			continue
		}
		props[f.Variable] = p
		if f.Required {
			required = append(required, f.Variable)
		}
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		panic(err)
	}
	return b
}

// depthKey marks a context with how many workflow tools it runs inside.
type depthKey struct{}

// Invoke runs the workflow with the model's arguments over the app's values. A run that does
// not succeed is the tool's failed answer, with the run's error.
func (t *tool) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= MaxDepth {
		return tools.Result{Text: fmt.Sprintf("workflow %q is called as a tool more than %d deep", t.app.Name, MaxDepth), IsError: true}, nil
	}
	inputs, err := tools.MergeArgs(t.configured, raw)
	if err != nil {
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	for k, v := range inputs {
		// A run's inputs hold numbers as a request's JSON does.
		if n, ok := v.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				inputs[k] = f
			}
		}
	}
	out, err := t.set.o.Run(context.WithValue(ctx, depthKey{}, depth+1), t.app, User, inputs)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, context.Cause(ctx)
		}
		return tools.Result{Text: fmt.Sprintf("workflow %q: %v", t.app.Name, err), IsError: true}, nil
	}
	if out.Outputs == nil {
		out.Outputs = map[string]any{}
	}
	b, err := json.Marshal(out.Outputs)
	if err != nil {
		return tools.Result{Text: fmt.Sprintf("workflow %q: its outputs: %v", t.app.Name, err), IsError: true}, nil
	}
	if out.Status != "succeeded" && out.Status != "partial-succeeded" {
		msg := out.Error
		if msg == "" {
			msg = "the run ended " + out.Status
		}
		return tools.Result{Text: fmt.Sprintf("workflow %q failed: %s", t.app.Name, msg), IsError: true}, nil
	}
	return tools.Result{Text: string(b), Variables: b}, nil
}
