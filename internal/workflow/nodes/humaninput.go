package nodes

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// humanInput pauses the run for a form ({form_content, inputs, user_actions, timeout,
// timeout_unit, delivery_methods}). Its first run returns the form (the run pauses); when the run
// resumes it runs again with the decision: a submitted form sets its inputs and takes the edge
// of the chosen action, an expired one takes the __timeout edge.
type humanInput struct {
	content     string
	inputs      []any
	actions     []workflow.FormAction
	timeout     time.Duration
	displayInUI bool
	defaults    []inputDefault
}

// inputDefault is a paragraph input whose default is read from a variable.
type inputDefault struct {
	name string
	sel  []string
}

// DefaultHumanInputTimeout is the form timeout of a node that declares none (Dify's engine
// default: 36 hours).
const DefaultHumanInputTimeout = 36 * time.Hour

var actionID = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,19}$`)

func newHumanInput(n *workflow.Node) (workflow.NodeRunner, error) {
	h := &humanInput{content: str(n.Data["form_content"]), inputs: list(n.Data["inputs"]), timeout: DefaultHumanInputTimeout}
	if h.inputs == nil {
		h.inputs = []any{}
	}
	seen := map[string]bool{}
	for _, a := range list(n.Data["user_actions"]) {
		m := mapping(a)
		id := str(m["id"])
		if !actionID.MatchString(id) {
			return nil, configError("user action id %q is not an identifier of at most 20 characters", id)
		}
		if seen[id] {
			return nil, configError("user action id %q is used twice", id)
		}
		seen[id] = true
		style := str(m["button_style"])
		if style == "" {
			style = "default"
		}
		h.actions = append(h.actions, workflow.FormAction{ID: id, Title: str(m["title"]), ButtonStyle: style})
	}
	if len(h.actions) == 0 {
		return nil, configError("the form has no user actions")
	}
	names := map[string]bool{}
	for _, in := range h.inputs {
		m := mapping(in)
		name := str(m["output_variable_name"])
		if name == "" || names[name] {
			return nil, configError("form input %q has no unique output_variable_name", name)
		}
		names[name] = true
		if d := mapping(m["default"]); str(d["type"]) == "variable" {
			h.defaults = append(h.defaults, inputDefault{name: name, sel: workflow.Selector(d["selector"])})
		}
	}
	// Dify's timeouts are whole hours or days; a fraction is honoured too (a short timeout for
	// tests and demos).
	var t float64
	switch v := n.Data["timeout"].(type) {
	case float64:
		t = v
	default:
		t = float64(intOf(v))
	}
	if t > 0 {
		unit := time.Hour
		if str(n.Data["timeout_unit"]) == "day" {
			unit = 24 * time.Hour
		}
		h.timeout = time.Duration(t * float64(unit))
	}
	// Only web-app delivery gives the form a token the Service API accepts. A node without
	// delivery methods (the newer node format) is delivered to the web app.
	methods := list(n.Data["delivery_methods"])
	h.displayInUI = methods == nil
	for _, d := range methods {
		m := mapping(d)
		if str(m["type"]) == "webapp" && m["enabled"] != false {
			h.displayInUI = true
		}
	}
	return h, nil
}

func (h *humanInput) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	content := template.Render(h.content, x.Pool.Get, value.Text)
	r := x.Resume
	if r == nil {
		f := &workflow.HumanInputForm{NodeID: x.Node.ID, NodeTitle: x.Node.Title, Content: content, Inputs: h.inputs,
			Actions: h.actions, DisplayInUI: h.displayInUI, DefaultValues: map[string]string{}, Timeout: h.timeout}
		for _, d := range h.defaults {
			s := ""
			if v, ok := x.Pool.Get(d.sel); ok && v != nil {
				s = value.Text(v)
			}
			f.DefaultValues[d.name] = s
		}
		return workflow.Result{}, &workflow.Pause{Form: f}
	}
	if r.TimedOut {
		x.Emit(run.Event{Kind: run.EventHumanInputFormTimeout, Data: formTimeout{NodeID: x.Node.ID,
			NodeTitle: x.Node.Title, ExpirationTime: r.Expiration.Unix()}})
		return workflow.Result{Outputs: map[string]any{"__action_id": "", "__action_value": "", "__rendered_content": content},
			Handle: workflow.HandleTimeout}, nil
	}
	title := ""
	for _, a := range h.actions {
		if a.ID == r.Action {
			title = a.Title
		}
	}
	rendered := fillOutputs(content, r.Inputs)
	out := make(map[string]any, len(r.Inputs)+3)
	for k, v := range r.Inputs {
		out[k] = value.FromGo(v)
	}
	out["__action_id"], out["__action_value"], out["__rendered_content"] = r.Action, title, rendered
	submitted := r.Inputs
	if submitted == nil {
		submitted = map[string]any{}
	}
	x.Emit(run.Event{Kind: run.EventHumanInputFormFilled, Data: formFilled{NodeID: x.Node.ID, NodeTitle: x.Node.Title,
		RenderedContent: rendered, ActionID: r.Action, ActionText: title, SubmittedData: submitted}})
	return workflow.Result{Inputs: map[string]any{}, Outputs: out, Handle: r.Action}, nil
}

var outputPlaceholder = regexp.MustCompile(`\{\{#\$output\.([A-Za-z_][A-Za-z0-9_]{0,29})#\}\}`)

// fillOutputs replaces the {{#$output.name#}} placeholders with the submitted values (a file as
// [file], a list of files as [N files]).
func fillOutputs(content string, inputs map[string]any) string {
	return outputPlaceholder.ReplaceAllStringFunc(content, func(m string) string {
		name := outputPlaceholder.FindStringSubmatch(m)[1]
		v, ok := inputs[name]
		if !ok {
			return ""
		}
		switch x := v.(type) {
		case string:
			return x
		case []any:
			return "[" + strconv.Itoa(len(x)) + " files]"
		case map[string]any:
			return "[file]"
		}
		return strings.TrimSpace(value.Text(value.FromGo(v)))
	})
}

// formFilled is human_input_form_filled's data.
type formFilled struct {
	NodeID          string         `json:"node_id"`
	NodeTitle       string         `json:"node_title"`
	RenderedContent string         `json:"rendered_content"`
	ActionID        string         `json:"action_id"`
	ActionText      string         `json:"action_text"`
	SubmittedData   map[string]any `json:"submitted_data"`
}

// formTimeout is human_input_form_timeout's data.
type formTimeout struct {
	NodeID         string `json:"node_id"`
	NodeTitle      string `json:"node_title"`
	ExpirationTime int64  `json:"expiration_time"`
}
