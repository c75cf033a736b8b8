package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// NodeRunner runs one node of a graph. It reads what it needs from the pool and returns its
// outputs; the engine stores them, emits the node's events and routes its out-edges.
type NodeRunner interface {
	Run(ctx context.Context, x *Exec) (Result, error)
}

// NodeFunc is a function that is a NodeRunner.
type NodeFunc func(ctx context.Context, x *Exec) (Result, error)

// Run implements NodeRunner.
func (f NodeFunc) Run(ctx context.Context, x *Exec) (Result, error) { return f(ctx, x) }

// Factory builds the runner of a node from its data; an error says why the node cannot run
// (reported by Validate at import, and fails the run otherwise).
type Factory func(n *Node) (NodeRunner, error)

// Registry maps node types to their factories.
type Registry map[string]Factory

// Supports reports whether the registry has the node type.
func (r Registry) Supports(nodeType string) bool {
	_, ok := r[nodeType]
	return ok
}

// Result is what a node produced.
type Result struct {
	// Inputs are the values the node read, as node_finished reports them.
	Inputs map[string]any
	// ProcessData describes how the node worked (an LLM's prompt), as node_finished reports it.
	ProcessData map[string]any
	// Outputs are stored in the pool under the node's id.
	Outputs map[string]any
	// OutputOrder, if set, is the order node_finished lists Outputs' keys in, for nodes whose
	// outputs Dify sends in a fixed order; keys it leaves out follow, sorted.
	OutputOrder []string
	// Handle is the branch a branch node chose; "" takes the ordinary "source" edges.
	Handle string
	// Metadata are further members of node_finished's execution_metadata.
	Metadata map[string]any
	// Usage is the model usage of the node, if it called one.
	Usage *models.Usage
	// Resources are the knowledge chunks the node used (an LLM's context): the answer's
	// citations.
	Resources []store.RetrieverResource
}

// NodeError is a node failure with a type name (error_type in the outputs of an error
// strategy).
type NodeError struct {
	Type string
	Err  error
}

func (e *NodeError) Error() string { return e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// Errorf returns a NodeError of the given type.
func Errorf(typ, format string, args ...any) error {
	return &NodeError{Type: typ, Err: fmt.Errorf(format, args...)}
}

func errorType(err error) string {
	var ne *NodeError
	if errors.As(err, &ne) && ne.Type != "" {
		return ne.Type
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "TimeoutError"
	}
	return "NodeRunError"
}

// Exec is what a running node sees: its node, the run's pool and services, and the stream its
// streaming outputs go to.
type Exec struct {
	Node *Node
	Pool *Pool
	// Env is the run's environment (the app, the turn, model access), set by the runner.
	Env any
	// ExecutionID is the id of this node execution.
	ExecutionID string
	// Resume is the decision on the form of a human-input node that paused the run and runs
	// again on resumption (nil on its first run).
	Resume *Resumption

	coord *coordinator
	eng   *Engine
	spec  Spec
}

// Emit sends an event of the node that is not one of its lifecycle events (an iteration's
// progress, an agent node's agent_log) to the run's stream as it is.
func (x *Exec) Emit(ev run.Event) {
	if x.spec.Out != nil {
		x.spec.Out.Emit(ev)
	}
}

// RunBody runs one round of the body of the container node x runs (an iteration or a loop), from the
// body's start node, over pool (a child of the run's pool holding the round's item and index).
// The body's node events carry the container's id and the round's index.
func (x *Exec) RunBody(ctx context.Context, start string, pool *Pool, round int) Report {
	spec := x.spec
	spec.Pool, spec.scope, spec.round, spec.loop = pool, x.Node.ID, round, x.Node.Type == TypeLoop
	return x.eng.execute(ctx, spec, start)
}

// Stream forwards a chunk of the node's output name (an LLM's text) to the answers that
// reference it, live, before the node finishes.
func (x *Exec) Stream(name, chunk string) {
	if x.coord != nil && chunk != "" {
		x.coord.chunk(x.Node.ID, name, chunk)
	}
}
