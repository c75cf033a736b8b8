package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"regexp"

	"strings"
	"testing"
	"time"
)

// hiEvent is one data line of a stream, decoded.
type hiEvent map[string]any

func (e hiEvent) name() string { s, _ := e["event"].(string); return s }

func (e hiEvent) data() map[string]any { m, _ := e["data"].(map[string]any); return m }

// hiStream reads a whole event stream (bounded by two minutes) and returns its data events.
func hiStream(t *testing.T, method, url, body, key string) []hiEvent {
	t.Helper()
	evs, err := hiStreamWithin(t, 2*time.Minute, method, url, body, key)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// hiStreamWithin is hiStream bounded by d; a stream still open then is an error.
func hiStreamWithin(t *testing.T, d time.Duration, method, url, body, key string) ([]hiEvent, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := newRequest(method, url, body, key)
	if err != nil {
		t.Fatal(err)
	}
	req = req.WithContext(ctx)
	resp, err := newContractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	var evs []hiEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev hiEvent
		if err := json.Unmarshal([]byte(rest), &ev); err != nil {
			t.Fatalf("not JSON: %s", rest)
		}
		evs = append(evs, ev)
	}
	return evs, sc.Err()
}

func hiNames(evs []hiEvent) string {
	var names []string
	for _, ev := range evs {
		n := ev.name()
		if n == "node_started" || n == "node_finished" {
			n += "(" + ev.data()["node_id"].(string) + ")"
		}
		names = append(names, n)
	}
	return strings.Join(names, " ")
}

// hiPause sends a streaming message to the review app and checks the paused stream: the draft
// answer, human_input_required, workflow_paused and the end, without message_end. It returns
// the run id, the form token and the conversation id.
func hiPause(t *testing.T, p *Parley, key, query, user string) (runID, token, conv string, expiration int64) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "inputs": map[string]any{}, "user": user, "response_mode": "streaming"})
	evs := hiStream(t, "POST", p.URL+"/chat-messages", string(body), key)
	want := "workflow_started message message message node_started(start) node_finished(start) node_started(draft) " +
		"node_finished(draft) node_started(review) human_input_required workflow_paused"
	if got := hiNames(evs); got != want {
		t.Fatalf("paused stream:\n got %s\nwant %s", got, want)
	}
	req, paused := evs[len(evs)-2].data(), evs[len(evs)-1].data()
	token, _ = req["form_token"].(string)
	if len(token) != 22 || req["node_id"] != "review" || req["node_title"] != "Review" || req["display_in_ui"] != true ||
		!strings.Contains(req["form_content"].(string), "Please review the draft for "+query) ||
		!strings.Contains(req["form_content"].(string), "{{#$output.comment#}}") {
		t.Fatalf("human_input_required: %v", req)
	}
	expiration = int64(req["expiration_time"].(float64))
	reasons, _ := paused["reasons"].([]any)
	if paused["status"] != "paused" || len(reasons) != 1 || reasons[0].(map[string]any)["TYPE"] != "human_input_required" ||
		reasons[0].(map[string]any)["form_token"] != token || paused["paused_nodes"].([]any)[0] != "review" {
		t.Fatalf("workflow_paused: %v", paused)
	}
	runID, _ = evs[0]["workflow_run_id"].(string)
	conv, _ = evs[0]["conversation_id"].(string)
	return runID, token, conv, expiration
}

// hiAnswer is the answer history shows for the conversation's only message.
func hiAnswer(t *testing.T, p *Parley, key, conv, user string) string {
	t.Helper()
	status, raw := rawCall(t, p, "GET", "/messages?conversation_id="+conv+"&user="+user, "", key)
	var h struct {
		Data []struct{ Answer, Status string }
	}
	if status != 200 || json.Unmarshal(raw, &h) != nil || len(h.Data) != 1 {
		t.Fatalf("history: %d %s", status, raw)
	}
	return h.Data[0].Answer
}

// TestHumanInput pauses a Chatflow at a human-input form and resumes it through the form and
// events operations on both engines: the paused stream, the answer so far in history, the form,
// its bad submissions (400 invalid_form_data, 404, 412 once submitted), the events stream of the
// resumed run to message_end and workflow_finished, the refusals of the events operation (another
// user, an unknown or malformed run id), and a form that times out down its __timeout branch.
func TestHumanInput(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		name := "Review Desk " + strings.ReplaceAll(t.Name(), "/", "-")
		key := exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", name)
		q := marker(t, "the launch post")
		runID, token, conv, _ := hiPause(t, p, key, q, "rev")

		// While paused, history shows the answer so far.
		if got := hiAnswer(t, p, key, conv, "rev"); got != "Draft for "+q+". " {
			t.Fatalf("paused answer %q", got)
		}

		// The form.
		status, raw := rawCall(t, p, "GET", "/form/human_input/"+token, "", key)
		var form struct {
			FormContent string `json:"form_content"`
			Inputs      []map[string]any
			UserActions []map[string]any `json:"user_actions"`
			Expiration  int64            `json:"expiration_time"`
		}
		if status != 200 || json.Unmarshal(raw, &form) != nil || len(form.UserActions) != 2 || form.UserActions[0]["id"] != "approve" ||
			len(form.Inputs) != 1 || form.Inputs[0]["output_variable_name"] != "comment" || !strings.Contains(form.FormContent, q) {
			t.Fatalf("form: %d %s", status, raw)
		}
		status, raw = rawCall(t, p, "GET", "/form/human_input/AAAAAAAAAAAAAAAAAAAAAA", "", key)
		wantError(t, "unknown token", status, raw, 404, "not_found")
		status, raw = rawCall(t, p, "GET", "/form/human_input/"+token, "", p.AppKey)
		wantError(t, "token of another app", status, raw, 404, "not_found")

		// Submissions the form does not take leave it open.
		for what, body := range map[string]string{
			"unknown action": `{"inputs":{"comment":"x"},"action":"maybe","user":"rev"}`,
			"missing input":  `{"inputs":{},"action":"approve","user":"rev"}`,
			"extra input":    `{"inputs":{"comment":"x","other":"y"},"action":"approve","user":"rev"}`,
			"wrong type":     `{"inputs":{"comment":3},"action":"approve","user":"rev"}`,
		} {
			status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, body, key)
			wantError(t, what, status, raw, 400, "invalid_form_data")
		}
		status, raw = rawCall(t, p, "POST", "/form/human_input/unknown", `{"inputs":{},"action":"approve","user":"rev"}`, key)
		wantError(t, "submit unknown token", status, raw, 404, "not_found")

		// The events operation refuses other users and unknown or malformed runs.
		status, raw = rawCall(t, p, "GET", "/workflow/"+runID+"/events?user=someone-else", "", key)
		wantError(t, "another user", status, raw, 404, "not_found")
		status, raw = rawCall(t, p, "GET", "/workflow/not-a-run-id/events?user=rev", "", key)
		wantError(t, "malformed run id", status, raw, 404, "not_found")
		status, raw = rawCall(t, p, "GET", "/workflow/0b6f1a20-0000-4000-8000-000000000001/events?user=rev", "", key)
		wantError(t, "unknown run", status, raw, 404, "not_found")
		status, raw = rawCall(t, p, "GET", "/workflow/"+runID+"/events?user=rev", "", p.AppKey)
		wantError(t, "not a workflow app", status, raw, 400, "not_workflow_app")

		// Submitted: the run resumes and the events operation streams the rest.
		status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"looks good"},"action":"approve","user":"boss"}`, key)
		if status != 200 || strings.TrimSpace(string(raw)) != "{}" {
			t.Fatalf("submit: %d %s", status, raw)
		}
		evs := hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
		want := "workflow_started node_started(review) human_input_form_filled node_finished(review) message message node_started(ok) " +
			"node_finished(ok) message_end workflow_finished"
		if got := hiNames(evs); got != want {
			t.Fatalf("resumed stream:\n got %s\nwant %s", got, want)
		}
		filled := evs[2].data()
		if filled["action_id"] != "approve" || filled["action_text"] != "Approve" ||
			!strings.Contains(filled["rendered_content"].(string), "Comment: looks good") {
			t.Fatalf("human_input_form_filled: %v", filled)
		}
		if evs[0].data()["reason"] != "resumption" || evs[len(evs)-1].data()["status"] != "succeeded" || evs[0]["conversation_id"] != conv {
			t.Fatalf("resumed stream: %v … %v", evs[0], evs[len(evs)-1])
		}
		if got := hiAnswer(t, p, key, conv, "rev"); got != "Draft for "+q+". Approved: looks good" {
			t.Fatalf("final answer %q", got)
		}

		// The token is single-use.
		status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"again"},"action":"reject","user":"rev"}`, key)
		wantError(t, "used token", status, raw, 412, "human_input_form_submitted")
		status, raw = rawCall(t, p, "GET", "/form/human_input/"+token, "", key)
		wantError(t, "used token read", status, raw, 412, "human_input_form_submitted")

		// A form that times out resumes down its __timeout branch.
		tname := name + " timeout"
		tkey := exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", tname, "timeout: 3\n", "timeout: 0.0005\n",
			"timeout_unit: day", "timeout_unit: hour")
		tq := marker(t, "the quiet post")
		trun, ttoken, _, _ := hiPause(t, p, tkey, tq, "rev")
		evs = hiStream(t, "GET", p.URL+"/workflow/"+trun+"/events?user=rev", "", tkey)
		want = "workflow_started node_started(review) human_input_form_timeout node_finished(review) message node_started(late) " +
			"node_finished(late) message_end workflow_finished"
		if got := hiNames(evs); got != want {
			t.Fatalf("timed-out stream:\n got %s\nwant %s", got, want)
		}
		status, raw = rawCall(t, p, "GET", "/form/human_input/"+ttoken, "", tkey)
		wantError(t, "expired form", status, raw, 412, "human_input_form_expired")
		status, raw = rawCall(t, p, "POST", "/form/human_input/"+ttoken, `{"inputs":{"comment":"late"},"action":"approve","user":"rev"}`, tkey)
		wantError(t, "expired form submit", status, raw, 412, "human_input_form_expired")
	})
}

// TestHumanInputSurvivesKill kills the server (SIGKILL) while a run is paused at a form: after
// a restart the form still loads and submits and the events operation streams the run to
// workflow_finished. A second run's form times out while no server runs: the restarted
// server's timer resumes it down the __timeout branch.
func TestHumanInputSurvivesKill(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		name := "Review Desk " + strings.ReplaceAll(t.Name(), "/", "-")
		key := exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", name)
		tkey := exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", name+" short", "timeout: 3\n", "timeout: 0.0005\n",
			"timeout_unit: day", "timeout_unit: hour")
		q := marker(t, "the crash post")
		runID, token, conv, _ := hiPause(t, p, key, q, "rev")
		trun, _, tconv, expiration := hiPause(t, p, tkey, marker(t, "the late post"), "rev")
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		// The short form's timeout passes while no server runs.
		for time.Now().Unix() <= expiration {
			time.Sleep(time.Until(time.Unix(expiration+1, 0)))
		}
		p.Start(t)

		status, raw := rawCall(t, p, "GET", "/form/human_input/"+token, "", key)
		if status != 200 || !strings.Contains(string(raw), q) {
			t.Fatalf("form after restart: %d %s", status, raw)
		}
		status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"after the crash"},"action":"reject","user":"rev"}`, key)
		if status != 200 {
			t.Fatalf("submit after restart: %d %s", status, raw)
		}
		evs := hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
		want := "workflow_started node_started(review) human_input_form_filled node_finished(review) message message node_started(no) " +
			"node_finished(no) message_end workflow_finished"
		if got := hiNames(evs); got != want {
			t.Fatalf("resumed stream after restart:\n got %s\nwant %s", got, want)
		}
		if got := hiAnswer(t, p, key, conv, "rev"); got != "Draft for "+q+". Rejected: after the crash" {
			t.Fatalf("answer after restart %q", got)
		}

		evs = hiStream(t, "GET", p.URL+"/workflow/"+trun+"/events?user=rev", "", tkey)
		if got := hiNames(evs); !strings.Contains(got, "human_input_form_timeout") || !strings.HasSuffix(got, "message_end workflow_finished") ||
			evs[len(evs)-1].data()["status"] != "succeeded" {
			t.Fatalf("timed-out stream after restart: %s", got)
		}
		if got := hiAnswer(t, p, tkey, tconv, "rev"); !strings.HasSuffix(got, "Nobody reviewed it in time.") {
			t.Fatalf("timed-out answer %q", got)
		}
	})
}

var (
	formTokenRE  = regexp.MustCompile(`"form_token":"[A-Za-z0-9]+"`)
	expirationRE = regexp.MustCompile(`"expiration_time":\d+`)
)

// hiGolden normalises what a transcript of a paused or resumed run has beyond streamGolden's:
// the form token and the form's expiration time.
func hiGolden(s string) string {
	s = formTokenRE.ReplaceAllString(s, `"form_token":"<token>"`)
	return expirationRE.ReplaceAllString(s, `"expiration_time":<ts>`)
}

// TestHumanInputGolden pins the streams of a paused Chatflow: pause → submit → resume, and
// pause → timeout → the __timeout branch, each as the paused stream and the events stream.
func TestHumanInputGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	for _, tc := range []struct {
		name, file string
		edit       []string
	}{
		{"submit", "human_input_submit", nil},
		{"timeout", "human_input_timeout", []string{"timeout: 3\n", "timeout: 0.0005\n", "timeout_unit: day", "timeout_unit: hour"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", "Golden Review "+tc.name, tc.edit...)
			body := `{"query":"golden post","inputs":{},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
			req, _ := newRequest("POST", p.URL+"/chat-messages", body, key)
			resp, raw := rawDo(t, req)
			token := regexp.MustCompile(`"form_token":"([A-Za-z0-9]+)"`).FindStringSubmatch(string(raw))
			run := regexp.MustCompile(`"workflow_run_id":"([0-9a-f-]+)"`).FindStringSubmatch(string(raw))
			if token == nil || run == nil {
				t.Fatalf("paused stream without a token or a run:\n%s", raw)
			}
			paused := httpTranscript(resp, raw)
			if tc.name == "submit" {
				status, out := rawCall(t, p, "POST", "/form/human_input/"+token[1], `{"inputs":{"comment":"ship it"},"action":"approve","user":"golden"}`, key)
				if status != 200 {
					t.Fatalf("submit: %d %s", status, out)
				}
			}
			req, _ = newRequest("GET", p.URL+"/workflow/"+run[1]+"/events?user=golden", "", key)
			resumed := httpTranscript(rawDo(t, req))
			// Both parts are normalised together, so that ids keep their numbers across them.
			both := normalize(strings.TrimRight(paused, "\n") + "\n\n=== GET /workflow/{workflow_run_id}/events\n\n" + strings.TrimRight(resumed, "\n") + "\n")
			both = toolTimeRE.ReplaceAllString(both, `"$1":<seconds>`)
			both = finishedRE.ReplaceAllString(both, `"finished_at":<ts>`)
			golden(t, tc.file+".sse.golden", hiGolden(both))
		})
	}
}

// TestHumanInputStreams checks the events operation's options and the other ends of a pause on
// both engines: a blocking message that pauses answers with the answer so far; with
// include_state_snapshot the stream first replays the paused run (workflow_started, the answer
// so far, the nodes, the form and workflow_paused); a run that finished before the server
// started yields its one workflow_finished; and the global limit stops a paused run (its form
// then answers 412 expired).
func TestHumanInputStreams(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		name := "Review Desk " + strings.ReplaceAll(t.Name(), "/", "-")
		key := exampleApp(t, p, "../docs/examples/chatflow-review.yml", "Review Desk", name)

		// Blocking: the answer so far.
		q := marker(t, "the blocking post")
		body, _ := json.Marshal(map[string]any{"query": q, "inputs": map[string]any{}, "user": "rev", "response_mode": "blocking"})
		status, raw := rawCall(t, p, "POST", "/chat-messages", string(body), key)
		var blocking struct{ Answer string }
		if status != 200 || json.Unmarshal(raw, &blocking) != nil || blocking.Answer != "Draft for "+q+". " {
			t.Fatalf("blocking pause: %d %s", status, raw)
		}

		// The snapshot of a paused run ends at its workflow_paused.
		runID, token, _, _ := hiPause(t, p, key, marker(t, "the snapshot post"), "rev")
		evs := hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=rev&include_state_snapshot=true", "", key)
		snapshot := "workflow_started message_replace node_started(start) node_finished(start) node_started(draft) node_finished(draft) " +
			"node_started(review) human_input_required workflow_paused"
		if got := hiNames(evs); got != snapshot {
			t.Fatalf("snapshot stream:\n got %s\nwant %s", got, snapshot)
		}
		if evs[0].data()["reason"] != "initial" || !strings.HasPrefix(evs[1]["answer"].(string), "Draft for ") ||
			evs[7].data()["form_token"] != token {
			t.Fatalf("snapshot: %v %v %v", evs[0], evs[1], evs[7])
		}
		// With continue_on_pause the stream waits through the pause for the resumed run.
		done := make(chan []hiEvent, 1)
		go func() {
			evs, _ := hiStreamWithin(t, 2*time.Minute, "GET", p.URL+"/workflow/"+runID+"/events?user=rev&continue_on_pause=true", "", key)
			done <- evs
		}()
		status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"comment":"seen"},"action":"reject","user":"rev"}`, key)
		if status != 200 {
			t.Fatalf("submit: %d %s", status, raw)
		}
		if got := hiNames(<-done); got != "workflow_started node_started(review) human_input_form_filled node_finished(review) message message "+
			"node_started(no) node_finished(no) message_end workflow_finished" {
			t.Fatalf("continued stream: %s", got)
		}

		// After a restart the finished run yields its one workflow_finished; a run paused past
		// the global limit is stopped.
		late, ltoken, _, _ := hiPause(t, p, key, marker(t, "the forgotten post"), "rev")
		p.Restart(t, "HUMAN_INPUT_GLOBAL_TIMEOUT_SECONDS=1")
		evs = hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
		if len(evs) != 1 || evs[0].name() != "workflow_finished" || evs[0].data()["status"] != "succeeded" {
			t.Fatalf("finished run: %s", hiNames(evs))
		}
		// The forgotten run's forms were created under the old limit: pause one more under the
		// new one and wait for the timer to stop it.
		stopped, stoken, _, _ := hiPause(t, p, key, marker(t, "the abandoned post"), "rev")
		eventually(t, "the run stopped by the global limit", func() (bool, any) {
			evs, err := hiStreamWithin(t, time.Second, "GET", p.URL+"/workflow/"+stopped+"/events?user=rev", "", key)
			return err == nil && len(evs) == 1, hiNames(evs)
		})
		status, raw = rawCall(t, p, "GET", "/form/human_input/"+stoken, "", key)
		wantError(t, "form of a stopped run", status, raw, 412, "human_input_form_expired")
		evs = hiStream(t, "GET", p.URL+"/workflow/"+stopped+"/events?user=rev", "", key)
		if len(evs) != 1 || evs[0].name() != "workflow_finished" || evs[0].data()["status"] != "stopped" ||
			!strings.Contains(evs[0].data()["error"].(string), "Human input global timeout at node review") {
			t.Fatalf("stopped run: %v", evs)
		}
		// The run paused before the restart keeps its own deadline and still waits.
		if status, raw := rawCall(t, p, "GET", "/form/human_input/"+ltoken, "", key); status != 200 {
			t.Fatalf("older form: %d %s (run %s)", status, raw, late)
		}
	})
}

// TestHumanInputParallel pauses a run at two forms on parallel branches on both engines. One
// submission resumes the run, which pauses again waiting for the other form only; the second
// submission finishes it. Then, on a second run, both forms are submitted at once: the run ends
// exactly once, with both answers.
func TestHumanInputParallel(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		name := "Two Reviewers " + strings.ReplaceAll(t.Name(), "/", "-")
		key := exampleApp(t, p, "testdata/chatflow-human-input-parallel.yml", "Two Reviewers", name)
		pause := func(q string) (string, map[string]string, string) {
			body, _ := json.Marshal(map[string]any{"query": q, "inputs": map[string]any{}, "user": "rev", "response_mode": "streaming"})
			evs := hiStream(t, "POST", p.URL+"/chat-messages", string(body), key)
			tokens := map[string]string{}
			for _, ev := range evs {
				if ev.name() == "human_input_required" {
					tokens[ev.data()["node_id"].(string)] = ev.data()["form_token"].(string)
				}
			}
			last := evs[len(evs)-1]
			if len(tokens) != 2 || last.name() != "workflow_paused" || len(last.data()["reasons"].([]any)) != 2 {
				t.Fatalf("parallel pause: %s", hiNames(evs))
			}
			return evs[0]["workflow_run_id"].(string), tokens, evs[0]["conversation_id"].(string)
		}
		submit := func(token, note string) {
			status, raw := rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"note":"`+note+`"},"action":"ok","user":"rev"}`, key)
			if status != 200 {
				t.Fatalf("submit: %d %s", status, raw)
			}
		}

		runID, tokens, conv := pause(marker(t, "one by one"))
		submit(tokens["legal"], "fine")
		evs := hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
		last := evs[len(evs)-1]
		if last.name() != "workflow_paused" || !strings.Contains(hiNames(evs), "human_input_form_filled") ||
			len(last.data()["reasons"].([]any)) != 1 || last.data()["paused_nodes"].([]any)[0] != "design" {
			t.Fatalf("after the first form: %s %v", hiNames(evs), last.data())
		}
		status, raw := rawCall(t, p, "GET", "/form/human_input/"+tokens["design"], "", key)
		if status != 200 {
			t.Fatalf("second form: %d %s", status, raw)
		}
		submit(tokens["design"], "pretty")
		eventually(t, "the run finished", func() (bool, any) {
			evs, err := hiStreamWithin(t, 5*time.Second, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
			return err == nil && len(evs) > 0 && evs[len(evs)-1].name() == "workflow_finished", hiNames(evs)
		})
		if got := hiAnswer(t, p, key, conv, "rev"); got != "legal=fine design=pretty" {
			t.Fatalf("answer %q", got)
		}

		// Both at once: one outcome.
		runID, tokens, conv = pause(marker(t, "both at once"))
		done := make(chan struct{})
		go func() {
			defer close(done)
			submit(tokens["design"], "b")
		}()
		submit(tokens["legal"], "a")
		<-done
		eventually(t, "the run finished", func() (bool, any) {
			evs, err := hiStreamWithin(t, 5*time.Second, "GET", p.URL+"/workflow/"+runID+"/events?user=rev", "", key)
			return err == nil && len(evs) > 0 && evs[len(evs)-1].name() == "workflow_finished", hiNames(evs)
		})
		if got := hiAnswer(t, p, key, conv, "rev"); got != "legal=a design=b" {
			t.Fatalf("answer %q", got)
		}
	})
}

// TestHumanInputWorkflowApp pauses a Workflow app's run at a form on both engines: the
// /workflows/run stream ends at workflow_paused (a blocking run answers status paused), the
// form submits, and the events operation streams the rest to workflow_finished with the end
// node's outputs.
func TestHumanInputWorkflowApp(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		name := "Approval Flow " + strings.ReplaceAll(t.Name(), "/", "-")
		key := exampleApp(t, p, "testdata/workflow-human-input.yml", "Approval Flow", name)

		status, raw := rawCall(t, p, "POST", "/workflows/run", `{"inputs":{"topic":"tea"},"user":"wf","response_mode":"blocking"}`, key)
		var blocking struct {
			Data struct{ Status string } `json:"data"`
		}
		if status != 200 || json.Unmarshal(raw, &blocking) != nil || blocking.Data.Status != "paused" {
			t.Fatalf("blocking pause: %d %s", status, raw)
		}

		evs := hiStream(t, "POST", p.URL+"/workflows/run", `{"inputs":{"topic":"cake"},"user":"wf","response_mode":"streaming"}`, key)
		want := "workflow_started node_started(start) node_finished(start) node_started(review) human_input_required workflow_paused"
		if got := hiNames(evs); got != want {
			t.Fatalf("paused stream:\n got %s\nwant %s", got, want)
		}
		token, _ := evs[len(evs)-2].data()["form_token"].(string)
		runID, _ := evs[0]["workflow_run_id"].(string)
		if _, has := evs[0]["conversation_id"]; has || len(token) != 22 {
			t.Fatalf("paused stream: %v %v", evs[0], evs[len(evs)-2])
		}
		status, raw = rawCall(t, p, "GET", "/form/human_input/"+token, "", key)
		if status != 200 || !strings.Contains(string(raw), "Approve cake?") {
			t.Fatalf("form: %d %s", status, raw)
		}
		status, raw = rawCall(t, p, "POST", "/form/human_input/"+token, `{"inputs":{"note":"yum"},"action":"approve","user":"boss"}`, key)
		if status != 200 {
			t.Fatalf("submit: %d %s", status, raw)
		}
		status, raw = rawCall(t, p, "GET", "/workflow/"+runID+"/events?user=other", "", key)
		wantError(t, "another user", status, raw, 404, "not_found")
		evs = hiStream(t, "GET", p.URL+"/workflow/"+runID+"/events?user=wf", "", key)
		want = "workflow_started node_started(review) human_input_form_filled node_finished(review) text_chunk text_chunk text_chunk " +
			"node_started(end) node_finished(end) workflow_finished"
		if got := hiNames(evs); got != want {
			t.Fatalf("resumed stream:\n got %s\nwant %s", got, want)
		}
		fin := evs[len(evs)-1].data()
		outputs, _ := fin["outputs"].(map[string]any)
		if fin["status"] != "succeeded" || outputs["note"] != "yum" || outputs["topic"] != "cake" {
			t.Fatalf("workflow_finished: %v", fin)
		}
		status, raw = rawCall(t, p, "GET", "/workflows/run/"+runID, "", key)
		if status != 200 || !strings.Contains(string(raw), `"status":"succeeded"`) {
			t.Fatalf("run detail: %d %s", status, raw)
		}
	})
}
