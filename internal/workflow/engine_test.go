package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// sink records a run's events.
type sink struct {
	mu     sync.Mutex
	events []run.Event
}

func (s *sink) Emit(ev run.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

// answer is the concatenated message text.
func (s *sink) answer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, ev := range s.events {
		if ev.Kind == run.EventMessage {
			b.WriteString(ev.Answer)
		}
	}
	return b.String()
}

// finished returns node id → status of node_finished events, and the node ids that started, in
// order.
func (s *sink) nodes(t *testing.T) (map[string]string, []string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	status := map[string]string{}
	var started []string
	for _, ev := range s.events {
		raw, _ := json.Marshal(ev.Data)
		var d struct {
			NodeID string `json:"node_id"`
			Status string `json:"status"`
		}
		_ = json.Unmarshal(raw, &d)
		switch ev.Kind {
		case run.EventNodeStarted:
			started = append(started, d.NodeID)
		case run.EventNodeFinished:
			status[d.NodeID] = d.Status
		}
	}
	return status, started
}

func (s *sink) count(k run.EventKind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ev := range s.events {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// node and edge build graph mappings as a DSL file has them.
func node(id, typ string, data map[string]any) any {
	if data == nil {
		data = map[string]any{}
	}
	data["type"], data["title"] = typ, strings.ToUpper(id)
	return map[string]any{"id": id, "type": "custom", "data": data}
}

func edge(src, handle, dst string) any {
	return map[string]any{"id": src + "-" + dst, "source": src, "sourceHandle": handle, "target": dst}
}

func graph(t *testing.T, nodes []any, edges []any) *workflow.Graph {
	t.Helper()
	g, err := workflow.Parse(map[string]any{"nodes": nodes, "edges": edges})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fixtures are test node types beside the real ones: a branch that takes data.pick, a node that
// fails its first data.failures attempts, and a barrier that waits for its peer to start.
type fixtures struct {
	attempts  atomic.Int64
	barrierMu sync.Mutex
	barriers  map[string]chan struct{}
}

func (f *fixtures) registry() workflow.Registry {
	r := nodes.Registry(nodes.Deps{})
	r["pick"] = func(n *workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(context.Context, *workflow.Exec) (workflow.Result, error) {
			return workflow.Result{Handle: n.Data["pick"].(string), Outputs: map[string]any{}}, nil
		}), nil
	}
	r["flaky"] = func(n *workflow.Node) (workflow.NodeRunner, error) {
		failures := int64(n.Data["failures"].(int))
		return workflow.NodeFunc(func(context.Context, *workflow.Exec) (workflow.Result, error) {
			if f.attempts.Add(1) <= failures {
				return workflow.Result{}, workflow.Errorf("FlakyError", "attempt %d failed", f.attempts.Load())
			}
			return workflow.Result{Outputs: map[string]any{"out": "ok"}}, nil
		}), nil
	}
	r["barrier"] = func(n *workflow.Node) (workflow.NodeRunner, error) {
		self, peer := n.ID, n.Data["peer"].(string)
		return workflow.NodeFunc(func(ctx context.Context, _ *workflow.Exec) (workflow.Result, error) {
			close(f.barrier(self))
			select {
			case <-f.barrier(peer):
				return workflow.Result{Outputs: map[string]any{"out": self}}, nil
			case <-ctx.Done():
				return workflow.Result{}, ctx.Err()
			}
		}), nil
	}
	r["wait"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(ctx context.Context, _ *workflow.Exec) (workflow.Result, error) {
			close(f.barrier("waiting"))
			<-ctx.Done()
			return workflow.Result{}, ctx.Err()
		}), nil
	}
	return r
}

func (f *fixtures) barrier(id string) chan struct{} {
	f.barrierMu.Lock()
	defer f.barrierMu.Unlock()
	if f.barriers == nil {
		f.barriers = map[string]chan struct{}{}
	}
	if f.barriers[id] == nil {
		f.barriers[id] = make(chan struct{})
	}
	return f.barriers[id]
}

func execute(t *testing.T, ctx context.Context, g *workflow.Graph, f *fixtures, pool *workflow.Pool) (workflow.Report, *sink) {
	t.Helper()
	if f == nil {
		f = &fixtures{}
	}
	if pool == nil {
		pool = workflow.NewPool()
	}
	pool.Set(workflow.ScopeSys, workflow.SysQuery, "hello")
	e := workflow.NewEngine(workflow.Options{Nodes: f.registry()})
	s := &sink{}
	rep := e.Execute(ctx, workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: s, Env: &nodes.Env{Inputs: map[string]any{"name": "Ada"}}})
	return rep, s
}

func TestBranchSkipsTheOtherArmAndJoinsOnce(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", map[string]any{"variables": []any{map[string]any{"variable": "name"}}}),
		node("br", "pick", map[string]any{"pick": "yes"}),
		node("a", "answer", map[string]any{"answer": "Hi {{#start.name#}}. "}),
		node("b", "answer", map[string]any{"answer": "never"}),
		node("b2", "answer", map[string]any{"answer": "never either"}),
		node("join", "variable-aggregator", map[string]any{"variables": []any{[]any{"a", "answer"}, []any{"b", "answer"}}}),
		node("end", "answer", map[string]any{"answer": "got {{#join.output#}}"}),
	}, []any{
		edge("start", "source", "br"), edge("br", "yes", "a"), edge("br", "no", "b"), edge("b", "source", "b2"),
		edge("a", "source", "join"), edge("b2", "source", "join"), edge("join", "source", "end"),
	})
	rep, s := execute(t, context.Background(), g, nil, nil)
	if rep.Status != workflow.StatusSucceeded || rep.Err != nil {
		t.Fatalf("report = %+v", rep)
	}
	status, started := s.nodes(t)
	if got := strings.Join(started, ","); got != "start,br,a,join,end" {
		t.Fatalf("started = %s", got)
	}
	if status["b"] != "" || status["b2"] != "" {
		t.Fatalf("skipped nodes ran: %v", status)
	}
	if got := s.answer(); got != "Hi Ada. got Hi Ada. " {
		t.Fatalf("answer = %q", got)
	}
	if rep.Steps != 5 {
		t.Fatalf("steps = %d", rep.Steps)
	}
}

func TestParallelBranchesRunConcurrently(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", nil),
		node("p1", "barrier", map[string]any{"peer": "p2"}),
		node("p2", "barrier", map[string]any{"peer": "p1"}),
		node("join", "answer", map[string]any{"answer": "{{#p1.out#}}+{{#p2.out#}}"}),
	}, []any{edge("start", "source", "p1"), edge("start", "source", "p2"), edge("p1", "source", "join"), edge("p2", "source", "join")})
	// Each barrier waits for the other to start: run one after the other, they would wait
	// until the deadline and fail.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, s := execute(t, ctx, g, nil, nil)
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	if got := s.answer(); got != "p1+p2" {
		t.Fatalf("answer = %q", got)
	}
	if _, started := s.nodes(t); started[len(started)-1] != "join" {
		t.Fatalf("join ran before both arms: %v", started)
	}
}

func TestStopEndsTheRunStopped(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{node("start", "start", nil), node("w", "wait", nil), node("after", "answer", map[string]any{"answer": "x"})},
		[]any{edge("start", "source", "w"), edge("w", "source", "after")})
	f := &fixtures{}
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-f.barrier("waiting")
		cancel(run.ErrStopped)
	}()
	rep, s := execute(t, ctx, g, f, nil)
	if rep.Status != workflow.StatusStopped || !errors.Is(rep.Err, run.ErrStopped) {
		t.Fatalf("report = %+v", rep)
	}
	status, _ := s.nodes(t)
	if status["w"] != workflow.NodeStopped || status["after"] != "" {
		t.Fatalf("statuses = %v", status)
	}
}

func TestRetryThenSucceed(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", nil),
		node("f", "flaky", map[string]any{"failures": 2, "retry_config": map[string]any{"retry_enabled": true, "max_retries": 3, "retry_interval": 0}}),
		node("a", "answer", map[string]any{"answer": "{{#f.out#}}"}),
	}, []any{edge("start", "source", "f"), edge("f", "source", "a")})
	rep, s := execute(t, context.Background(), g, nil, nil)
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	if n := s.count(run.EventNodeRetry); n != 2 {
		t.Fatalf("node_retry events = %d, want 2", n)
	}
	var indexes []int
	for _, ev := range s.events {
		if ev.Kind == run.EventNodeRetry {
			raw, _ := json.Marshal(ev.Data)
			var d struct {
				RetryIndex int    `json:"retry_index"`
				Status     string `json:"status"`
			}
			_ = json.Unmarshal(raw, &d)
			indexes = append(indexes, d.RetryIndex)
			if d.Status != workflow.NodeRetry {
				t.Fatalf("node_retry status = %q", d.Status)
			}
		}
	}
	if fmt.Sprint(indexes) != "[1 2]" {
		t.Fatalf("retry indexes = %v", indexes)
	}
	if s.answer() != "ok" {
		t.Fatalf("answer = %q", s.answer())
	}
}

func TestRetriesExhaustedFailTheRun(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", nil),
		node("f", "flaky", map[string]any{"failures": 5, "retry_config": map[string]any{"retry_enabled": true, "max_retries": 1}}),
		node("a", "answer", map[string]any{"answer": "never"}),
	}, []any{edge("start", "source", "f"), edge("f", "source", "a")})
	rep, s := execute(t, context.Background(), g, nil, nil)
	if rep.Status != workflow.StatusFailed || rep.Err == nil || !strings.Contains(rep.Err.Error(), "attempt 2 failed") {
		t.Fatalf("report = %+v", rep)
	}
	if status, _ := s.nodes(t); status["f"] != workflow.NodeFailed || status["a"] != "" {
		t.Fatalf("statuses = %v", status)
	}
}

func TestDefaultValueStrategyIsPartialSuccess(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", nil),
		node("f", "flaky", map[string]any{"failures": 9, "error_strategy": "default-value",
			"default_value": []any{map[string]any{"key": "out", "type": "string", "value": "fallback"}}}),
		node("a", "answer", map[string]any{"answer": "{{#f.out#}} ({{#f.error_type#}})"}),
	}, []any{edge("start", "source", "f"), edge("f", "source", "a")})
	rep, s := execute(t, context.Background(), g, nil, nil)
	if rep.Status != workflow.StatusPartialSucceeded || rep.Exceptions != 1 {
		t.Fatalf("report = %+v", rep)
	}
	if status, _ := s.nodes(t); status["f"] != workflow.NodeException {
		t.Fatalf("statuses = %v", status)
	}
	if got := s.answer(); got != "fallback (FlakyError)" {
		t.Fatalf("answer = %q", got)
	}
}

func TestFailBranchTakesTheFailHandle(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", nil),
		node("f", "flaky", map[string]any{"failures": 9, "error_strategy": "fail-branch"}),
		node("ok", "answer", map[string]any{"answer": "fine"}),
		node("bad", "answer", map[string]any{"answer": "failed: {{#f.error_message#}}"}),
	}, []any{edge("start", "source", "f"), edge("f", "source", "ok"), edge("f", "fail-branch", "bad")})
	rep, s := execute(t, context.Background(), g, nil, nil)
	if rep.Status != workflow.StatusPartialSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	if got := s.answer(); got != "failed: attempt 1 failed" {
		t.Fatalf("answer = %q", got)
	}
	// The same node succeeding takes the ordinary edge and skips the fail branch.
	f := &fixtures{}
	g2 := graph(t, []any{
		node("start", "start", nil),
		node("f", "flaky", map[string]any{"failures": 0, "error_strategy": "fail-branch"}),
		node("ok", "answer", map[string]any{"answer": "fine"}),
		node("bad", "answer", map[string]any{"answer": "failed"}),
	}, []any{edge("start", "source", "f"), edge("f", "source", "ok"), edge("f", "fail-branch", "bad")})
	rep, s = execute(t, context.Background(), g2, f, nil)
	if rep.Status != workflow.StatusSucceeded || s.answer() != "fine" {
		t.Fatalf("report = %+v, answer %q", rep, s.answer())
	}
}

func TestAssignerWritesConversationVariables(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{
		node("start", "start", nil),
		node("set", "assigner", map[string]any{"version": "2", "items": []any{
			map[string]any{"variable_selector": []any{"conversation", "topic"}, "input_type": "variable", "operation": "over-write", "value": []any{"sys", "query"}},
			map[string]any{"variable_selector": []any{"conversation", "count"}, "input_type": "constant", "operation": "+=", "value": 2},
			map[string]any{"variable_selector": []any{"conversation", "seen"}, "input_type": "variable", "operation": "append", "value": []any{"sys", "query"}},
		}}),
		node("a", "answer", map[string]any{"answer": "{{#conversation.topic#}} {{#conversation.count#}} {{#conversation.seen#}}"}),
	}, []any{edge("start", "source", "set"), edge("set", "source", "a")})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeConversation, "topic", "")
	pool.Set(workflow.ScopeConversation, "count", int64(1))
	pool.Set(workflow.ScopeConversation, "seen", []any{"before"})
	rep, s := execute(t, context.Background(), g, nil, pool)
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	if got := s.answer(); got != "hello 3 - before\n- hello" {
		t.Fatalf("answer = %q", got)
	}
}

func TestUnsupportedNodesAreListed(t *testing.T) {
	t.Parallel()
	g := graph(t, []any{node("start", "start", nil), node("c1", "knowledge-index", nil), node("t1", "datasource", nil),
		map[string]any{"id": "note", "type": "custom-note", "data": map[string]any{"type": ""}}}, nil)
	ps := g.Validate(nodes.Registry(nodes.Deps{}).Supports)
	if len(ps) != 2 || ps[0].NodeID != "c1" || ps[1].NodeID != "t1" {
		t.Fatalf("problems = %v", ps)
	}
}

func TestIfElseAndTemplateTransform(t *testing.T) {
	t.Parallel()
	g := func() *workflow.Graph {
		return graph(t, []any{
			node("start", "start", map[string]any{"variables": []any{map[string]any{"variable": "name"}}}),
			node("check", "if-else", map[string]any{"cases": []any{
				map[string]any{"case_id": "true", "logical_operator": "and", "conditions": []any{
					map[string]any{"variable_selector": []any{"start", "name"}, "comparison_operator": "start with", "value": "A"},
				}},
				map[string]any{"case_id": "9f1c", "logical_operator": "or", "conditions": []any{
					map[string]any{"variable_selector": []any{"start", "name"}, "comparison_operator": "is", "value": "Bob"},
				}},
			}}),
			node("tt", "template-transform", map[string]any{"template": "{% for c in name %}{{ c|upper }}{% endfor %}!",
				"variables": []any{map[string]any{"variable": "name", "value_selector": []any{"start", "name"}}}}),
			node("a", "answer", map[string]any{"answer": "A-branch {{#tt.output#}}"}),
			node("b", "answer", map[string]any{"answer": "B-branch"}),
			node("else", "answer", map[string]any{"answer": "else {{#check.selected_case_id#}}"}),
		}, []any{
			edge("start", "source", "check"), edge("check", "true", "tt"), edge("tt", "source", "a"),
			edge("check", "9f1c", "b"), edge("check", "false", "else"),
		})
	}
	for name, want := range map[string]string{"Ada": "A-branch ADA!", "Bob": "B-branch", "Cy": "else false"} {
		pool := workflow.NewPool()
		e := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{})})
		s := &sink{}
		rep := e.Execute(context.Background(), workflow.Spec{Graph: g(), Pool: pool, RunID: "r", Out: s, Env: &nodes.Env{Inputs: map[string]any{"name": name}}})
		if rep.Status != workflow.StatusSucceeded || s.answer() != want {
			t.Fatalf("%s: %+v, answer %q, want %q", name, rep, s.answer(), want)
		}
	}
}

// iterationGraph iterates over [conversation, list]: each round upper-cases its item with a
// template; the answer shows the collected output.
func iterationGraph(t *testing.T, extra map[string]any) *workflow.Graph {
	t.Helper()
	it := map[string]any{"iterator_selector": []any{"conversation", "list"}, "output_selector": []any{"up", "output"},
		"start_node_id": "it-start"}
	for k, v := range extra {
		it[k] = v
	}
	child := func(id, typ string, data map[string]any) any {
		m := node(id, typ, data).(map[string]any)
		m["parentId"] = "it"
		return m
	}
	return graph(t, []any{
		node("start", "start", nil),
		node("it", "iteration", it),
		child("it-start", "iteration-start", nil),
		child("up", "template-transform", map[string]any{"template": "{{ x | upper }}{{ i }}",
			"variables": []any{map[string]any{"variable": "x", "value_selector": []any{"it", "item"}},
				map[string]any{"variable": "i", "value_selector": []any{"it", "index"}}}}),
		node("a", "answer", map[string]any{"answer": "{{#it.output#}}"}),
	}, []any{edge("start", "source", "it"), edge("it-start", "source", "up"), edge("it", "source", "a")})
}

func TestIteration(t *testing.T) {
	t.Parallel()
	for _, extra := range []map[string]any{nil, {"is_parallel": true, "parallel_nums": 3}} {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeConversation, "list", []any{"a", "b", "c"})
		rep, s := execute(t, context.Background(), iterationGraph(t, extra), nil, pool)
		if rep.Status != workflow.StatusSucceeded || s.answer() != "- A0\n- B1\n- C2" {
			t.Fatalf("%v: %+v, answer %q", extra, rep, s.answer())
		}
		if rep.Steps != 2+3+1 {
			t.Fatalf("steps %d", rep.Steps)
		}
		if s.count(run.EventIterationStarted) != 1 || s.count(run.EventIterationNext) != 3 || s.count(run.EventIterationCompleted) != 1 {
			t.Fatalf("iteration events %d %d %d", s.count(run.EventIterationStarted), s.count(run.EventIterationNext), s.count(run.EventIterationCompleted))
		}
		// The body's node events name the iteration and the round.
		rounds := map[float64]bool{}
		for _, ev := range s.events {
			if ev.Kind != run.EventNodeFinished {
				continue
			}
			raw, _ := json.Marshal(ev.Data)
			var d struct {
				NodeID      string         `json:"node_id"`
				IterationID *string        `json:"iteration_id"`
				Meta        map[string]any `json:"execution_metadata"`
			}
			_ = json.Unmarshal(raw, &d)
			if inBody := d.NodeID == "up" || d.NodeID == "it-start"; inBody != (d.IterationID != nil && *d.IterationID == "it") {
				t.Fatalf("node_finished %s", raw)
			}
			if d.NodeID == "up" {
				rounds[d.Meta["iteration_index"].(float64)] = true
			}
		}
		if len(rounds) != 3 {
			t.Fatalf("rounds %v", rounds)
		}
	}
}

func TestIterationErrors(t *testing.T) {
	t.Parallel()
	// The second item is not text: upper fails on it.
	for mode, want := range map[string]string{"continue-on-error": "- A0\n- None\n- C2", "remove-abnormal-output": "- A0\n- C2", "terminated": ""} {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeConversation, "list", []any{"a", []any{int64(1)}, "c"})
		g := iterationGraph(t, map[string]any{"error_handle_mode": mode})
		g.Nodes["up"].Data["template"] = "{{ x.upper() }}{{ i }}"
		rep, s := execute(t, context.Background(), g, nil, pool)
		if mode == "terminated" {
			if rep.Status != workflow.StatusFailed || s.count(run.EventIterationNext) != 2 {
				t.Fatalf("%s: %+v", mode, rep)
			}
			continue
		}
		if rep.Status != workflow.StatusSucceeded || s.answer() != want {
			t.Fatalf("%s: %+v, answer %q", mode, rep, s.answer())
		}
	}
}

func TestLoop(t *testing.T) {
	t.Parallel()
	loopGraph := func(extra map[string]any) *workflow.Graph {
		data := map[string]any{"start_node_id": "l-start", "loop_count": 5, "logical_operator": "and",
			"loop_variables": []any{map[string]any{"label": "n", "var_type": "number", "value_type": "constant", "value": "0"}}}
		for k, v := range extra {
			data[k] = v
		}
		child := func(id, typ string, d map[string]any) any {
			m := node(id, typ, d).(map[string]any)
			m["parentId"] = "l"
			return m
		}
		return graph(t, []any{
			node("start", "start", nil),
			node("l", "loop", data),
			child("l-start", "loop-start", nil),
			child("inc", "assigner", map[string]any{"version": "2", "items": []any{
				map[string]any{"variable_selector": []any{"l", "n"}, "input_type": "constant", "operation": "+=", "value": int64(1)}}}),
			child("check", "if-else", map[string]any{"cases": []any{map[string]any{"case_id": "true", "logical_operator": "and",
				"conditions": []any{map[string]any{"variable_selector": []any{"l", "n"}, "comparison_operator": "≥", "value": "3"}}}}}),
			child("end", "loop-end", nil),
			node("a", "answer", map[string]any{"answer": "n={{#l.n#}}"}),
		}, []any{edge("start", "source", "l"), edge("l-start", "source", "inc"), edge("inc", "source", "check"),
			edge("check", "true", "end"), edge("l", "source", "a")})
	}
	// The loop-end node stops it after the third round.
	rep, s := execute(t, context.Background(), loopGraph(nil), nil, nil)
	if rep.Status != workflow.StatusSucceeded || s.answer() != "n=3" || s.count(run.EventLoopNext) != 2 || s.count(run.EventLoopCompleted) != 1 {
		t.Fatalf("%+v, answer %q, loop_next %d", rep, s.answer(), s.count(run.EventLoopNext))
	}
	// A break condition stops it earlier; it is checked after each round.
	rep, s = execute(t, context.Background(), loopGraph(map[string]any{"break_conditions": []any{
		map[string]any{"variable_selector": []any{"l", "n"}, "comparison_operator": "≥", "value": "2"}}}), nil, nil)
	if rep.Status != workflow.StatusSucceeded || s.answer() != "n=2" || s.count(run.EventLoopNext) != 1 {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}
	// Without a way out it runs loop_count rounds.
	g := loopGraph(map[string]any{"loop_count": 2})
	rep, s = execute(t, context.Background(), g, nil, nil)
	if rep.Status != workflow.StatusSucceeded || s.answer() != "n=2" {
		t.Fatalf("%+v, answer %q", rep, s.answer())
	}
	for _, ev := range s.events {
		if ev.Kind == run.EventNodeStarted {
			raw, _ := json.Marshal(ev.Data)
			if strings.Contains(string(raw), `"node_id":"inc"`) && !strings.Contains(string(raw), `"iteration_id":null,"loop_id":"l"`) {
				t.Fatalf("body node_started %s", raw)
			}
		}
	}
}

// TestEndNodesStreamTextChunks: in a Workflow app's run (Spec.TextChunks) the end node streams
// its outputs as text_chunk events, as Dify does: in the order of the outputs, one line each, a
// streaming output chunk by chunk as it is produced; a branch's skipped end node streams
// nothing, and no message event is sent.
func TestEndNodesStreamTextChunks(t *testing.T) {
	f := &fixtures{}
	r := f.registry()
	r["writer"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
			x.Stream("text", "Tides")
			x.Stream("text", " turn.")
			return workflow.Result{Outputs: map[string]any{"text": "Tides turn."}}, nil
		}), nil
	}
	out := func(name string, sel ...any) any {
		return map[string]any{"variable": name, "value_selector": sel}
	}
	g := graph(t, []any{
		node("s", "start", nil),
		node("w", "writer", nil),
		node("br", "pick", map[string]any{"pick": "yes"}),
		node("end", "end", map[string]any{"outputs": []any{out("text", "w", "text"), out("who", "sys", "user_id"), out("none")}}),
		node("other", "end", map[string]any{"outputs": []any{out("x", "w", "text")}}),
	}, []any{edge("s", "source", "w"), edge("w", "source", "br"), edge("br", "yes", "end"), edge("br", "no", "other")})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysUserID, "ada")
	e := workflow.NewEngine(workflow.Options{Nodes: r})
	s := &sink{}
	rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: s, Env: &nodes.Env{}, TextChunks: true})
	if rep.Status != workflow.StatusSucceeded || rep.Outputs["text"] != "Tides turn." || rep.Outputs["who"] != "ada" {
		t.Fatalf("report %+v", rep)
	}
	var chunks []string
	for _, ev := range s.events {
		switch ev.Kind {
		case run.EventMessage:
			t.Fatalf("a message event in a Workflow app's run: %+v", ev)
		case run.EventTextChunk:
			tc := ev.Data.(workflow.TextChunk)
			chunks = append(chunks, tc.Text+"@"+strings.Join(tc.FromVariableSelector, "."))
		}
	}
	want := "Tides@w.text| turn.@w.text|\n@end.answer|ada@sys.user_id"
	if got := strings.Join(chunks, "|"); got != want {
		t.Fatalf("text chunks\n got %q\nwant %q", got, want)
	}
}

// savedStates records the states a store was given, by node.
type savedStates struct {
	mu     sync.Mutex
	states map[string][]string
}

func (s *savedStates) SaveNodeExecution(_ context.Context, rec workflow.NodeExecution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[string][]string{}
	}
	s.states[rec.NodeID] = append(s.states[rec.NodeID], rec.Status)
	return nil
}

// TestQuickNodesAreStoredOnce: a node that finishes at once is stored once, finished; one that
// runs longer is stored as running first, then finished, never in the other order.
func TestQuickNodesAreStoredOnce(t *testing.T) {
	t.Parallel()
	f := &fixtures{}
	r := f.registry()
	r["slow"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(ctx context.Context, _ *workflow.Exec) (workflow.Result, error) {
			time.Sleep(200 * time.Millisecond)
			return workflow.Result{Outputs: map[string]any{"out": "late"}}, nil
		}), nil
	}
	g := graph(t, []any{
		node("start", "start", map[string]any{"variables": []any{}}),
		node("slow", "slow", nil),
		node("end", "answer", map[string]any{"answer": "{{#slow.out#}}"}),
	}, []any{edge("start", "source", "slow"), edge("slow", "source", "end")})
	saved := &savedStates{}
	e := workflow.NewEngine(workflow.Options{Nodes: r, Store: saved})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, "hello")
	rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: &sink{}, Env: &nodes.Env{}})
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	saved.mu.Lock()
	defer saved.mu.Unlock()
	for id, want := range map[string]string{"start": "succeeded", "slow": "running,succeeded", "end": "succeeded"} {
		if got := strings.Join(saved.states[id], ","); got != want {
			t.Errorf("node %s stored as %s, want %s", id, got, want)
		}
	}
}

// batchStates is savedStates that stores batches, recording each.
type batchStates struct {
	savedStates
	batches []string
}

func (b *batchStates) SaveNodeExecutions(ctx context.Context, recs []workflow.NodeExecution) error {
	var ids []string
	for _, rec := range recs {
		_ = b.SaveNodeExecution(ctx, rec)
		ids = append(ids, rec.NodeID+":"+rec.Status)
	}
	b.mu.Lock()
	b.batches = append(b.batches, strings.Join(ids, " "))
	b.mu.Unlock()
	return nil
}

// TestNodeExecutionsAreStoredTogether: with a store that takes batches, a run's quick nodes are
// stored together; a slow node's running state goes out with what was kept before it, and the
// rest when the run ends, before Execute returns.
func TestNodeExecutionsAreStoredTogether(t *testing.T) {
	t.Parallel()
	f := &fixtures{}
	r := f.registry()
	r["slow"] = func(*workflow.Node) (workflow.NodeRunner, error) {
		return workflow.NodeFunc(func(ctx context.Context, _ *workflow.Exec) (workflow.Result, error) {
			time.Sleep(200 * time.Millisecond)
			return workflow.Result{Outputs: map[string]any{"out": "late"}}, nil
		}), nil
	}
	g := graph(t, []any{
		node("start", "start", map[string]any{"variables": []any{}}),
		node("slow", "slow", nil),
		node("quote", "template-transform", map[string]any{"template": "{{ x }}!",
			"variables": []any{map[string]any{"variable": "x", "value_selector": []any{"slow", "out"}}}}),
		node("end", "answer", map[string]any{"answer": "{{#quote.output#}}"}),
	}, []any{edge("start", "source", "slow"), edge("slow", "source", "quote"), edge("quote", "source", "end")})
	saved := &batchStates{}
	e := workflow.NewEngine(workflow.Options{Nodes: r, Store: saved})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, "hello")
	rep := e.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: &sink{}, Env: &nodes.Env{}})
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("report = %+v", rep)
	}
	saved.mu.Lock()
	defer saved.mu.Unlock()
	if got := strings.Join(saved.batches, " | "); got != "start:succeeded slow:running | slow:succeeded quote:succeeded end:succeeded" {
		t.Fatalf("batches: %s", got)
	}
}
