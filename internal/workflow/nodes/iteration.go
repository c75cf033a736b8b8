package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// iteration runs its body (the nodes whose parent it is, from its iteration-start node) once per
// item of an array, with [iteration, item] and [iteration, index] in the round's pool, and
// collects the value at output_selector of each round into `output`, in item order. Rounds run
// one after the other, or up to parallel_nums at once with is_parallel. A failed round ends the
// node (error_handle_mode terminated, the default), leaves null in its place (continue-on-error)
// or is dropped (remove-abnormal-output). With flatten_output (the default) an output whose
// items are all arrays is flattened one level. The node emits iteration_started, one
// iteration_next per round and iteration_completed around its body's node events.
type iteration struct {
	items, output []string
	start         string
	parallel      int
	onError       string
	flatten       bool
}

// Error handling modes of an iteration.
const (
	iterTerminated   = "terminated"
	iterContinue     = "continue-on-error"
	iterRemoveFailed = "remove-abnormal-output"
)

func newIteration(n *workflow.Node) (workflow.NodeRunner, error) {
	it := &iteration{items: workflow.Selector(n.Data["iterator_selector"]), output: workflow.Selector(n.Data["output_selector"]),
		start: str(n.Data["start_node_id"]), parallel: 1, onError: str(n.Data["error_handle_mode"]), flatten: true}
	if it.start == "" {
		return nil, configError("the iteration has no start node")
	}
	if on, _ := n.Data["is_parallel"].(bool); on {
		it.parallel = intOf(n.Data["parallel_nums"])
		if it.parallel <= 0 {
			it.parallel = 10
		}
	}
	if f, ok := n.Data["flatten_output"].(bool); ok {
		it.flatten = f
	}
	switch it.onError {
	case "":
		it.onError = iterTerminated
	case iterTerminated, iterContinue, iterRemoveFailed:
	default:
		return nil, configError("unknown error_handle_mode %q", it.onError)
	}
	return it, nil
}

// progress is the data of the iteration events.
type progress struct {
	ID        string         `json:"id"`
	NodeID    string         `json:"node_id"`
	NodeType  string         `json:"node_type"`
	Title     string         `json:"title"`
	Index     *int           `json:"index,omitempty"`
	CreatedAt int64          `json:"created_at"`
	Extras    map[string]any `json:"extras"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Inputs    map[string]any `json:"inputs,omitempty"`
	Outputs   map[string]any `json:"outputs,omitempty"`
	Status    string         `json:"status,omitempty"`
	// Error is iteration_completed's error: JSON null on success (absent from the other
	// events).
	Error             json.RawMessage `json:"error,omitempty"`
	ElapsedTime       *float64        `json:"elapsed_time,omitempty"`
	TotalTokens       *int            `json:"total_tokens,omitempty"`
	FinishedAt        *int64          `json:"finished_at,omitempty"`
	Steps             *int            `json:"steps,omitempty"`
	ExecutionMetadata map[string]any  `json:"execution_metadata,omitempty"`
}

func (it *iteration) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	started := time.Now()
	n := x.Node
	base := progress{ID: x.ExecutionID, NodeID: n.ID, NodeType: n.Type, Title: n.Title, CreatedAt: started.Unix(), Extras: map[string]any{}}
	raw, _ := x.Pool.Get(it.items)
	var items []any
	switch v := raw.(type) {
	case nil:
	case []any:
		items = v
	default:
		return workflow.Result{}, workflow.Errorf("InvalidIteratorValueError",
			"invalid iterator value: %v is a %s, please provide a list", it.items, value.TypeOf(v))
	}
	inputs := map[string]any{"iterator_selector": raw}
	if len(items) == 0 {
		// As Dify does, an empty (or absent) list ends the node at once with an empty output,
		// without iteration events.
		return workflow.Result{Inputs: inputs, Outputs: map[string]any{"output": []any{}}}, nil
	}
	ev := base
	ev.Metadata, ev.Inputs = map[string]any{"iterator_length": len(items)}, inputs
	x.Emit(run.Event{Kind: run.EventIterationStarted, Data: ev})

	outputs := make([]any, len(items))
	failed := make([]error, len(items))
	var (
		mu        sync.Mutex
		usage     = models.EmptyUsage()
		resources []store.RetrieverResource
	)
	// rctx is the rounds' context: with error_handle_mode terminated, the first failed round
	// cancels it, and so the rounds still running, with its error as the cause.
	rctx, stopRounds := context.WithCancelCause(ctx)
	defer stopRounds(nil)
	round := func(i int) {
		next := base
		next.Index, next.CreatedAt = &i, time.Now().Unix()
		x.Emit(run.Event{Kind: run.EventIterationNext, Data: next})
		pool := x.Pool.Child()
		pool.Set(n.ID, "item", items[i])
		pool.Set(n.ID, "index", int64(i))
		rep := x.RunBody(rctx, it.start, pool, i)
		mu.Lock()
		defer mu.Unlock()
		usage = models.AddUsage(usage, rep.Usage)
		resources = append(resources, rep.Resources...)
		if rep.Err != nil {
			failed[i] = rep.Err
			if it.onError == iterTerminated {
				stopRounds(fmt.Errorf("round %d: %w", i, rep.Err))
			}
			return
		}
		outputs[i], _ = pool.Get(it.output)
	}
	if it.parallel <= 1 {
		for i := range items {
			if round(i); rctx.Err() != nil {
				break
			}
		}
	} else {
		sem := make(chan struct{}, it.parallel)
		var wg sync.WaitGroup
		for i := range items {
			sem <- struct{}{}
			if rctx.Err() != nil {
				<-sem
				break
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				round(i)
			}()
		}
		wg.Wait()
	}
	res := workflow.Result{Inputs: inputs, Usage: &usage, Resources: resources}
	var firstErr error
	out := make([]any, 0, len(items))
	for i := range items {
		if failed[i] != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("round %d: %w", i, failed[i])
			}
			switch it.onError {
			case iterContinue:
				out = append(out, nil)
			case iterRemoveFailed:
			}
			continue
		}
		out = append(out, outputs[i])
	}
	if it.flatten {
		out = flatten(out)
	}
	done := time.Now()
	ev = base
	elapsed, tokens, at := done.Sub(started).Seconds(), usage.TotalTokens, done.Unix()
	rounds := len(items)
	ev.Inputs, ev.ElapsedTime, ev.TotalTokens, ev.FinishedAt, ev.Steps = inputs, &elapsed, &tokens, &at, &rounds
	ev.ExecutionMetadata = map[string]any{"total_tokens": tokens}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if c := context.Cause(rctx); c != nil {
		// The round that failed first, not a round it cancelled.
		firstErr = c
	}
	if firstErr != nil && it.onError == iterTerminated {
		msg, _ := json.Marshal(firstErr.Error())
		ev.Status, ev.Error = "failed", msg
		x.Emit(run.Event{Kind: run.EventIterationCompleted, Data: ev})
		return res, workflow.Errorf("IterationNodeError", "%v", firstErr)
	}
	res.Outputs = map[string]any{"output": out}
	ev.Status, ev.Outputs, ev.Error = "succeeded", res.Outputs, json.RawMessage("null")
	x.Emit(run.Event{Kind: run.EventIterationCompleted, Data: ev})
	return res, nil
}

// flatten flattens one level when every item is an array.
func flatten(out []any) []any {
	if len(out) == 0 {
		return out
	}
	var flat []any
	for _, v := range out {
		arr, ok := v.([]any)
		if !ok {
			return out
		}
		flat = append(flat, arr...)
	}
	if flat == nil {
		flat = []any{}
	}
	return flat
}

// iterationStart is the entry of an iteration's body; it does nothing.
func newIterationStart(*workflow.Node) (workflow.NodeRunner, error) {
	return workflow.NodeFunc(func(context.Context, *workflow.Exec) (workflow.Result, error) {
		return workflow.Result{Outputs: map[string]any{}}, nil
	}), nil
}
