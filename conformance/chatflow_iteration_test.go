package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// iterationDSL is the example Chatflow with an iteration and a loop, named for the test; edit
// rewrites its text.
func iterationDSL(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "chatflow-iteration.yml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(raw), "name: Iterate And Loop", "name: "+name, 1)
	if edit != nil {
		doc = edit(doc)
	}
	path := filepath.Join(t.TempDir(), "flow.yml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestChatflowIterationAndLoop runs the example with an iteration and a loop on both engines:
// the parallel iteration sends iteration_started, one iteration_next per item and
// iteration_completed with the outputs in item order, its inner nodes carry iteration_id; the
// loop counts to the start node's `rounds` with an assigner on a loop variable and stops at its
// break condition (before the first round when rounds is 0) or at its loop-end node;
// loop_completed's steps is, as in Dify, the configured loop_count (10), or 0 when the loop broke
// before its first round. The server validates every event against the contract.
func TestChatflowIterationAndLoop(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		name := "Iterate " + strings.ReplaceAll(t.Name(), "/", "-")
		p.CLI(t, "apps", "import", "--publish", iterationDSL(t, name, nil))
		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", name))

		type result struct {
			answer, status string
			events         []string
			nexts          []int
			inner          map[string]string // inner node id → iteration_id or loop_id
			loopReason     any
			iterOut        []any
			steps          int
		}
		send := func(query string, rounds int) result {
			t.Helper()
			r := result{inner: map[string]string{}}
			body := client.SendChatMessageJSONRequestBody{Query: query, User: "u", Inputs: map[string]any{"rounds": rounds}, ResponseMode: ptr(client.Streaming)}
			for _, ev := range streamEvents(t, c, body) {
				n := eventName(t, ev)
				r.events = append(r.events, n)
				switch n {
				case "message":
					m, _ := ev.AsMessageEvent()
					r.answer += m.Answer
				case "node_started":
					ns, _ := ev.AsNodeStartedEvent()
					switch {
					case ns.Data.IterationId != nil:
						r.inner[ns.Data.NodeId] = *ns.Data.IterationId
					case ns.Data.LoopId != nil:
						r.inner[ns.Data.NodeId] = *ns.Data.LoopId
					}
				case "node_finished":
					nf, _ := ev.AsNodeFinishedEvent()
					if nf.Data.NodeId == "count" && nf.Data.ExecutionMetadata != nil {
						r.loopReason = (*nf.Data.ExecutionMetadata)["completed_reason"]
					}
				case "iteration_next":
					in, _ := ev.AsIterationNextEvent()
					if in.Data.Index != nil {
						r.nexts = append(r.nexts, *in.Data.Index)
					}
				case "iteration_completed":
					ic, _ := ev.AsIterationCompletedEvent()
					if ic.Data.Outputs == nil || ic.Data.Status == nil || *ic.Data.Status != client.ProgressDataStatusSucceeded {
						t.Fatalf("iteration_completed %+v", ic.Data)
					}
					r.iterOut, _ = (*ic.Data.Outputs)["output"].([]any)
				case "loop_completed":
					lc, _ := ev.AsLoopCompletedEvent()
					if lc.Data.Steps == nil || lc.Data.Outputs == nil {
						t.Fatalf("loop_completed %+v", lc.Data)
					}
					r.steps = *lc.Data.Steps
				case "workflow_finished":
					wf, _ := ev.AsWorkflowFinishedEvent()
					r.status = string(wf.Data.Status)
				}
			}
			return r
		}

		r := send("go", 3)
		const colors = "- 1. RED #ff0000\n- 2. GREEN #00ff00\n- 3. BLUE #0000ff"
		if r.status != "succeeded" || r.answer != colors+"\nrounds: 3, trail: go+0+1+2" {
			t.Fatalf("run: %q %+v", r.answer, r)
		}
		if want := []any{"1. RED #ff0000", "2. GREEN #00ff00", "3. BLUE #0000ff"}; fmt.Sprint(r.iterOut) != fmt.Sprint(want) {
			t.Fatalf("iteration output %v", r.iterOut)
		}
		joined := strings.Join(r.events, " ")
		count := map[string]int{}
		for _, ev := range r.events {
			count[ev]++
		}
		for _, ev := range []string{"iteration_started", "iteration_completed", "loop_started", "loop_completed"} {
			if count[ev] != 1 {
				t.Fatalf("%s: %s", ev, joined)
			}
		}
		// Three loop rounds: loop_next between them, as Dify sends it.
		if count["iteration_next"] != 3 || count["loop_next"] != 2 || r.steps != 10 || r.loopReason != "loop_break" {
			t.Fatalf("events %s, loop %d rounds (%v)", joined, r.steps, r.loopReason)
		}
		if len(r.nexts) != 3 {
			t.Fatalf("iteration_next indexes %v", r.nexts)
		}
		if r.inner["render"] != "shout" || r.inner["shoutstart"] != "" || r.inner["bump"] != "count" || r.inner["step"] != "count" || r.inner["count"] != "" {
			t.Fatalf("inner nodes %v", r.inner)
		}
		if i, j := strings.Index(joined, "iteration_completed"), strings.Index(joined, "loop_started"); i > j {
			t.Fatalf("the loop started before the iteration completed: %s", joined)
		}

		// rounds 0: the break condition holds before the first round.
		r = send("go", 0)
		if r.status != "succeeded" || r.answer != colors+"\nrounds: 0, trail: go" || r.steps != 0 || strings.Contains(strings.Join(r.events, " "), "loop_next") {
			t.Fatalf("no rounds: %q %+v", r.answer, r)
		}
		// "stop": the loop-end node ends the loop in its first round.
		r = send("please stop", 5)
		if r.status != "succeeded" || r.answer != colors+"\nrounds: 0, trail: please stop" || r.steps != 10 || r.loopReason != "loop_break" {
			t.Fatalf("loop-end: %q %+v", r.answer, r)
		}
	})
}

// TestChatflowIterationGolden pins the bytes of the example's stream, with the iteration
// sequential so the order of its events is fixed.
func TestChatflowIterationGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	name := "Golden Iteration"
	p.CLI(t, "apps", "import", "--publish", iterationDSL(t, name, func(s string) string {
		return strings.Replace(s, "is_parallel: true", "is_parallel: false", 1)
	}))
	key := p.CLI(t, "keys", "create", "--app", name)
	body := `{"query":"go","inputs":{"rounds":2},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
	got := streamGolden(t, p, key, body)
	golden(t, "chatflow_iteration_streaming.sse.golden", got)
}
