package workflow_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

func form(extra map[string]any) map[string]any {
	d := map[string]any{
		"form_content": "Check {{#sys.query#}}: {{#$output.note#}}",
		"inputs":       []any{map[string]any{"type": "paragraph", "output_variable_name": "note", "default": nil}},
		"user_actions": []any{map[string]any{"id": "ok", "title": "OK", "button_style": "primary"}},
	}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// roundTrip encodes a paused state as the store keeps it and decodes it again, with its pool.
func roundTrip(t *testing.T, st *workflow.State) (*workflow.State, *workflow.Pool) {
	t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back workflow.State
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	pool, err := back.RestorePool()
	if err != nil {
		t.Fatal(err)
	}
	return &back, pool
}

// TestPauseAndResume runs a graph with two human-input nodes on parallel branches (a and b),
// and a third (c) after a: the run pauses with both forms, resumes from its encoded state with
// one decision (the other form keeps waiting), pauses again at c, and finishes once b and c are
// decided; the answer streams across the segments in graph order and the counters carry over.
func TestPauseAndResume(t *testing.T) {
	g := graph(t, []any{
		node("start", "start", nil),
		node("intro", "answer", map[string]any{"answer": "Q={{#sys.query#}};"}),
		node("a", "human-input", form(nil)),
		node("b", "human-input", form(nil)),
		node("c", "human-input", form(nil)),
		node("done", "answer", map[string]any{"answer": "a={{#a.note#}} b={{#b.note#}} c={{#c.__action_id#}}"}),
		node("late", "answer", map[string]any{"answer": "b timed out"}),
	}, []any{
		edge("start", "source", "intro"), edge("intro", "source", "a"), edge("intro", "source", "b"),
		edge("a", "ok", "c"), edge("c", "ok", "done"), edge("b", "ok", "done"), edge("b", "__timeout", "late"),
	})
	eng := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{})})
	pool := workflow.NewPool()
	pool.Set(workflow.ScopeSys, workflow.SysQuery, "why")
	out := &sink{}
	rep := eng.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: out})
	if rep.Status != workflow.StatusPaused || len(rep.Paused) != 2 || rep.State == nil {
		t.Fatalf("first segment: %+v", rep)
	}
	for _, p := range rep.Paused {
		if p.Form.Content != "Check why: {{#$output.note#}}" || len(p.Form.Actions) != 1 || p.Form.Timeout != nodes.DefaultHumanInputTimeout {
			t.Fatalf("form %+v", p.Form)
		}
	}
	if got := out.answer(); got != "Q=why;" {
		t.Fatalf("answer before the pause %q", got)
	}
	steps := rep.Steps

	// a is submitted: a resumes, c pauses; b still waits.
	st, pool := roundTrip(t, rep.State)
	out2 := &sink{}
	rep = eng.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: out2, From: st,
		Resume: map[string]*workflow.Resumption{"a": {Action: "ok", Inputs: map[string]any{"note": "fine"}}}})
	if rep.Status != workflow.StatusPaused || len(rep.Paused) != 1 || rep.Paused[0].NodeID != "c" || len(rep.State.Paused) != 2 {
		t.Fatalf("second segment: %+v (state paused %v)", rep, rep.State.Paused)
	}
	if out2.count(run.EventHumanInputFormFilled) != 1 || out2.answer() != "" || rep.Steps <= steps {
		t.Fatalf("second segment: filled %d, answer %q, steps %d", out2.count(run.EventHumanInputFormFilled), out2.answer(), rep.Steps)
	}

	// b and c are decided together: the run finishes and the answer completes.
	st, pool = roundTrip(t, rep.State)
	out3 := &sink{}
	rep = eng.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: out3, From: st,
		Resume: map[string]*workflow.Resumption{
			"b": {Action: "ok", Inputs: map[string]any{"note": "good"}},
			"c": {Action: "ok", Inputs: map[string]any{"note": ""}},
		}})
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("last segment: %+v", rep)
	}
	if got := out3.answer(); got != "a=fine b=good c=ok" {
		t.Fatalf("answer after the resumptions %q", got)
	}
	status, _ := out3.nodes(t)
	if status["done"] != workflow.NodeSucceeded || status["late"] != "" {
		t.Fatalf("node statuses %v", status)
	}
}

// TestPauseTimeout resumes a paused node with an expired form: it takes the __timeout edge.
func TestPauseTimeout(t *testing.T) {
	g := graph(t, []any{
		node("start", "start", nil),
		node("b", "human-input", form(map[string]any{"timeout": 2, "timeout_unit": "day"})),
		node("done", "answer", map[string]any{"answer": "answered"}),
		node("late", "answer", map[string]any{"answer": "late {{#b.__action_id#}}."}),
	}, []any{edge("start", "source", "b"), edge("b", "ok", "done"), edge("b", "__timeout", "late")})
	eng := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{})})
	rep := eng.Execute(context.Background(), workflow.Spec{Graph: g, Pool: workflow.NewPool(), RunID: "r", Out: &sink{}})
	if rep.Status != workflow.StatusPaused || rep.Paused[0].Form.Timeout.Hours() != 48 {
		t.Fatalf("first segment: %+v", rep)
	}
	st, pool := roundTrip(t, rep.State)
	out := &sink{}
	rep = eng.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: out, From: st,
		Resume: map[string]*workflow.Resumption{"b": {TimedOut: true}}})
	if rep.Status != workflow.StatusSucceeded || out.answer() != "late ." || out.count(run.EventHumanInputFormTimeout) != 1 {
		t.Fatalf("timed out: %+v %q", rep, out.answer())
	}
}

// TestHumanInputInsideContainerRefused: a form inside an iteration or a loop cannot pause (its
// round's state is not kept), so such graphs do not validate.
func TestHumanInputInsideContainerRefused(t *testing.T) {
	g, err := workflow.Parse(map[string]any{"nodes": []any{
		node("start", "start", nil),
		map[string]any{"id": "it", "data": map[string]any{"type": "iteration", "title": "It"}},
		map[string]any{"id": "h", "parentId": "it", "data": form(map[string]any{"type": "human-input", "title": "H", "isInIteration": true})},
	}, "edges": []any{edge("start", "source", "it")}})
	if err != nil {
		t.Fatal(err)
	}
	ps := g.Validate(func(string) bool { return true })
	if len(ps) != 1 || ps[0].NodeID != "h" {
		t.Fatalf("problems %v", ps)
	}
}

// BenchmarkPauseResume measures a pause and a resumption of a small graph: the run to the form,
// encoding its state as it is stored, decoding it and running the rest.
func BenchmarkPauseResume(b *testing.B) {
	g, err := workflow.Parse(map[string]any{"nodes": []any{
		node("start", "start", nil),
		node("intro", "answer", map[string]any{"answer": "Q={{#sys.query#}};"}),
		node("a", "human-input", form(nil)),
		node("done", "answer", map[string]any{"answer": "a={{#a.note#}}"}),
	}, "edges": []any{edge("start", "source", "intro"), edge("intro", "source", "a"), edge("a", "ok", "done")}})
	if err != nil {
		b.Fatal(err)
	}
	eng := workflow.NewEngine(workflow.Options{Nodes: nodes.Registry(nodes.Deps{})})
	decision := map[string]*workflow.Resumption{"a": {Action: "ok", Inputs: map[string]any{"note": "fine"}}}
	b.ReportAllocs()
	for b.Loop() {
		pool := workflow.NewPool()
		pool.Set(workflow.ScopeSys, workflow.SysQuery, "why")
		rep := eng.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: &sink{}})
		raw, err := json.Marshal(rep.State)
		if err != nil {
			b.Fatal(err)
		}
		var st workflow.State
		if err := json.Unmarshal(raw, &st); err != nil {
			b.Fatal(err)
		}
		pool, err = st.RestorePool()
		if err != nil {
			b.Fatal(err)
		}
		rep = eng.Execute(context.Background(), workflow.Spec{Graph: g, Pool: pool, RunID: "r", Out: &sink{}, From: &st, Resume: decision})
		if rep.Status != workflow.StatusSucceeded {
			b.Fatal(rep.Status)
		}
	}
}
