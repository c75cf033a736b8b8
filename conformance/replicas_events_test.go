package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestReplicasEventFanOut runs the events operation across two replicas on one PostgreSQL and
// one Redis. A Chatflow pauses at a human-input form on A; streams of the events operation open
// on A and on B while it waits; the form is submitted through B, which resumes the run from the
// database; both streams carry the resumed run to workflow_finished, and a stream opened on A
// afterwards replays the resumption B ran. Then a Workflow app run started on A, still running,
// is streamed through B's events operation from its first event (the catch-up) and live to its
// end, a stop sent through B.
func TestReplicasEventFanOut(t *testing.T) {
	r := startReplicas(t, 2, "")
	a, b := r.ps[0], r.ps[1]

	key := exampleApp(t, a, "../docs/examples/chatflow-review.yml", "Review Desk", "Review Desk Replicas")
	runID, token, conv, _ := hiPause(t, a, key, marker(t, "the replicated review"), "rev")
	resumed := "workflow_started node_started(review) human_input_form_filled node_finished(review) message message " +
		"node_started(no) node_finished(no) message_end workflow_finished"
	streams := map[string]chan []hiEvent{}
	for name, p := range map[string]*Parley{"A": a, "B": b} {
		ch := make(chan []hiEvent, 1)
		streams[name] = ch
		go func() {
			evs, _ := hiStreamWithin(t, 2*time.Minute, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
			ch <- evs
		}()
	}
	status, raw := rawCall(t, b, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"seen"},"action":"reject","user":"rev"}`, key)
	if status != 200 {
		t.Fatalf("submit through B: %d %s", status, raw)
	}
	for _, name := range []string{"A", "B"} {
		evs := <-streams[name]
		if got := hiNames(evs); got != resumed {
			t.Fatalf("events on %s:\n got %s\nwant %s", name, got, resumed)
		}
		if evs[0]["conversation_id"] != conv || evs[len(evs)-1].data()["status"] != "succeeded" {
			t.Fatalf("events on %s: %v … %v", name, evs[0], evs[len(evs)-1])
		}
	}
	// Afterwards, A replays the resumption B ran (the log keeps it a while after its end).
	if got := hiNames(hiStream(t, "GET", a.URL+"/workflow/"+runID+"/events?user=rev", "", key)); got != resumed {
		t.Fatalf("replay on A:\n got %s\nwant %s", got, resumed)
	}
	if status, raw := rawCall(t, a, "GET", "/workflow/"+runID+"/events?user=other", "", key); status != 404 {
		t.Fatalf("another user on A: %d %s", status, raw)
	}
	if got := hiAnswer(t, a, key, conv, "rev"); !strings.HasPrefix(got, "Draft for ") {
		t.Fatalf("answer on A: %q", got)
	}

	// A Workflow app run on A, still running, streamed through B.
	wkey := exampleApp(t, a, workflowExample, "Topic Writer", "Topic Writer Replicas")
	topic := marker(t, "the replicated endless topic")
	upstream.On(topic, openaitest.Reply{Chunks: []string{"Once", " upon"}, HangAfterChunks: 1})
	onA, nextA := sseReader(t, "POST", a.URL+"/workflows/run", `{"inputs":{"topic":"`+topic+`"},"user":"wf","response_mode":"streaming"}`, wkey)
	untilLLM := func(next func() hiEvent) {
		for ev := next(); ev.name() != "node_started" || ev.data()["node_type"] != "llm"; ev = next() {
		}
	}
	untilLLM(nextA)
	wfRun, _ := (*onA)[0]["workflow_run_id"].(string)
	task, _ := (*onA)[0]["task_id"].(string)
	// B's stream catches up from the run's first event to where it is (the llm node hangs).
	onB, nextB := sseReader(t, "GET", b.URL+"/workflow/"+wfRun+"/events?user=wf", "", wkey)
	untilLLM(nextB)
	// Stopped through B (the stop reaches A over Redis): both streams end with the run's
	// workflow_finished, B's live.
	if status, raw := rawCall(t, b, "POST", "/workflows/tasks/"+task+"/stop", `{"user":"wf"}`, wkey); status != 200 {
		t.Fatalf("stop through B: %d %s", status, raw)
	}
	for ev := nextA(); ev.name() != "workflow_finished"; ev = nextA() {
	}
	for ev := nextB(); ev.name() != "workflow_finished"; ev = nextB() {
	}
	if hiNames(*onB) != hiNames(*onA) {
		t.Fatalf("the run on B's events operation:\n got %s\nwant %s (A's stream)", hiNames(*onB), hiNames(*onA))
	}
	if fin := (*onB)[len(*onB)-1].data(); fin["status"] != "stopped" {
		t.Fatalf("workflow_finished on B: %v", fin)
	}
}

// sseReader opens an event stream (closed when t ends) and returns the events read so far and
// a function that reads the next one (failing t if the stream ends first).
func sseReader(t *testing.T, method, url, body, key string) (*[]hiEvent, func() hiEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	req, err := newRequest(method, url, body, key)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := newContractClient(t).Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d", method, url, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	evs := &[]hiEvent{}
	return evs, func() hiEvent {
		t.Helper()
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev hiEvent
				if err := json.Unmarshal([]byte(rest), &ev); err != nil {
					t.Fatalf("not JSON: %s", rest)
				}
				*evs = append(*evs, ev)
				return ev
			}
		}
		t.Fatalf("%s %s ended after %s: %v", method, url, hiNames(*evs), sc.Err())
		return nil
	}
}
