package workflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Run statuses (workflow_finished.data.status).
const (
	StatusRunning          = "running"
	StatusSucceeded        = "succeeded"
	StatusFailed           = "failed"
	StatusPartialSucceeded = "partial-succeeded"
	StatusStopped          = "stopped"
	// StatusPaused is a run waiting for human input (see pause.go).
	StatusPaused = "paused"
)

// Node execution statuses.
const (
	NodeRunning   = "running"
	NodeSucceeded = "succeeded"
	NodeFailed    = "failed"
	NodeException = "exception"
	NodeStopped   = "stopped"
	NodeRetry     = "retry"
	// NodePaused is a human-input node waiting for its form.
	NodePaused = "paused"
)

// Error strategies of a node (data.error_strategy).
const (
	StrategyDefaultValue = "default-value"
	StrategyFailBranch   = "fail-branch"
)

// Sink receives a run's events; *run.Output implements it. It must be safe for concurrent use.
type Sink interface {
	Emit(ev run.Event)
}

// ExecutionStore persists node executions; a nil store persists nothing.
type ExecutionStore interface {
	SaveNodeExecution(ctx context.Context, rec NodeExecution) error
}

// NodeExecution is one run of a node as stored: written when it starts and again when it ends.
type NodeExecution struct {
	ID, RunID, NodeID, NodeType, Title string
	Index                              int
	PredecessorNodeID                  string
	Inputs, ProcessData, Outputs       map[string]any
	Status                             string
	Error                              string
	Elapsed                            float64
	Metadata                           map[string]any
	CreatedAt                          time.Time
	FinishedAt                         *time.Time
}

// Options configure an Engine.
type Options struct {
	Nodes Registry
	// MaxParallel bounds how many nodes of one run run at once (default 8).
	MaxParallel int
	// NodeTimeout bounds one attempt of a node (default 10 minutes).
	NodeTimeout time.Duration
	Store       ExecutionStore
	Logger      *slog.Logger
	// Render turns a value into the text an answer shows (default value.Markdown, as Dify's
	// answer nodes show values).
	Render func(v any) string
}

// Engine runs graphs.
type Engine struct {
	nodes    Registry
	parallel int
	timeout  time.Duration
	store    ExecutionStore
	log      *slog.Logger
	render   func(any) string
	// timedOut is the cause of a node attempt that ran out of time.
	timedOut error
}

// NewEngine returns an Engine.
func NewEngine(o Options) *Engine {
	if o.MaxParallel <= 0 {
		o.MaxParallel = 8
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Render == nil {
		o.Render = value.Markdown
	}
	return &Engine{nodes: o.Nodes, parallel: o.MaxParallel, timeout: o.NodeTimeout, store: o.Store, log: o.Logger,
		render: o.Render, timedOut: fmt.Errorf("the node timed out after %s", o.NodeTimeout)}
}

// Registry is the engine's node registry.
func (e *Engine) Registry() Registry { return e.nodes }

// Spec is one run of a graph.
type Spec struct {
	Graph *Graph
	Pool  *Pool
	RunID string
	Out   Sink
	// Env is handed to every node (Exec.Env).
	Env any
	// From is the paused state a resumed run continues from (nil: run from the start node),
	// and Resume the decisions on its paused nodes that resume them (by node id); paused nodes
	// without one stay paused.
	From   *State
	Resume map[string]*Resumption
	// TextChunks streams the text of answer and end nodes as text_chunk events (Workflow apps)
	// instead of message events (Chatflows).
	TextChunks bool
	// Root is the node the run starts from: a trigger of a graph that starts from triggers
	// ("" is the graph's start node). A resumed run continues from the root it started from.
	Root string

	// The scope being run: the container whose body it is ("" for the graph), and for an
	// iteration round its index; steps numbers the node executions of the whole run.
	scope string
	// loop is set when the scope is a loop's body (else an iteration's).
	loop  bool
	round int
	steps *atomic.Int64
	// exceptions counts the node exceptions of the whole run, inside container bodies too.
	exceptions *atomic.Int64
	// saves holds the run's node executions until they are stored (saves.go).
	saves *nodeSaves
}

// TextChunk is the data of a text_chunk event.
type TextChunk struct {
	Text                 string   `json:"text"`
	FromVariableSelector []string `json:"from_variable_selector"`
}

// Report is how a run ended.
type Report struct {
	Status string
	// Err is the failure of a failed run (the node's error, prefixed with the node).
	Err error
	// Outputs are the run's outputs (an end node's; empty for Chatflows).
	Outputs    map[string]any
	Steps      int
	Exceptions int
	Usage      models.Usage
	// Resources are the knowledge chunks the nodes used, in the order they finished.
	Resources []store.RetrieverResource
	Elapsed   time.Duration
	// Paused are the nodes that paused in this segment of a paused run (Status StatusPaused),
	// and State is the run's whole state to resume it from.
	Paused []PausedNode
	State  *State
}

type edgeState uint8

const (
	edgeUnknown edgeState = iota
	edgeTaken
	edgeSkipped
)

type nodeState uint8

const (
	statePending nodeState = iota
	stateRunning
	stateDone
	stateSkipped
	statePaused
)

// outcome is a node execution as the scheduler learns of it.
type outcome struct {
	resources []store.RetrieverResource
	id        string
	res       Result
	status    string
	err       error
	usage     *models.Usage
	// pause is the form of a node that paused (status NodePaused).
	pause  *HumanInputForm
	execID string
}

// Execute runs a graph to its end and reports how it ended. Events go to spec.Out as they
// happen; workflow_started and workflow_finished are the caller's.
func (e *Engine) Execute(ctx context.Context, spec Spec) Report {
	spec.scope, spec.steps, spec.exceptions = "", new(atomic.Int64), new(atomic.Int64)
	spec.saves = &nodeSaves{e: e}
	if spec.From != nil {
		spec.steps.Store(spec.From.Steps)
		spec.exceptions.Store(spec.From.Exceptions)
	}
	root := cmp.Or(spec.Root, spec.Graph.Root)
	if spec.From != nil && spec.From.Root != "" {
		root = spec.From.Root
	}
	if !spec.Graph.IsRoot(root) {
		return Report{Status: StatusFailed, Err: fmt.Errorf("node %q is not an entry of the graph (its start node or a trigger)", root),
			Outputs: map[string]any{}, Usage: models.EmptyUsage()}
	}
	spec.Root = root
	rep := e.execute(ctx, spec, root)
	// Every node execution is stored before the run's outcome is.
	spec.saves.flush(ctx)
	rep.Steps, rep.Exceptions = int(spec.steps.Load()), int(spec.exceptions.Load())
	if rep.Status == StatusSucceeded && rep.Exceptions > 0 {
		// An exception inside a container's body counts as one in the graph does.
		rep.Status = StatusPartialSucceeded
	}
	return rep
}

// execute runs the scope of spec from root: the graph, or the body of a container.
func (e *Engine) execute(ctx context.Context, spec Spec, root string) Report {
	started := time.Now()
	g := spec.Graph
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var coord *coordinator
	if spec.scope == "" {
		emit := func(t string, sel []string) {
			spec.Out.Emit(run.Event{Kind: run.EventMessage, Answer: t, Data: sel})
		}
		if spec.TextChunks {
			emit = func(t string, sel []string) {
				spec.Out.Emit(run.Event{Kind: run.EventTextChunk, Data: TextChunk{Text: t, FromVariableSelector: sel}})
			}
		}
		coord = newCoordinator(g, root, spec.Pool, emit, e.render)
	}

	edges := make(map[*Edge]edgeState, len(g.Edges))
	state := make(map[string]nodeState, len(g.Nodes))
	pred := map[string]string{}
	results := make(chan outcome)
	var (
		ready   = []string{root}
		running int
		rep     = Report{Status: StatusSucceeded, Usage: models.EmptyUsage()}
		failure error
		runners = map[string]NodeRunner{}
		paused  []PausedNode
		waiting []string // nodes paused in an earlier segment and still waiting
	)
	if spec.scope == "" && spec.From != nil {
		// A resumed run: the scheduler and the answer coordinator continue where they were.
		ready = nil
		spec.From.restore(g, edges, state, pred, coord)
		rep.Usage, rep.Resources, rep.Outputs = spec.From.Usage, spec.From.Resources, spec.From.Outputs
		for _, id := range spec.From.Paused {
			if spec.Resume[id] != nil {
				state[id] = stateRunning
				ready = append(ready, id)
			} else {
				waiting = append(waiting, id)
			}
		}
	} else {
		coord.resolve(nil, nil)
	}

	// skip marks a node skipped and, through its out-edges, every node all of whose incoming
	// edges end up skipped.
	var skipped []string
	var skip func(id string)
	var settle func(target string)
	skip = func(id string) {
		state[id] = stateSkipped
		skipped = append(skipped, id)
		for _, out := range g.Nodes[id].out {
			edges[out] = edgeSkipped
			settle(out.Target)
		}
	}
	// settle checks whether a node whose in-edge changed can run or must be skipped.
	settle = func(target string) {
		n := g.Nodes[target]
		if state[target] != statePending || n.ParentID != spec.scope {
			return
		}
		taken := ""
		for _, in := range n.in {
			switch edges[in] {
			case edgeUnknown:
				return
			case edgeTaken:
				if taken == "" {
					taken = in.Source
				}
			}
		}
		if taken == "" {
			skip(target)
			return
		}
		pred[target] = taken
		state[target] = stateRunning // queued
		ready = append(ready, target)
	}
	if spec.From == nil || spec.scope != "" {
		state[root] = stateRunning
	}
	if spec.scope == "" && spec.From == nil && len(g.Triggers) > 1 {
		// A run starts from one trigger: the others do not fire, and what only they lead to
		// is skipped, as Dify builds a run's graph from its root alone.
		for _, id := range g.Triggers {
			if id != root {
				skip(id)
			}
		}
		coord.resolve(nil, skipped)
		skipped = skipped[:0]
	}

	for {
		for failure == nil && ctx.Err() == nil && len(ready) > 0 && running < e.parallel {
			id := ready[0]
			ready = ready[1:]
			n := g.Nodes[id]
			r, ok := runners[id]
			if !ok {
				f := e.nodes[n.Type]
				if f == nil {
					failure = fmt.Errorf("node %s: node type %q is not supported", id, n.Type)
					break
				}
				var err error
				if r, err = f(n); err != nil {
					failure = fmt.Errorf("node %s (%s): %w", id, n.Title, err)
					break
				}
				runners[id] = r
			}
			rep.Steps++
			running++
			x := &Exec{Node: n, Pool: spec.Pool, Env: spec.Env, ExecutionID: uuid.NewString(), coord: coord, eng: e, spec: spec}
			if spec.scope == "" {
				x.Resume = spec.Resume[id]
			}
			index := 0
			if !silent(n.Type) {
				index = int(spec.steps.Add(1))
			}
			go func(index int, predecessor string) {
				results <- e.runNode(ctx, spec, x, r, index, predecessor)
			}(index, pred[id])
		}
		if running == 0 {
			break
		}
		o := <-results
		running--
		if o.usage != nil {
			rep.Usage = models.AddUsage(rep.Usage, *o.usage)
		}
		rep.Resources = append(rep.Resources, o.resources...)
		n := g.Nodes[o.id]
		state[o.id] = stateDone
		switch o.status {
		case NodePaused:
			if spec.scope != "" {
				// A body's state is not kept across a pause: human input inside an iteration or
				// a loop fails the run (Validate refuses such graphs).
				if failure == nil {
					failure = fmt.Errorf("node %s (%s): human input cannot pause inside an iteration or a loop", o.id, n.Title)
					cancel(errAborted)
				}
				break
			}
			state[o.id] = statePaused
			paused = append(paused, PausedNode{NodeID: o.id, ExecutionID: o.execID, Form: o.pause})
		case NodeSucceeded, NodeException:
			if o.status == NodeException {
				rep.Exceptions++
				spec.exceptions.Add(1)
			}
			spec.Pool.SetAll(o.id, o.res.Outputs)
			if n.Type == TypeEnd {
				rep.Outputs = o.res.Outputs
			}
			handle := o.res.Handle
			if handle == "" {
				handle = HandleSource
			}
			skipped = skipped[:0]
			for _, out := range n.out {
				if out.Handle == handle || handle == HandleSource && out.Handle == HandleSuccess {
					edges[out] = edgeTaken
				} else {
					edges[out] = edgeSkipped
				}
			}
			for _, out := range n.out {
				settle(out.Target)
			}
			coord.resolve([]string{o.id}, skipped)
		default:
			if failure == nil {
				failure = o.err
				if failure == nil {
					failure = errors.New("node stopped")
				}
				if o.status == NodeFailed {
					failure = fmt.Errorf("node %s (%s): %w", o.id, n.Title, o.err)
				}
				cancel(errAborted)
			}
		}
	}
	rep.Elapsed = time.Since(started)
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, run.ErrStopped):
		rep.Status, rep.Err = StatusStopped, run.ErrStopped
	case failure != nil && !errors.Is(cause, errAborted) && cause != nil:
		rep.Status, rep.Err = StatusFailed, cause
	case failure != nil:
		rep.Status, rep.Err = StatusFailed, failure
	case cause != nil:
		rep.Status, rep.Err = StatusFailed, cause
	case len(paused) > 0 || len(waiting) > 0:
		rep.Status, rep.Paused = StatusPaused, paused
		ids := append(waiting, pausedIDs(paused)...)
		rep.State = snapshot(g, spec, edges, state, pred, coord, ids, rep)
	default:
		coord.finish()
		if rep.Exceptions > 0 {
			rep.Status = StatusPartialSucceeded
		}
	}
	if rep.Outputs == nil {
		rep.Outputs = map[string]any{}
	}
	return rep
}

// iterationID is the iteration whose body the scope is, for node events.
func (s Spec) iterationID() *string {
	if s.loop {
		return nil
	}
	return nullable(s.scope)
}

// loopID is the loop whose body the scope is, for node events.
func (s Spec) loopID() *string {
	if !s.loop {
		return nil
	}
	return nullable(s.scope)
}

var errAborted = errors.New("workflow: run aborted by a failed node")

// silent reports whether nodes of the type run without node events of their own: the entry
// nodes of an iteration's or a loop's body, which Dify's engine leaves out of the stream (and
// out of the run's node executions and step count).
func silent(nodeType string) bool { return nodeType == typeIterationStart || nodeType == typeLoopStart }

// runNode runs one node with its retries and error strategy, emitting its events.
func (e *Engine) runNode(ctx context.Context, spec Spec, x *Exec, r NodeRunner, index int, predecessor string) outcome {
	n := x.Node
	created := time.Now()
	if silent(n.Type) {
		res, err := e.attempt(ctx, x, r)
		o := outcome{id: n.ID, res: res, status: NodeSucceeded}
		if err != nil {
			o.status, o.err = NodeFailed, err
			if ctx.Err() != nil {
				o.status, o.err = NodeStopped, context.Cause(ctx)
			}
		}
		return o
	}
	// The node's span is the parent of what it does (a model call, a tool, a retrieval, a code
	// run, the nodes of a container's body).
	ctx, span := tracing.Start(ctx, "node", trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetName(cmp.Or(n.Title, n.Type))
		span.SetAttributes(tracing.NodeID.String(n.ID), tracing.NodeType.String(n.Type), tracing.NodeTitle.String(n.Title),
			tracing.NodeIndex.Int(index))
	}
	retries := 0
	rec := NodeExecution{ID: x.ExecutionID, RunID: spec.RunID, NodeID: n.ID, NodeType: n.Type, Title: n.Title,
		Index: index, PredecessorNodeID: predecessor, Status: NodeRunning, CreatedAt: created}
	settle := e.saveRunning(ctx, spec.saves, rec)
	spec.Out.Emit(run.Event{Kind: run.EventNodeStarted, Data: nodeStarted{
		ID: x.ExecutionID, NodeID: n.ID, NodeType: n.Type, Title: n.Title, Index: index,
		PredecessorNodeID: nullable(predecessor), CreatedAt: created.Unix(), Extras: map[string]any{},
		IterationID: spec.iterationID(), LoopID: spec.loopID(),
	}})
	retry := retryConfig(n.Data)
	var (
		res Result
		err error
	)
	for attempt := 0; ; attempt++ {
		attemptStart := time.Now()
		res, err = e.attempt(ctx, x, r)
		if err == nil || ctx.Err() != nil || attempt >= retry.max || isPause(err) {
			break
		}
		// A failed attempt with retries left: node_retry, then wait and run again.
		retries++
		now := time.Now()
		spec.Out.Emit(run.Event{Kind: run.EventNodeRetry, Data: e.finished(x, index, predecessor, created, now,
			res, NodeRetry, err, time.Since(attemptStart), attempt+1)})
		if retry.interval > 0 {
			t := time.NewTimer(retry.interval)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
	}
	o := outcome{id: n.ID, res: res, usage: res.Usage, resources: res.Resources, execID: x.ExecutionID}
	if p := asPause(err); p != nil && ctx.Err() == nil {
		// The node waits for a human: no node_finished; the execution is stored as paused.
		o.status, o.pause = NodePaused, p.Form
		rec.Inputs, rec.Status = res.Inputs, NodePaused
		settle()
		spec.saves.add(ctx, rec, false)
		endNode(span, NodePaused, retries, nil)
		return o
	}
	switch {
	case err == nil:
		o.status = NodeSucceeded
	case ctx.Err() != nil:
		o.status, o.err = NodeStopped, context.Cause(ctx)
	default:
		o.status, o.err = NodeFailed, err
		switch str(n.Data["error_strategy"]) {
		case StrategyDefaultValue:
			o.status = NodeException
			o.res.Outputs = defaultValues(n.Data["default_value"])
			o.res.Outputs["error_message"] = err.Error()
			o.res.Outputs["error_type"] = errorType(err)
			o.res.Handle = HandleSource
		case StrategyFailBranch:
			o.status = NodeException
			o.res.Outputs = map[string]any{"error_message": err.Error(), "error_type": errorType(err)}
			o.res.Handle = HandleFail
		}
	}
	if o.res.Outputs == nil {
		o.res.Outputs = map[string]any{}
	}
	finished := time.Now()
	var errMsg error
	if o.status != NodeSucceeded {
		errMsg = o.err
	}
	data := e.finished(x, index, predecessor, created, finished, o.res, o.status, errMsg, finished.Sub(created), 0)
	if o.status == NodeException {
		data.ExecutionMetadata["error_strategy"] = str(n.Data["error_strategy"])
	}
	rec.Inputs, rec.ProcessData, rec.Outputs = o.res.Inputs, o.res.ProcessData, o.res.Outputs
	rec.Status, rec.Elapsed, rec.Metadata, rec.FinishedAt = o.status, data.ElapsedTime, data.ExecutionMetadata, &finished
	if errMsg != nil {
		rec.Error = errMsg.Error()
	}
	settle()
	spec.saves.add(ctx, rec, false)
	spec.Out.Emit(run.Event{Kind: run.EventNodeFinished, Data: data})
	endNode(span, o.status, retries, errMsg)
	return o
}

// endNode ends a node's span with how the node ended.
func endNode(span trace.Span, status string, retries int, err error) {
	if span.IsRecording() {
		span.SetAttributes(tracing.NodeStatus.String(status), tracing.NodeRetries.Int(retries))
		tracing.Fail(span, err)
	}
	span.End()
}

// attempt runs the node once, bounded by the node timeout; a panic fails the node.
func (e *Engine) attempt(ctx context.Context, x *Exec, r NodeRunner) (res Result, err error) {
	var (
		actx   context.Context
		cancel context.CancelFunc
	)
	if IsContainer(x.Node.Type) {
		// A container's time is its body's, whose nodes each have the node timeout.
		actx, cancel = context.WithCancel(ctx)
	} else {
		actx, cancel = context.WithTimeoutCause(ctx, e.timeout, e.timedOut)
	}
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "workflow node panicked", "node_id", x.Node.ID, "node_type", x.Node.Type, "panic", p)
			err = fmt.Errorf("the node failed unexpectedly")
		}
	}()
	res, err = r.Run(actx, x)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		err = &NodeError{Type: "TimeoutError", Err: context.Cause(actx)}
	}
	return res, err
}

// runningSaveDelay is how long a node runs before its execution is stored as running. Most
// nodes (templates, aggregators, conditions, assigners) finish well within it and are stored
// once, finished: storing each twice was most of a Chatflow run's cost. A node that takes longer
// (a model call, a request, a container) is stored as running, for the snapshots and for what
// a crash leaves.
const runningSaveDelay = 50 * time.Millisecond

// saveRunning stores rec, a node's running execution, with the run's executions kept so far,
// if the node is still running after runningSaveDelay. settle, called before the node's next
// state is stored, cancels that save or waits for it, so that the last state stored is the
// last state.
func (e *Engine) saveRunning(ctx context.Context, saves *nodeSaves, rec NodeExecution) (settle func()) {
	if e.store == nil {
		return func() {}
	}
	done := make(chan struct{})
	t := time.AfterFunc(runningSaveDelay, func() {
		defer close(done)
		saves.add(ctx, rec, true)
	})
	return func() {
		if !t.Stop() {
			<-done
		}
	}
}

func (e *Engine) save(ctx context.Context, rec NodeExecution) {
	if e.store == nil {
		return
	}
	if err := e.store.SaveNodeExecution(context.WithoutCancel(ctx), rec); err != nil {
		e.log.ErrorContext(ctx, "persist node execution", "node_execution_id", rec.ID, "error", err)
	}
}

func (e *Engine) finished(x *Exec, index int, predecessor string, created, at time.Time, res Result, status string, err error, elapsed time.Duration, retryIndex int) nodeFinished {
	meta := map[string]any{}
	maps.Copy(meta, res.Metadata)
	if u := res.Usage; u != nil {
		meta["total_tokens"] = u.TotalTokens
		meta["total_price"] = u.TotalPrice
		meta["currency"] = u.Currency
	}
	switch {
	case x.spec.scope != "" && x.spec.loop:
		meta["loop_id"], meta["loop_index"] = x.spec.scope, x.spec.round
	case x.spec.scope != "":
		meta["iteration_id"], meta["iteration_index"] = x.spec.scope, x.spec.round
	}
	d := nodeFinished{
		ID: x.ExecutionID, NodeID: x.Node.ID, NodeType: x.Node.Type, Title: x.Node.Title, Index: index,
		PredecessorNodeID: nullable(predecessor), Inputs: res.Inputs, ProcessData: res.ProcessData,
		Outputs: orderedOutputs(res), Status: status, ElapsedTime: elapsed.Seconds(), ExecutionMetadata: meta,
		CreatedAt: created.Unix(), FinishedAt: at.Unix(), Extras: map[string]any{}, Files: []any{},
		IterationID: x.spec.iterationID(), LoopID: x.spec.loopID(),
	}
	if err != nil {
		s := err.Error()
		d.Error = &s
	}
	if retryIndex > 0 {
		d.RetryIndex = &retryIndex
	}
	return d
}

// nodeStarted is node_started's data.
type nodeStarted struct {
	ID                string         `json:"id"`
	NodeID            string         `json:"node_id"`
	NodeType          string         `json:"node_type"`
	Title             string         `json:"title"`
	Index             int            `json:"index"`
	PredecessorNodeID *string        `json:"predecessor_node_id"`
	Inputs            map[string]any `json:"inputs"`
	CreatedAt         int64          `json:"created_at"`
	Extras            map[string]any `json:"extras"`
	IterationID       *string        `json:"iteration_id"`
	LoopID            *string        `json:"loop_id"`
}

// nodeFinished is node_finished's (and node_retry's) data.
type nodeFinished struct {
	ID                string         `json:"id"`
	NodeID            string         `json:"node_id"`
	NodeType          string         `json:"node_type"`
	Title             string         `json:"title"`
	Index             int            `json:"index"`
	PredecessorNodeID *string        `json:"predecessor_node_id"`
	Inputs            map[string]any `json:"inputs"`
	ProcessData       map[string]any `json:"process_data"`
	Outputs           any            `json:"outputs"`
	Status            string         `json:"status"`
	Error             *string        `json:"error"`
	ElapsedTime       float64        `json:"elapsed_time"`
	ExecutionMetadata map[string]any `json:"execution_metadata"`
	CreatedAt         int64          `json:"created_at"`
	FinishedAt        int64          `json:"finished_at"`
	Extras            map[string]any `json:"extras"`
	Files             []any          `json:"files"`
	IterationID       *string        `json:"iteration_id"`
	LoopID            *string        `json:"loop_id"`
	RetryIndex        *int           `json:"retry_index,omitempty"`
}

// orderedOutputs are a result's outputs as node_finished sends them: in OutputOrder when the node
// set one (an ordered object), else as they are (sorted keys).
func orderedOutputs(res Result) any {
	if len(res.OutputOrder) == 0 || res.Outputs == nil {
		return res.Outputs
	}
	o := value.NewObject()
	for _, k := range res.OutputOrder {
		if v, ok := res.Outputs[k]; ok {
			o.Set(k, v)
		}
	}
	rest := make([]string, 0, len(res.Outputs))
	for k := range res.Outputs {
		if _, ok := o.Get(k); !ok {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		o.Set(k, res.Outputs[k])
	}
	return o
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type retry struct {
	max      int
	interval time.Duration
}

// retryConfig reads data.retry_config ({retry_enabled, max_retries, retry_interval in ms}).
func retryConfig(data map[string]any) retry {
	m, _ := data["retry_config"].(map[string]any)
	if m == nil {
		return retry{}
	}
	if on, _ := m["retry_enabled"].(bool); !on {
		return retry{}
	}
	return retry{max: max(0, intOf(m["max_retries"])), interval: time.Duration(max(0, intOf(m["retry_interval"]))) * time.Millisecond}
}

// defaultValues reads data.default_value ([{key, type, value}]) into outputs.
func defaultValues(v any) map[string]any {
	out := map[string]any{}
	items, _ := v.([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		if m == nil {
			continue
		}
		k := str(m["key"])
		if k == "" {
			continue
		}
		val := m["value"]
		switch str(m["type"]) {
		case "number":
			if s, ok := val.(string); ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					val = f
				}
			}
		case "object", "array[number]", "array[string]", "array[object]", "array[file]":
			if s, ok := val.(string); ok {
				var d any
				if json.Unmarshal([]byte(s), &d) == nil {
					val = d
				}
			}
		}
		out[k] = val
	}
	return out
}

func intOf(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return 0
}
