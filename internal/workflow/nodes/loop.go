package nodes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/condition"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// loop runs its body (from its loop-start node) up to loop_count times over one pool of its own,
// where its loop variables live at [loop, label] (initialised from constants or selectors, and
// usually updated by an assigner in the body). Its break conditions are checked before the first
// round and after each; a loop-end node reached in the body also ends the loop after that round.
// Its outputs are the loop variables and loop_round. It emits loop_started, loop_next between
// rounds and loop_completed around its body's node events.
type loop struct {
	start   string
	count   int
	breaks  []condition.Condition
	logical string
	vars    []loopVar
}

type loopVar struct {
	label    string
	selector []string
	constant any
}

// LoopCountLimit caps a loop's loop_count, as Dify's default LOOP_COUNT_LIMIT does: a loop
// configured for more rounds fails when it runs.
const LoopCountLimit = 100

// loopBreak is where a loop-end node tells its loop to stop: [loop, loopBreak].
const loopBreak = "__loop_break"

func newLoop(n *workflow.Node) (workflow.NodeRunner, error) {
	l := &loop{start: str(n.Data["start_node_id"]), count: intOf(n.Data["loop_count"]), logical: str(n.Data["logical_operator"])}
	if l.start == "" {
		return nil, configError("the loop has no start node")
	}
	if l.count < 1 {
		return nil, configError("loop_count must be at least 1")
	}
	if err := decodeInto(n.Data["break_conditions"], &l.breaks); err != nil {
		return nil, configError("break_conditions: %v", err)
	}
	for _, it := range list(n.Data["loop_variables"]) {
		m := mapping(it)
		v := loopVar{label: str(m["label"])}
		if str(m["value_type"]) == "variable" {
			v.selector = workflow.Selector(m["value"])
		} else {
			v.constant = typedConstant(str(m["var_type"]), m["value"])
		}
		l.vars = append(l.vars, v)
	}
	return l, nil
}

// typedConstant reads a loop variable's constant as its declared type (numbers and booleans are
// often written as text).
func typedConstant(typ string, v any) any {
	if s, ok := v.(string); ok && typ != "string" && s != "" {
		if d, err := value.Decode([]byte(s)); err == nil {
			return d
		}
	}
	return fromGo(v)
}

func (l *loop) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	started := time.Now()
	n := x.Node
	pool := x.Pool.Child()
	// As Dify's: the configured round count and the loop variables' initial values.
	inputs := map[string]any{"loop_count": l.count}
	for _, v := range l.vars {
		val := v.constant
		if v.selector != nil {
			val, _ = x.Pool.Get(v.selector)
		}
		pool.Set(n.ID, v.label, value.Clone(val))
		inputs[v.label] = val
	}
	base := map[string]any{"id": x.ExecutionID, "node_id": n.ID, "node_type": n.Type, "title": n.Title,
		"created_at": started.Unix(), "extras": map[string]any{}}
	with := func(kv ...any) map[string]any {
		m := make(map[string]any, len(base)+len(kv)/2)
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	if l.count > LoopCountLimit {
		return workflow.Result{Inputs: inputs}, workflow.Errorf("LoopNodeError",
			"loop_count %d exceeds the limit of %d rounds", l.count, LoopCountLimit)
	}
	x.Emit(run.Event{Kind: run.EventLoopStarted, Data: with("inputs", inputs, "metadata", map[string]any{"loop_length": l.count})})
	usage, reason := models.EmptyUsage(), "loop_completed"
	var failure error
	var resources []store.RetrieverResource
	stop := func() (bool, error) {
		if len(l.breaks) == 0 {
			return false, nil
		}
		r, err := condition.Evaluate(l.breaks, l.logical, pool.Get)
		return r.Final, err
	}
	done, err := stop()
	if err != nil {
		failure = err
	} else if done {
		reason = "loop_break"
	}
	rounds := 0
	for i := 0; failure == nil && !done && i < l.count; i++ {
		if i > 0 {
			// As Dify's engine: loop_next comes between rounds, once the previous round is
			// done and the loop goes on, with the index of the round that starts and the loop's
			// outputs so far; none before the first round, none after the last.
			x.Emit(run.Event{Kind: run.EventLoopNext, Data: with("index", i, "created_at", time.Now().Unix(), "pre_loop_output", outputsOf(pool, n.ID, l.vars, rounds))})
		}
		rounds++
		rep := x.RunBody(ctx, l.start, pool, i)
		usage = models.AddUsage(usage, rep.Usage)
		resources = append(resources, rep.Resources...)
		if rep.Err != nil {
			failure = rep.Err
			break
		}
		if b, _ := pool.Get([]string{n.ID, loopBreak}); b == true {
			done, reason = true, "loop_break"
			break
		}
		if done, err = stop(); err != nil {
			failure = err
		} else if done {
			reason = "loop_break"
		}
	}
	// steps is, as in Dify, the configured round count, or 0 when the loop broke before its
	// first round.
	steps := l.count
	if rounds == 0 && reason == "loop_break" {
		steps = 0
	}
	outputs := outputsOf(pool, n.ID, l.vars, rounds)
	meta := map[string]any{"total_tokens": usage.TotalTokens, "completed_reason": reason}
	res := workflow.Result{Inputs: inputs, Outputs: outputs, Usage: &usage, Metadata: meta, Resources: resources}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	fin := time.Now()
	status, errText := "succeeded", any(nil)
	if failure != nil {
		meta["completed_reason"] = "error"
		status, errText = "failed", failure.Error()
	}
	x.Emit(run.Event{Kind: run.EventLoopCompleted, Data: with("inputs", inputs, "outputs", outputs, "status", status, "error", errText,
		"elapsed_time", fin.Sub(started).Seconds(), "total_tokens", usage.TotalTokens, "finished_at", fin.Unix(), "steps", steps,
		"execution_metadata", meta)})
	if failure != nil {
		var invalid error = failure
		if errors.Is(failure, condition.ErrInvalid) {
			invalid = fmt.Errorf("break conditions: %w", failure)
		}
		return res, workflow.Errorf("LoopNodeError", "%v", invalid)
	}
	return res, nil
}

// outputsOf are the loop variables' current values and, once a round has run, loop_round: the
// number of rounds run, as Dify's loop outputs have it.
func outputsOf(pool *workflow.Pool, id string, vars []loopVar, rounds int) map[string]any {
	out := make(map[string]any, len(vars)+1)
	for _, v := range vars {
		out[v.label], _ = pool.Get([]string{id, v.label})
	}
	if rounds > 0 {
		out["loop_round"] = int64(rounds)
	}
	return out
}

// loopStart is the entry of a loop's body; it does nothing.
func newLoopStart(*workflow.Node) (workflow.NodeRunner, error) { return newIterationStart(nil) }

// loopEnd ends its loop after the current round.
func newLoopEnd(n *workflow.Node) (workflow.NodeRunner, error) {
	parent := n.ParentID
	return workflow.NodeFunc(func(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
		if parent != "" {
			x.Pool.Set(parent, loopBreak, true)
		}
		return workflow.Result{Outputs: map[string]any{}}, nil
	}), nil
}
