package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// child is a node inside the container parent, as the editor exports it.
func child(parent, id, typ string, data map[string]any) any {
	n := node(id, typ, data).(map[string]any)
	n["parentId"] = parent
	n["data"].(map[string]any)["isInIteration"] = true
	return n
}

// decoded is an event with its data as JSON.
type decoded struct {
	kind run.EventKind
	data map[string]any
}

func (s *sink) decoded(t *testing.T) []decoded {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]decoded, 0, len(s.events))
	for _, ev := range s.events {
		d := decoded{kind: ev.Kind}
		if ev.Kind.Nested() {
			raw, err := json.Marshal(ev.Data)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &d.data); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, d)
	}
	return out
}

// runWith executes g with the registry reg on a pool holding the start node's list.
func runWith(t *testing.T, ctx context.Context, g *workflow.Graph, reg workflow.Registry, pool *workflow.Pool) (workflow.Report, *sink) {
	t.Helper()
	if pool == nil {
		pool = workflow.NewPool()
	}
	e := workflow.NewEngine(workflow.Options{Nodes: reg})
	s := &sink{}
	rep := e.Execute(ctx, workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: s, Env: &nodes.Env{}})
	return rep, s
}

// bodyGraph is start → it (iterating [start, list], body: is → tt → [extra]) → a.
func bodyGraph(t *testing.T, data map[string]any, body []any, bodyEdges []any) *workflow.Graph {
	t.Helper()
	d := map[string]any{"iterator_selector": []any{"start", "list"}, "output_selector": []any{"tt", "output"},
		"start_node_id": "is", "output_type": "array[string]"}
	for k, v := range data {
		d[k] = v
	}
	nodes := append([]any{
		node("start", "start", nil),
		node("it", "iteration", d),
		child("it", "is", "iteration-start", nil),
		node("a", "answer", map[string]any{"answer": "{{#it.output#}}"}),
	}, body...)
	edges := append([]any{edge("start", "source", "it"), edge("it", "source", "a")}, bodyEdges...)
	return graph(t, nodes, edges)
}

func listPool(items ...any) *workflow.Pool {
	p := workflow.NewPool()
	p.Set("start", "list", items)
	return p
}

func TestIterationRunsTheBodyPerItemInOrder(t *testing.T) {
	t.Parallel()
	g := bodyGraph(t, nil, []any{
		child("it", "tt", "template-transform", map[string]any{"template": "{{ i }}={{ x | upper }}",
			"variables": []any{
				map[string]any{"variable": "x", "value_selector": []any{"it", "item"}},
				map[string]any{"variable": "i", "value_selector": []any{"it", "index"}},
			}}),
	}, []any{edge("is", "source", "tt")})
	rep, s := runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), listPool("a", "b", "c"))
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	if got := s.answer(); got != "- 0=A\n- 1=B\n- 2=C" {
		t.Fatalf("answer = %q", got)
	}
	// start, it, 3 × tt, a: the body's iteration-start runs without node events of its own, as
	// in Dify, and is no step.
	if rep.Steps != 6 {
		t.Fatalf("steps = %d", rep.Steps)
	}
	for _, d := range s.decoded(t) {
		if d.data["node_type"] == "iteration-start" {
			t.Fatalf("an event of the iteration-start node: %s %v", d.kind, d.data)
		}
	}
	var kinds []string
	var nextIndex []any
	for _, d := range s.decoded(t) {
		switch d.kind {
		case run.EventNodeStarted, run.EventNodeFinished:
			kinds = append(kinds, d.kind.String()+":"+d.data["node_id"].(string))
			if id := d.data["node_id"]; id == "tt" || id == "is" {
				if d.data["iteration_id"] != "it" || d.data["loop_id"] != nil {
					t.Fatalf("inner node event without its iteration: %v", d.data)
				}
				if d.kind == run.EventNodeFinished {
					meta := d.data["execution_metadata"].(map[string]any)
					if meta["iteration_id"] != "it" || meta["iteration_index"] == nil {
						t.Fatalf("execution_metadata = %v", meta)
					}
				}
			} else if d.data["iteration_id"] != nil {
				t.Fatalf("outer node event with an iteration: %v", d.data)
			}
		case run.EventIterationStarted:
			kinds = append(kinds, "iteration_started")
			if d.data["id"] == "" || d.data["node_id"] != "it" || d.data["metadata"].(map[string]any)["iterator_length"] != 3.0 {
				t.Fatalf("iteration_started = %v", d.data)
			}
		case run.EventIterationNext:
			kinds = append(kinds, "iteration_next")
			nextIndex = append(nextIndex, d.data["index"])
		case run.EventIterationCompleted:
			kinds = append(kinds, "iteration_completed")
			out := d.data["outputs"].(map[string]any)["output"]
			if !reflect.DeepEqual(out, []any{"0=A", "1=B", "2=C"}) || d.data["status"] != "succeeded" || d.data["steps"] != 3.0 {
				t.Fatalf("iteration_completed = %v", d.data)
			}
		}
	}
	want := "node_started:start,node_finished:start,node_started:it,iteration_started," +
		"iteration_next,node_started:tt,node_finished:tt," +
		"iteration_next,node_started:tt,node_finished:tt," +
		"iteration_next,node_started:tt,node_finished:tt," +
		"iteration_completed,node_finished:it,node_started:a,node_finished:a"
	if got := strings.Join(kinds, ","); got != want {
		t.Fatalf("events =\n%s\nwant\n%s", got, want)
	}
	if !reflect.DeepEqual(nextIndex, []any{0.0, 1.0, 2.0}) {
		t.Fatalf("iteration_next indexes = %v", nextIndex)
	}
}

// gated adds a node type that, in item i, waits until item i+1 started (the last item does not
// wait), then outputs its item: the items finish in reverse order, and only if they run at
// the same time.
func gated(f *fixtures, reg workflow.Registry, last int) {
	reg["gate"] = func(n *workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
			idx, _ := x.Pool.Get([]string{"it", "index"})
			i := int(idx.(int64))
			close(f.barrier(fmt.Sprint("started", i)))
			if i < last {
				select {
				case <-f.barrier(fmt.Sprint("finished", i+1)):
				case <-ctx.Done():
					return workflow.Result{}, ctx.Err()
				}
			}
			item, _ := x.Pool.Get([]string{"it", "item"})
			defer close(f.barrier(fmt.Sprint("finished", i)))
			return workflow.Result{Outputs: map[string]any{"out": item}}, nil
		}), nil
	}
}

func TestParallelIterationOverObjectsKeepsItemOrder(t *testing.T) {
	t.Parallel()
	f := &fixtures{}
	reg := nodes.Registry(nodes.Deps{})
	gated(f, reg, 3)
	g := bodyGraph(t, map[string]any{"is_parallel": true, "parallel_nums": 4, "output_selector": []any{"agg", "output"}},
		[]any{
			child("it", "g", "gate", nil),
			child("it", "agg", "variable-aggregator", map[string]any{"variables": []any{[]any{"g", "out"}}}),
		}, []any{edge("is", "source", "g"), edge("g", "source", "agg")})
	items := []any{}
	for i := range 4 {
		items = append(items, value.ObjectOf("n", int64(i), "name", fmt.Sprint("item", i)))
	}
	rep, s := runWith(t, context.Background(), g, reg, listPool(items...))
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	for _, d := range s.decoded(t) {
		if d.kind == run.EventIterationCompleted {
			out := d.data["outputs"].(map[string]any)["output"].([]any)
			if len(out) != 4 {
				t.Fatalf("output = %v", out)
			}
			for i, o := range out {
				if o.(map[string]any)["name"] != fmt.Sprint("item", i) {
					t.Fatalf("output out of order: %v", out)
				}
			}
			return
		}
	}
	t.Fatal("no iteration_completed")
}

// failing adds a node type that fails on the item "bad" and outputs the item otherwise.
func failing(reg workflow.Registry) {
	reg["failbad"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
			item, _ := x.Pool.Get([]string{"it", "item"})
			if item == "bad" {
				return workflow.Result{}, workflow.Errorf("BadItemError", "item %v is bad", item)
			}
			return workflow.Result{Outputs: map[string]any{"output": item}}, nil
		}), nil
	}
}

func TestIterationErrorModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode     string
		parallel bool
		status   string
		output   []any
	}{
		{"continue-on-error", false, workflow.StatusSucceeded, []any{"a", nil, "c"}},
		{"remove-abnormal-output", false, workflow.StatusSucceeded, []any{"a", "c"}},
		{"continue-on-error", true, workflow.StatusSucceeded, []any{"a", nil, "c"}},
		{"remove-abnormal-output", true, workflow.StatusSucceeded, []any{"a", "c"}},
		{"terminated", false, workflow.StatusFailed, nil},
		{"terminated", true, workflow.StatusFailed, nil},
	} {
		t.Run(fmt.Sprint(tc.mode, tc.parallel), func(t *testing.T) {
			t.Parallel()
			reg := nodes.Registry(nodes.Deps{})
			failing(reg)
			g := bodyGraph(t, map[string]any{"error_handle_mode": tc.mode, "is_parallel": tc.parallel, "parallel_nums": 2},
				[]any{child("it", "tt", "failbad", nil)}, []any{edge("is", "source", "tt")})
			rep, s := runWith(t, context.Background(), g, reg, listPool("a", "bad", "c"))
			if rep.Status != tc.status {
				t.Fatalf("report = %+v", rep)
			}
			status, _ := s.nodes(t)
			if tc.status == workflow.StatusFailed {
				if status["it"] != workflow.NodeFailed || !strings.Contains(rep.Err.Error(), "item bad is bad") {
					t.Fatalf("statuses = %v, err = %v", status, rep.Err)
				}
				return
			}
			var got any
			for _, d := range s.decoded(t) {
				if d.kind == run.EventNodeFinished && d.data["node_id"] == "it" {
					got = d.data["outputs"].(map[string]any)["output"]
				}
			}
			if !reflect.DeepEqual(got, tc.output) {
				t.Fatalf("output = %#v, want %#v", got, tc.output)
			}
		})
	}
}

func TestIterationOverNothingAndNotAList(t *testing.T) {
	t.Parallel()
	reg := nodes.Registry(nodes.Deps{})
	failing(reg)
	g := bodyGraph(t, nil, []any{child("it", "tt", "failbad", nil)}, []any{edge("is", "source", "tt")})
	rep, s := runWith(t, context.Background(), g, reg, listPool())
	if rep.Status != workflow.StatusSucceeded || s.count(run.EventIterationStarted) != 0 || rep.Steps != 3 {
		t.Fatalf("empty list: report = %+v", rep)
	}
	p := workflow.NewPool()
	p.Set("start", "list", "not a list")
	rep, _ = runWith(t, context.Background(), g, reg, p)
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "please provide a list") {
		t.Fatalf("not a list: report = %+v", rep)
	}
}

func TestStopMidIteration(t *testing.T) {
	t.Parallel()
	f := &fixtures{}
	g := bodyGraph(t, nil, []any{child("it", "tt", "wait", nil)}, []any{edge("is", "source", "tt")})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-f.barrier("waiting")
		cancel(run.ErrStopped)
	}()
	rep, s := runWith(t, ctx, g, f.registry(), listPool("a", "b"))
	if rep.Status != workflow.StatusStopped || !errors.Is(rep.Err, run.ErrStopped) {
		t.Fatalf("report = %+v", rep)
	}
	status, _ := s.nodes(t)
	if status["tt"] != workflow.NodeStopped || status["it"] != workflow.NodeStopped || status["a"] != "" {
		t.Fatalf("statuses = %v", status)
	}
	if n := s.count(run.EventIterationNext); n != 1 {
		t.Fatalf("iteration_next sent %d times after a stop in the first item", n)
	}
}

// loopGraph is start → lp (counter from 0, body: ls → [body]) → a.
func loopGraph(t *testing.T, data map[string]any, body []any, bodyEdges []any) *workflow.Graph {
	t.Helper()
	d := map[string]any{"loop_count": 10, "start_node_id": "ls", "logical_operator": "and",
		"loop_variables": []any{
			map[string]any{"label": "counter", "var_type": "number", "value_type": "constant", "value": "0"},
			map[string]any{"label": "seen", "var_type": "array[string]", "value_type": "constant", "value": "[]"},
		}}
	for k, v := range data {
		d[k] = v
	}
	nodes := append([]any{
		node("start", "start", nil),
		node("lp", "loop", d),
		child("lp", "ls", "loop-start", nil),
		node("a", "answer", map[string]any{"answer": "{{#lp.counter#}}"}),
	}, body...)
	edges := append([]any{edge("start", "source", "lp"), edge("lp", "source", "a")}, bodyEdges...)
	return graph(t, nodes, edges)
}

// bump is an assigner that adds 1 to the loop's counter and appends the query to seen.
func bump() any {
	n := child("lp", "inc", "assigner", map[string]any{"version": "2", "items": []any{
		map[string]any{"variable_selector": []any{"lp", "counter"}, "operation": "+=", "input_type": "constant", "value": 1},
		map[string]any{"variable_selector": []any{"lp", "seen"}, "operation": "append", "input_type": "variable", "value": []any{"sys", "query"}},
	}}).(map[string]any)
	d := n["data"].(map[string]any)
	delete(d, "isInIteration")
	d["isInLoop"] = true
	return n
}

func loopOutputs(t *testing.T, s *sink) (map[string]any, map[string]any) {
	t.Helper()
	for _, d := range s.decoded(t) {
		if d.kind == run.EventNodeFinished && d.data["node_id"] == "lp" {
			return d.data["outputs"].(map[string]any), d.data["execution_metadata"].(map[string]any)
		}
	}
	t.Fatal("the loop did not finish")
	return nil, nil
}

func queryPool() *workflow.Pool {
	p := workflow.NewPool()
	p.Set(workflow.ScopeSys, workflow.SysQuery, "q")
	return p
}

func TestLoopBreakConditionAndAssigner(t *testing.T) {
	t.Parallel()
	g := loopGraph(t, map[string]any{"break_conditions": []any{
		map[string]any{"variable_selector": []any{"lp", "counter"}, "comparison_operator": "≥", "value": "3", "varType": "number"},
	}}, []any{bump()}, []any{edge("ls", "source", "inc")})
	rep, s := runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), queryPool())
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	out, meta := loopOutputs(t, s)
	if out["counter"] != 3.0 || !reflect.DeepEqual(out["seen"], []any{"q", "q", "q"}) || out["loop_round"] != 3.0 || meta["completed_reason"] != "loop_break" {
		t.Fatalf("outputs = %v, metadata = %v", out, meta)
	}
	// Three rounds: loop_next between them only, with the index of the round that starts and
	// the outputs so far (as Dify's engine sends it).
	if s.answer() != "3" || s.count(run.EventLoopNext) != 2 || s.count(run.EventLoopStarted) != 1 || s.count(run.EventLoopCompleted) != 1 {
		t.Fatalf("answer %q, events %d loop_next", s.answer(), s.count(run.EventLoopNext))
	}
	var nexts []string
	for _, d := range s.decoded(t) {
		switch {
		case d.kind == run.EventLoopNext:
			pre := d.data["pre_loop_output"].(map[string]any)
			nexts = append(nexts, fmt.Sprintf("%v:%v:%v", d.data["index"], pre["loop_round"], pre["counter"]))
		case d.data["node_type"] == "loop-start":
			t.Fatalf("an event of the loop-start node: %s %v", d.kind, d.data)
		}
	}
	if strings.Join(nexts, " ") != "1:1:1 2:2:2" {
		t.Fatalf("loop_next (index:loop_round:counter) %v", nexts)
	}
	for _, d := range s.decoded(t) {
		if d.kind == run.EventNodeFinished && d.data["node_id"] == "inc" {
			meta := d.data["execution_metadata"].(map[string]any)
			if d.data["loop_id"] != "lp" || meta["loop_id"] != "lp" || meta["loop_index"] == nil {
				t.Fatalf("inner node event = %v", d.data)
			}
		}
	}
}

func TestLoopBreaksBeforeTheFirstRound(t *testing.T) {
	t.Parallel()
	g := loopGraph(t, map[string]any{"break_conditions": []any{
		map[string]any{"variable_selector": []any{"lp", "counter"}, "comparison_operator": "=", "value": "0", "varType": "number"},
	}}, []any{bump()}, []any{edge("ls", "source", "inc")})
	rep, s := runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), queryPool())
	out, meta := loopOutputs(t, s)
	if rep.Status != workflow.StatusSucceeded || out["counter"] != 0.0 || meta["completed_reason"] != "loop_break" || s.count(run.EventLoopNext) != 0 {
		t.Fatalf("report = %+v, outputs = %v, metadata %v", rep, out, meta)
	}
}

func TestLoopEndNodeAndLoopCount(t *testing.T) {
	t.Parallel()
	le := child("lp", "end", "loop-end", nil)
	br := child("lp", "br", "if-else", map[string]any{"cases": []any{map[string]any{"case_id": "true", "logical_operator": "and",
		"conditions": []any{map[string]any{"variable_selector": []any{"lp", "counter"}, "comparison_operator": "≥", "value": "2", "varType": "number"}}}}})
	g := loopGraph(t, nil, []any{bump(), br, le},
		[]any{edge("ls", "source", "inc"), edge("inc", "source", "br"), edge("br", "true", "end")})
	rep, s := runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), queryPool())
	out, meta := loopOutputs(t, s)
	if rep.Status != workflow.StatusSucceeded || out["counter"] != 2.0 || meta["completed_reason"] != "loop_break" {
		t.Fatalf("report = %+v, outputs = %v, metadata %v", rep, out, meta)
	}

	// Without a break, the loop runs loop_count rounds.
	g = loopGraph(t, map[string]any{"loop_count": 4}, []any{bump()}, []any{edge("ls", "source", "inc")})
	rep, s = runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), queryPool())
	out, meta = loopOutputs(t, s)
	if rep.Status != workflow.StatusSucceeded || out["counter"] != 4.0 || meta["completed_reason"] != "loop_completed" {
		t.Fatalf("report = %+v, outputs = %v, metadata %v", rep, out, meta)
	}

	// Over the limit, the loop fails.
	g = loopGraph(t, map[string]any{"loop_count": nodes.LoopCountLimit + 1}, []any{bump()}, []any{edge("ls", "source", "inc")})
	rep, _ = runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), queryPool())
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "exceeds the limit") {
		t.Fatalf("report = %+v", rep)
	}
}

func TestAssignerInsideIterationReachesConversationVariables(t *testing.T) {
	t.Parallel()
	g := bodyGraph(t, map[string]any{"output_selector": []any{"it", "item"}}, []any{
		child("it", "tt", "assigner", map[string]any{"version": "2", "items": []any{
			map[string]any{"variable_selector": []any{"conversation", "log"}, "operation": "append", "input_type": "variable", "value": []any{"it", "item"}},
		}}),
	}, []any{edge("is", "source", "tt")})
	p := listPool("x", "y")
	p.Set(workflow.ScopeConversation, "log", []any{})
	rep, _ := runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), p)
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	if got, _ := p.Get([]string{"conversation", "log"}); !reflect.DeepEqual(got, []any{"x", "y"}) {
		t.Fatalf("conversation.log = %v", got)
	}
	if p.Has("tt") {
		t.Fatal("an inner node's outputs leaked into the run's pool")
	}
}

func TestNestedIterationFlattensItsOutput(t *testing.T) {
	t.Parallel()
	for _, flatten := range []bool{true, false} {
		g := graph(t, []any{
			node("start", "start", nil),
			node("it", "iteration", map[string]any{"iterator_selector": []any{"start", "list"}, "output_selector": []any{"inner", "output"},
				"start_node_id": "is", "flatten_output": flatten}),
			child("it", "is", "iteration-start", nil),
			child("it", "inner", "iteration", map[string]any{"iterator_selector": []any{"it", "item"}, "output_selector": []any{"tt", "output"},
				"start_node_id": "is2", "is_parallel": true, "parallel_nums": 3}),
			child("inner", "is2", "iteration-start", nil),
			child("inner", "tt", "template-transform", map[string]any{"template": "{{ outer }}.{{ i }}:{{ x | upper }}",
				"variables": []any{
					map[string]any{"variable": "x", "value_selector": []any{"inner", "item"}},
					map[string]any{"variable": "i", "value_selector": []any{"inner", "index"}},
					map[string]any{"variable": "outer", "value_selector": []any{"it", "index"}},
				}}),
		}, []any{edge("start", "source", "it"), edge("is", "source", "inner"), edge("is2", "source", "tt")})
		p := listPool([]any{"a", "b"}, []any{"c"})
		rep, s := runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), p)
		if rep.Status != workflow.StatusSucceeded {
			t.Fatalf("report = %+v", rep)
		}
		got, _ := p.Get([]string{"it", "output"})
		want := any([]any{"0.0:A", "0.1:B", "1.0:C"})
		if !flatten {
			want = []any{[]any{"0.0:A", "0.1:B"}, []any{"1.0:C"}}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("flatten %v: output = %#v", flatten, got)
		}
		for _, d := range s.decoded(t) {
			if d.kind == run.EventNodeStarted && d.data["node_id"] == "tt" && d.data["iteration_id"] != "inner" {
				t.Fatalf("innermost node event = %v", d.data)
			}
		}
	}
}

func TestStopMidLoopAndAFailingRound(t *testing.T) {
	t.Parallel()
	f := &fixtures{}
	g := loopGraph(t, nil, []any{child("lp", "w", "wait", nil)}, []any{edge("ls", "source", "w")})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-f.barrier("waiting")
		cancel(run.ErrStopped)
	}()
	rep, s := runWith(t, ctx, g, f.registry(), queryPool())
	status, _ := s.nodes(t)
	if rep.Status != workflow.StatusStopped || status["w"] != workflow.NodeStopped || status["lp"] != workflow.NodeStopped || s.count(run.EventLoopNext) != 0 {
		t.Fatalf("report = %+v, statuses = %v", rep, status)
	}

	reg := nodes.Registry(nodes.Deps{})
	reg["boom"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(context.Context, *workflow.Exec) (workflow.Result, error) {
			return workflow.Result{}, workflow.Errorf("BoomError", "boom")
		}), nil
	}
	g = loopGraph(t, nil, []any{bump(), child("lp", "b", "boom", nil)}, []any{edge("ls", "source", "inc"), edge("inc", "source", "b")})
	rep, s = runWith(t, context.Background(), g, reg, queryPool())
	out, meta := loopOutputs(t, s)
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "boom") || out["counter"] != 1.0 || meta["completed_reason"] != "error" {
		t.Fatalf("report = %+v, outputs %v, metadata %v", rep, out, meta)
	}
}

// In a parallel iteration with error mode terminated, the first failing item cancels the items
// still running.
func TestParallelIterationTerminatedCancelsTheOthers(t *testing.T) {
	t.Parallel()
	f := &fixtures{}
	reg := f.registry()
	reg["failafter"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
			if item, _ := x.Pool.Get([]string{"it", "item"}); item != "bad" {
				close(f.barrier("waiting"))
				<-ctx.Done()
				return workflow.Result{}, ctx.Err()
			}
			<-f.barrier("waiting")
			return workflow.Result{}, workflow.Errorf("BadItemError", "item bad is bad")
		}), nil
	}
	g := bodyGraph(t, map[string]any{"is_parallel": true, "parallel_nums": 2}, []any{child("it", "tt", "failafter", nil)},
		[]any{edge("is", "source", "tt")})
	rep, s := runWith(t, context.Background(), g, reg, listPool("slow", "bad"))
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "item bad is bad") {
		t.Fatalf("report = %+v", rep)
	}
	stopped := 0
	for _, d := range s.decoded(t) {
		if d.kind == run.EventNodeFinished && d.data["node_id"] == "tt" && d.data["status"] == workflow.NodeStopped {
			stopped++
		}
	}
	if stopped != 1 {
		t.Fatalf("%d body nodes stopped", stopped)
	}
}

// A body node whose failure an error strategy handles makes the run partial-succeeded.
func TestExceptionInsideABodyMakesTheRunPartial(t *testing.T) {
	t.Parallel()
	reg := nodes.Registry(nodes.Deps{})
	failing(reg)
	g := bodyGraph(t, nil, []any{child("it", "tt", "failbad", map[string]any{"error_strategy": "default-value",
		"default_value": []any{map[string]any{"key": "output", "type": "string", "value": "fallback"}}})},
		[]any{edge("is", "source", "tt")})
	p := listPool("a", "bad")
	rep, _ := runWith(t, context.Background(), g, reg, p)
	if rep.Status != workflow.StatusPartialSucceeded || rep.Exceptions != 1 {
		t.Fatalf("report = %+v", rep)
	}
	if got, _ := p.Get([]string{"it", "output"}); !reflect.DeepEqual(got, []any{"a", "fallback"}) {
		t.Fatalf("output = %#v", got)
	}
}

// A container is not bounded by the node timeout T: its body's nodes are. Round 0's node
// notes its deadline d and returns at d-T/2; round 1's node (whose own deadline is then at
// least d+T/2) waits until d+T/4, when an iteration bounded by T would have run out.
func TestContainerIsNotBoundedByTheNodeTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	reg := nodes.Registry(nodes.Deps{})
	var first time.Time
	reg["pastdeadline"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
			idx, _ := x.Pool.Get([]string{"it", "index"})
			d, ok := ctx.Deadline()
			if !ok {
				return workflow.Result{}, errors.New("a body node without a deadline")
			}
			until := d.Add(-timeout / 2)
			if idx.(int64) == 0 {
				first = d
			} else {
				until = first.Add(timeout / 4)
			}
			tm := time.NewTimer(time.Until(until))
			defer tm.Stop()
			select {
			case <-ctx.Done():
				return workflow.Result{}, context.Cause(ctx)
			case <-tm.C:
			}
			item, _ := x.Pool.Get([]string{"it", "item"})
			return workflow.Result{Outputs: map[string]any{"output": item}}, nil
		}), nil
	}
	g := bodyGraph(t, nil, []any{child("it", "tt", "pastdeadline", nil)}, []any{edge("is", "source", "tt")})
	e := workflow.NewEngine(workflow.Options{Nodes: reg, NodeTimeout: timeout})
	s := &sink{}
	p := listPool("a", "b")
	rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: p, RunID: "r", Out: s, Env: &nodes.Env{}})
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	if got, _ := p.Get([]string{"it", "output"}); !reflect.DeepEqual(got, []any{"a", "b"}) {
		t.Fatalf("output = %#v", got)
	}
}

// TestListOperatorOutputsInDifyOrder pins the order of a list-operator's outputs in
// node_finished: result, first_record, last_record, as Dify sends them, not sorted.
func TestListOperatorOutputsInDifyOrder(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", nil),
		node("lo", "list-operator", map[string]any{"variable": []any{"start", "list"}}),
		node("a", "answer", map[string]any{"answer": "{{#lo.first_record#}}"}),
	}, []any{edge("start", "source", "lo"), edge("lo", "source", "a")})
	rep, s := runWith(t, context.Background(), g, nodes.Registry(nodes.Deps{}), listPool("x", "y"))
	if rep.Status != workflow.StatusSucceeded || s.answer() != "x" {
		t.Fatalf("report = %+v, answer %q", rep, s.answer())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.events {
		if ev.Kind != run.EventNodeFinished {
			continue
		}
		raw, err := json.Marshal(ev.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"node_id":"lo"`)) {
			continue
		}
		if want := `"outputs":{"result":["x","y"],"first_record":"x","last_record":"y"}`; !bytes.Contains(raw, []byte(want)) {
			t.Fatalf("node_finished %s\nwant %s", raw, want)
		}
		return
	}
	t.Fatal("no node_finished of the list operator")
}
