package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// A run pauses when a human-input node asks for a form: the node's runner returns a *Pause,
// the scheduler parks the node (no node_finished, no out-edge decided) and lets the other
// branches run on. When nothing is left to run and some node is parked, the run ends with
// StatusPaused and a State: everything the scheduler, the answer coordinator and the variable
// pool hold, as JSON. Resuming runs the graph again from that State with a Resumption for one or
// more parked nodes; they run again and route on the decision, the other parked nodes stay
// parked.

// TypeHumanInput is the human-input node type.
const TypeHumanInput = "human-input"

// HandleTimeout is the out-edge handle a human-input node takes when its form expired.
const HandleTimeout = "__timeout"

// HumanInputForm is the form a human-input node asks for, as its node rendered it when the run
// reached it.
type HumanInputForm struct {
	NodeID    string `json:"node_id"`
	NodeTitle string `json:"node_title"`
	// Content is the form's markdown with the run's variables filled in and the
	// {{#$output.name#}} placeholders kept.
	Content string `json:"form_content"`
	// Inputs are the form's fields as the DSL declares them.
	Inputs []any `json:"inputs"`
	// Actions are the buttons ({id, title, button_style}); each id is an out-edge handle.
	Actions []FormAction `json:"actions"`
	// DisplayInUI is whether the form is delivered to the web app (and so has a token).
	DisplayInUI bool `json:"display_in_ui"`
	// DefaultValues are the paragraph defaults taken from variables, rendered as text.
	DefaultValues map[string]string `json:"resolved_default_values"`
	// Timeout is how long the form stays open from its creation.
	Timeout time.Duration `json:"timeout"`
}

// FormAction is a button of a form.
type FormAction struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	ButtonStyle string `json:"button_style"`
}

// Resumption is the decision on a paused human-input node.
type Resumption struct {
	// TimedOut is a form that expired; the node then takes the __timeout edge.
	TimedOut bool
	// Action is the submitted action's id, Inputs the submitted values by output variable name.
	Action string
	Inputs map[string]any
	// Expiration is the form's expiration time (for human_input_form_timeout).
	Expiration time.Time
}

// Pause is what a node's runner returns to pause the run for a form.
type Pause struct{ Form *HumanInputForm }

func (p *Pause) Error() string { return "the node waits for human input" }

func isPause(err error) bool { return asPause(err) != nil }

func asPause(err error) *Pause {
	var p *Pause
	if errors.As(err, &p) {
		return p
	}
	return nil
}

// PausedNode is a node that paused the run, with its form.
type PausedNode struct {
	NodeID      string
	ExecutionID string
	Form        *HumanInputForm
}

func pausedIDs(ps []PausedNode) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.NodeID
	}
	return out
}

// State is the whole state of a paused run, to resume it from: edge and node states, the
// variable pool (node outputs included), the answer coordinator's position, the run's counters.
// It encodes to JSON.
type State struct {
	// Edges are the edge states by position in the graph's edge list.
	Edges []uint8 `json:"edges"`
	// Nodes are the node states of the nodes that left pending, by id.
	Nodes map[string]uint8 `json:"nodes"`
	// Pred is the predecessor each started node was reached from.
	Pred map[string]string `json:"pred"`
	// Paused are the nodes waiting for a form.
	Paused     []string                   `json:"paused"`
	Steps      int64                      `json:"steps"`
	Exceptions int64                      `json:"exceptions"`
	Usage      models.Usage               `json:"usage"`
	Resources  []store.RetrieverResource  `json:"resources,omitempty"`
	Outputs    map[string]any             `json:"outputs,omitempty"`
	Pool       map[string]json.RawMessage `json:"pool"`
	Answer     coordState                 `json:"answer"`
	// Root is the trigger the run started from ("" for the start node).
	Root string `json:"root,omitempty"`
}

// coordState is the answer coordinator's position.
type coordState struct {
	Waiting []string       `json:"waiting"`
	Active  []sessionState `json:"active"`
	Streams []streamState  `json:"streams,omitempty"`
	Done    []string       `json:"done"`
	Skipped []string       `json:"skipped"`
}

type sessionState struct {
	Node string `json:"node"`
	Pos  int    `json:"pos"`
	SPos int    `json:"spos"`
}

type streamState struct {
	Node   string   `json:"node"`
	Name   string   `json:"name"`
	Chunks []string `json:"chunks"`
	Closed bool     `json:"closed"`
}

func snapshot(g *Graph, spec Spec, edges map[*Edge]edgeState, state map[string]nodeState, pred map[string]string,
	coord *coordinator, paused []string, rep Report) *State {
	st := &State{Edges: make([]uint8, len(g.Edges)), Nodes: make(map[string]uint8, len(state)), Pred: pred,
		Paused: paused, Steps: spec.steps.Load(), Exceptions: spec.exceptions.Load(), Usage: rep.Usage,
		Resources: rep.Resources, Outputs: rep.Outputs, Pool: spec.Pool.encode()}
	if spec.Root != g.Root {
		st.Root = spec.Root
	}
	for e, s := range edges {
		st.Edges[e.index] = uint8(s)
	}
	for id, s := range state {
		st.Nodes[id] = uint8(s)
	}
	if coord != nil {
		st.Answer = coord.save()
	}
	return st
}

// restore puts a paused run's scheduler and coordinator state back.
func (st *State) restore(g *Graph, edges map[*Edge]edgeState, state map[string]nodeState, pred map[string]string, coord *coordinator) {
	for _, e := range g.Edges {
		if e.index < len(st.Edges) {
			edges[e] = edgeState(st.Edges[e.index])
		}
	}
	for id, s := range st.Nodes {
		if _, ok := g.Nodes[id]; ok {
			state[id] = nodeState(s)
		}
	}
	for k, v := range st.Pred {
		pred[k] = v
	}
	if coord != nil {
		coord.load(st.Answer)
	}
}

// RestorePool returns the pool a paused run held.
func (st *State) RestorePool() (*Pool, error) {
	p := NewPool()
	for scope, raw := range st.Pool {
		v, err := value.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("workflow: paused state: pool %s: %w", scope, err)
		}
		o, ok := v.(*value.Object)
		if !ok {
			return nil, fmt.Errorf("workflow: paused state: pool %s is not an object", scope)
		}
		o.Range(func(k string, v any) bool {
			p.Set(scope, k, reviveFiles(v))
			return true
		})
	}
	return p, nil
}

// reviveFiles turns the file dicts of a decoded value back into files.
func reviveFiles(v any) any {
	switch x := v.(type) {
	case *value.Object:
		if value.IsFileObject(x) {
			if f, ok := value.FileFromObject(x); ok {
				return f
			}
		}
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			x.Set(k, reviveFiles(e))
		}
		return x
	case []any:
		for i := range x {
			x[i] = reviveFiles(x[i])
		}
		return x
	}
	return v
}

// encode returns the pool's scopes as JSON objects.
func (p *Pool) encode() map[string]json.RawMessage {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]json.RawMessage, len(p.vars))
	for scope, m := range p.vars {
		o := value.NewObject()
		for k, v := range m {
			o.Set(k, v)
		}
		raw, err := json.Marshal(o)
		if err != nil {
			continue
		}
		out[scope] = raw
	}
	return out
}

// save is the coordinator's position.
func (c *coordinator) save() coordState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := coordState{Waiting: []string{}, Active: []sessionState{}, Done: []string{}, Skipped: []string{}}
	for _, ps := range c.waiting {
		st.Waiting = append(st.Waiting, ps.s.node)
	}
	for _, s := range c.active {
		st.Active = append(st.Active, sessionState{Node: s.node, Pos: s.pos, SPos: s.spos})
	}
	for k, s := range c.streams {
		st.Streams = append(st.Streams, streamState{Node: k[0], Name: k[1], Chunks: s.chunks, Closed: s.closed})
	}
	for id := range c.done {
		st.Done = append(st.Done, id)
	}
	for id := range c.skipped {
		st.Skipped = append(st.Skipped, id)
	}
	return st
}

// load puts a saved position back into a new coordinator of the same graph.
func (c *coordinator) load(st coordState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byNode := map[string]*pendingSession{}
	for _, ps := range c.waiting {
		byNode[ps.s.node] = ps
	}
	c.waiting = c.waiting[:0]
	for _, id := range st.Waiting {
		if ps := byNode[id]; ps != nil {
			c.waiting = append(c.waiting, ps)
		}
	}
	c.active = nil
	for _, a := range st.Active {
		if ps := byNode[a.Node]; ps != nil {
			ps.s.pos, ps.s.spos = a.Pos, a.SPos
			c.active = append(c.active, ps.s)
		}
	}
	for _, s := range st.Streams {
		c.streams[[2]string{s.Node, s.Name}] = &stream{chunks: s.Chunks, closed: s.Closed}
	}
	for _, id := range st.Done {
		c.done[id] = true
	}
	for _, id := range st.Skipped {
		c.skipped[id] = true
	}
}

// FormDataError is a submission the form does not accept; its message is safe to show.
type FormDataError struct{ Msg string }

func (e *FormDataError) Error() string { return e.Msg }

// SafeMessage implements safeerr.Error.
func (e *FormDataError) SafeMessage() string { return e.Msg }

func formDataErrorf(format string, args ...any) error {
	return &FormDataError{Msg: fmt.Sprintf(format, args...)}
}

// Check validates a submission: a known action, a string for every paragraph and select input
// (a select's among its constant options), a file object or a list of them for file inputs, and
// nothing the form does not declare.
func (f *HumanInputForm) Check(action string, inputs map[string]any) error {
	known := false
	for _, a := range f.Actions {
		known = known || a.ID == action
	}
	if !known {
		return formDataErrorf("unknown action %q", action)
	}
	declared := map[string]bool{}
	for _, in := range f.Inputs {
		m, _ := in.(map[string]any)
		name := str(m["output_variable_name"])
		declared[name] = true
		v, ok := inputs[name]
		if !ok || v == nil {
			return formDataErrorf("input %q is missing", name)
		}
		switch str(m["type"]) {
		case "file":
			if _, ok := v.(map[string]any); !ok {
				return formDataErrorf("input %q must be a file", name)
			}
		case "file-list":
			items, ok := v.([]any)
			if !ok {
				return formDataErrorf("input %q must be a list of files", name)
			}
			for _, it := range items {
				if _, ok := it.(map[string]any); !ok {
					return formDataErrorf("input %q must be a list of files", name)
				}
			}
		default:
			s, ok := v.(string)
			if !ok {
				return formDataErrorf("input %q must be a string", name)
			}
			if str(m["type"]) == "select" {
				src, _ := m["option_source"].(map[string]any)
				if opts, ok := src["value"].([]any); ok && str(src["type"]) != "variable" {
					found := false
					for _, o := range opts {
						found = found || str(o) == s
					}
					if !found {
						return formDataErrorf("%q is not an option of input %q", s, name)
					}
				}
			}
		}
	}
	for name := range inputs {
		if !declared[name] {
			return formDataErrorf("the form has no input %q", name)
		}
	}
	return nil
}
