package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// workflowExample is the example Workflow app of docs/examples.
var workflowExample = filepath.Join("..", "docs", "examples", "workflow-basic.yml")

// timestampRE matches a Workflow app's sys.timestamp, which goldens normalise.
var timestampRE = regexp.MustCompile(`"sys\.timestamp":\d+`)

// workflowStream runs body on the app of c in streaming mode and reads the whole stream.
func workflowStream(t *testing.T, c *client.ClientWithResponses, body client.RunWorkflowJSONRequestBody) []client.WorkflowStreamEvent {
	t.Helper()
	body.ResponseMode = ptr(client.WorkflowStreaming)
	resp, err := c.RunWorkflow(context.Background(), nil, body)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.NewWorkflowEventStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var evs []client.WorkflowStreamEvent
	for stream.Next() {
		evs = append(evs, stream.Event())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func workflowEventName(t *testing.T, ev client.WorkflowStreamEvent) string {
	t.Helper()
	name, err := ev.Discriminator()
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestWorkflowApp imports the example Workflow app and drives every operation of the Workflow
// Runs group through the generated client on both engines: an unpublished app does not run; the
// export imports back; blocking and streaming runs (text_chunk from the end node's outputs,
// workflow_finished with its outputs); the run's detail; a pinned version and its bad ids; a
// failing model (a 200 whose run failed, no error event); a stop; the logs and their filters; and
// the mode errors both ways. Every event and body is validated against the contract.
func TestWorkflowApp(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		name := "Topic Writer " + strings.ReplaceAll(t.Name(), "/", "-")
		raw, err := os.ReadFile(workflowExample)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "flow.yml")
		if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "name: Topic Writer", "name: "+name, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := p.CLI(t, "apps", "import", path); got != name {
			t.Fatalf("import printed %q", got)
		}
		key := p.CLI(t, "keys", "create", "--app", name)
		c := newClient(t, p, key)
		topic := marker(t, "tides")
		body := client.RunWorkflowJSONRequestBody{Inputs: map[string]any{"topic": topic}, User: "wf-user"}

		r, err := c.RunWorkflowWithResponse(ctx, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		segErr(t, "unpublished", r.StatusCode(), r.Body, 400, "invalid_param", "Workflow not published")
		p.CLI(t, "apps", "publish", name)

		// The export imports back and exports the same again.
		exported := p.CLI(t, "apps", "export", name)
		if !strings.Contains(exported, "mode: workflow") || !strings.Contains(exported, "type: end") {
			t.Fatalf("export:\n%s", exported)
		}
		copyPath := filepath.Join(t.TempDir(), "exported.yml")
		if err := os.WriteFile(copyPath, []byte(exported+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p.CLI(t, "apps", "import", "--name", name+" copy", copyPath)
		if again := p.CLI(t, "apps", "export", name+" copy"); again != strings.Replace(exported, "name: "+name, "name: "+name+" copy", 1) {
			t.Fatalf("the re-imported Workflow app exports differently:\n%s\n---\n%s", again, exported)
		}

		// Parameters and info: the start node's form, the mode.
		par, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
		if err != nil || par.JSON200 == nil || len(par.JSON200.UserInputForm) != 1 || par.JSON200.UserInputForm[0]["text-input"].Variable != "topic" {
			t.Fatalf("parameters: %v %s", err, par.Body)
		}
		info, err := c.GetAppInfoWithResponse(ctx, &client.GetAppInfoParams{})
		if err != nil || info.JSON200 == nil || info.JSON200.Mode != "workflow" {
			t.Fatalf("info: %v %s", err, info.Body)
		}

		// Bad inputs: a missing required input, no user, no inputs at all.
		for what, b := range map[string]string{
			"missing input": `{"inputs":{},"user":"wf-user"}`,
			"no user":       `{"inputs":{"topic":"x"}}`,
			"empty user":    `{"inputs":{"topic":"x"},"user":""}`,
			"no inputs":     `{"user":"wf-user"}`,
			"bad mode":      `{"inputs":{"topic":"x"},"user":"wf-user","response_mode":"fast"}`,
		} {
			status, raw := rawCall(t, p, "POST", "/workflows/run", b, key)
			wantError(t, what, status, raw, 400, "invalid_param")
		}

		// Blocking: the finished run.
		upstream.On(topic, openaitest.Reply{Chunks: []string{"Tides rise.", " Tides fall."}, Usage: &providers.Usage{PromptTokens: 12, CompletionTokens: 5}})
		r, err = c.RunWorkflowWithResponse(ctx, nil, body)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("blocking: %v %s", err, r.Body)
		}
		d := r.JSON200.Data
		wantHeading := "# " + strings.ToUpper(topic)
		if d.Status != "succeeded" || d.Error != nil || d.TotalSteps != 4 || d.TotalTokens != 17 || d.Id != r.JSON200.WorkflowRunId ||
			(*d.Outputs)["text"] != "Tides rise. Tides fall." || (*d.Outputs)["heading"] != wantHeading {
			t.Fatalf("blocking run %+v %v", d, d.Outputs)
		}
		blockingRun := r.JSON200.WorkflowRunId.String()

		// Streaming: node events, the end node's outputs as text_chunk, workflow_finished.
		var names []string
		var text, runID, versionID, appID string
		var fin client.WorkflowAppFinishedEvent
		for _, ev := range workflowStream(t, c, body) {
			n := workflowEventName(t, ev)
			switch n {
			case "workflow_started":
				ws, _ := ev.AsWorkflowAppStartedEvent()
				runID, versionID = ws.WorkflowRunId.String(), ws.Data.WorkflowId
				appID, _ = ws.Data.Inputs["sys.app_id"].(string)
				ts, _ := ws.Data.Inputs["sys.timestamp"].(float64)
				if _, has := ws.Data.Inputs["sys.conversation_id"]; has || ws.Data.Inputs["topic"] != topic || ts < float64(time.Now().Add(-time.Hour).Unix()) {
					t.Fatalf("workflow_started inputs %v", ws.Data.Inputs)
				}
			case "node_started", "node_finished":
				ne, _ := ev.AsWorkflowAppNodeEvent()
				n += "(" + fmt.Sprint(ne.Data["node_type"]) + ")"
				if ne.WorkflowRunId.String() != runID {
					t.Fatalf("%s of another run", n)
				}
			case "text_chunk":
				tc, _ := ev.AsTextChunkEvent()
				text += tc.Data.Text
			case "workflow_finished":
				fin, _ = ev.AsWorkflowAppFinishedEvent()
			}
			if len(names) == 0 || names[len(names)-1] != n || n != "text_chunk" {
				names = append(names, n)
			}
		}
		want := "workflow_started node_started(start) node_finished(start) node_started(template-transform) node_finished(template-transform) " +
			"node_started(llm) text_chunk node_finished(llm) text_chunk node_started(end) node_finished(end) workflow_finished"
		if got := strings.Join(names, " "); got != want {
			t.Fatalf("events\n got %s\nwant %s", got, want)
		}
		if text != "Tides rise. Tides fall.\n"+wantHeading {
			t.Fatalf("text %q", text)
		}
		if fin.Data.Status != "succeeded" || fin.Data.Id.String() != runID || (*fin.Data.Outputs)["text"] != "Tides rise. Tides fall." {
			t.Fatalf("workflow_finished %+v", fin.Data)
		}

		// The run's detail; unknown, malformed and foreign ids are not found.
		got, err := c.GetWorkflowRunWithResponse(ctx, runID)
		if err != nil || got.JSON200 == nil {
			t.Fatalf("run detail: %v %s", err, got.Body)
		}
		var inputs map[string]any
		if err := json.Unmarshal([]byte(got.JSON200.Inputs), &inputs); err != nil || inputs["topic"] != topic ||
			got.JSON200.Status != "succeeded" || got.JSON200.Outputs["heading"] != wantHeading || got.JSON200.FinishedAt == nil ||
			got.JSON200.WorkflowId != versionID || got.JSON200.TotalSteps != 4 {
			t.Fatalf("run detail %s (%v)", got.Body, err)
		}
		for _, id := range []string{"not-a-uuid", "0b7f3f0e-9a43-4b6e-9a55-5f1f0f3d2c11"} {
			got, err := c.GetWorkflowRunWithResponse(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "run "+id, got.StatusCode(), got.Body, 404, "not_found")
		}
		copyKey := p.CLI(t, "keys", "create", "--app", name+" copy")
		status, rawBody := rawCall(t, p, "GET", "/workflows/run/"+runID, "", copyKey)
		wantError(t, "another app's run", status, rawBody, 404, "not_found")

		// A pinned version runs; the seed's rules for a bad workflow_id.
		pinned, err := c.RunWorkflowVersionWithResponse(ctx, versionID, nil, body)
		if err != nil || pinned.JSON200 == nil || pinned.JSON200.Data.WorkflowId != versionID || pinned.JSON200.Data.Status != "succeeded" {
			t.Fatalf("pinned: %v %s", err, pinned.Body)
		}
		for _, tc := range []struct {
			id     string
			status int
			code   string
		}{{"not-a-uuid", 400, "bad_request"}, {appID, 400, "bad_request"}, {"0b7f3f0e-9a43-4b6e-9a55-5f1f0f3d2c11", 404, "not_found"}} {
			r, err := c.RunWorkflowVersionWithResponse(ctx, tc.id, nil, body)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "workflow_id "+tc.id, r.StatusCode(), r.Body, tc.status, tc.code)
		}

		// The one path both /workflows/run/{id} and /workflows/{id}/run match: a POST is a run of
		// the version "run" (malformed); the contract's router takes a GET for the same path, so
		// it is refused 405 rather than Dify's 404 — a 4xx with the error body either way.
		status, rawBody = rawCall(t, p, "POST", "/workflows/run/run", `{"inputs":{"topic":"x"},"user":"u"}`, key)
		wantError(t, "POST /workflows/run/run", status, rawBody, 400, "bad_request")
		status, rawBody = rawCall(t, p, "GET", "/workflows/run/run", "", key)
		wantError(t, "GET /workflows/run/run", status, rawBody, 405, "method_not_allowed")

		// A failing model: the run fails, reported in the reply (blocking) or in workflow_finished
		// (streaming) and never as an error event.
		broken := marker(t, "broken")
		upstream.On(broken, openaitest.Reply{Status: 500, ErrorMessage: "down"})
		failBody := client.RunWorkflowJSONRequestBody{Inputs: map[string]any{"topic": broken}, User: "other-user"}
		r, err = c.RunWorkflowWithResponse(ctx, nil, failBody)
		if err != nil || r.JSON200 == nil || r.JSON200.Data.Status != "failed" || r.JSON200.Data.Error == nil {
			t.Fatalf("failed blocking run: %v %s", err, r.Body)
		}
		evs := workflowStream(t, c, failBody)
		last, _ := evs[len(evs)-1].AsWorkflowAppFinishedEvent()
		if workflowEventName(t, evs[len(evs)-1]) != "workflow_finished" || last.Data.Status != "failed" || last.Data.Error == nil {
			t.Fatalf("failed stream ends %s %+v", workflowEventName(t, evs[len(evs)-1]), last.Data)
		}
		for _, ev := range evs {
			if workflowEventName(t, ev) == "error" {
				t.Fatal("a failed run sent an error event")
			}
		}

		// Stop: the LLM hangs after its first chunk; a stop by any user ends the run stopped.
		events := hangingWorkflow(t, c, marker(t, "endless"), "wf-user")
		var task, stoppedRun string
		for events.Next() {
			if workflowEventName(t, events.Event()) == "text_chunk" {
				tc, _ := events.Event().AsTextChunkEvent()
				task, stoppedRun = tc.TaskId.String(), tc.WorkflowRunId.String()
				break
			}
		}
		if task == "" {
			t.Fatalf("no chunk before the hang: %v", events.Err())
		}
		// Another app's key does not stop it; the route checks the mode.
		status, rawBody = rawCall(t, p, "POST", "/workflows/tasks/"+task+"/stop", `{"user":"wf-user"}`, p.AppKey)
		wantError(t, "stop on a chat app", status, rawBody, 400, "not_workflow_app")
		status, rawBody = rawCall(t, p, "POST", "/workflows/tasks/"+task+"/stop", `{}`, key)
		wantError(t, "stop without user", status, rawBody, 400, "invalid_param")
		if st, err := c.StopWorkflowTaskWithResponse(ctx, task, client.StopWorkflowTaskJSONRequestBody{User: "someone-else"}); err != nil || st.JSON200 == nil {
			t.Fatalf("stop: %v", err)
		}
		var after []string
		var stopped client.WorkflowAppFinishedEvent
		for events.Next() {
			n := workflowEventName(t, events.Event())
			after = append(after, n)
			if n == "workflow_finished" {
				stopped, _ = events.Event().AsWorkflowAppFinishedEvent()
			}
		}
		if len(after) == 0 || after[len(after)-1] != "workflow_finished" || stopped.Data.Status != "stopped" {
			t.Fatalf("after stop: %v %+v (%v)", after, stopped.Data, events.Err())
		}
		if got, err := c.GetWorkflowRunWithResponse(ctx, stoppedRun); err != nil || got.JSON200 == nil || got.JSON200.Status != "stopped" {
			t.Fatalf("stopped run: %v %s", err, got.Body)
		}
		// An unknown task is no error, as in Dify.
		if st, err := c.StopWorkflowTaskWithResponse(ctx, "no-such-task", client.StopWorkflowTaskJSONRequestBody{User: "u"}); err != nil || st.JSON200 == nil {
			t.Fatalf("stop unknown: %v", err)
		}

		// Logs: every run, newest first, with Dify's filters and pages.
		logs := func(params client.ListWorkflowLogsParams) *client.WorkflowLogList {
			t.Helper()
			l, err := c.ListWorkflowLogsWithResponse(ctx, &params)
			if err != nil || l.JSON200 == nil {
				t.Fatalf("logs %+v: %v %s", params, err, l.Body)
			}
			return l.JSON200
		}
		all := logs(client.ListWorkflowLogsParams{})
		// blocking, streaming, pinned, failed ×2, stopped.
		if all.Total != 6 || len(all.Data) != 6 || all.Page != 1 || all.Limit != 20 || all.HasMore ||
			all.Data[0].WorkflowRun.Id.String() != stoppedRun || all.Data[0].WorkflowRun.Status != "stopped" ||
			all.Data[5].WorkflowRun.Id.String() != blockingRun || all.Data[5].WorkflowRun.Version != "1" ||
			all.Data[5].CreatedByEndUser.SessionId != "wf-user" || all.Data[5].CreatedFrom != "service-api" {
			t.Fatalf("logs %+v", all)
		}
		if l := logs(client.ListWorkflowLogsParams{Status: ptr(client.ListWorkflowLogsParamsStatusFailed)}); l.Total != 2 {
			t.Fatalf("failed logs %+v", l)
		}
		if l := logs(client.ListWorkflowLogsParams{CreatedByEndUserSessionId: ptr("other-user")}); l.Total != 2 ||
			l.Data[0].WorkflowRun.Status != "failed" {
			t.Fatalf("other-user logs %+v", l)
		}
		if l := logs(client.ListWorkflowLogsParams{Keyword: ptr(strings.ToUpper(broken))}); l.Total != 2 {
			t.Fatalf("keyword logs %+v", l)
		}
		if l := logs(client.ListWorkflowLogsParams{Page: ptr(2), Limit: ptr(4)}); l.Total != 6 || len(l.Data) != 2 || l.HasMore ||
			l.Data[1].WorkflowRun.Id.String() != blockingRun {
			t.Fatalf("page 2 %+v", l)
		}
		if l := logs(client.ListWorkflowLogsParams{Limit: ptr(5)}); !l.HasMore || len(l.Data) != 5 {
			t.Fatalf("page 1 of 5 %+v", l)
		}
		future := time.Now().Add(time.Hour)
		if l := logs(client.ListWorkflowLogsParams{CreatedAtAfter: &future}); l.Total != 0 || l.Data == nil {
			t.Fatalf("after logs %+v", l)
		}
		if l := logs(client.ListWorkflowLogsParams{CreatedAtBefore: &future}); l.Total != 6 {
			t.Fatalf("before logs %+v", l)
		}
		for what, q := range map[string]string{
			"limit 0": "limit=0", "limit 101": "limit=101", "page 0": "page=0", "status": "status=running",
			"date": "created_at__before=yesterday", "account": "created_by_account=a%40example.com",
		} {
			status, raw := rawCall(t, p, "GET", "/workflows/logs?"+q, "", key)
			wantError(t, "logs "+what, status, raw, 400, "invalid_param")
		}

		// Mode errors: the chat and completion routes refuse a Workflow app; the Workflow routes
		// refuse the others (a Chatflow's runs and logs can be read).
		for _, tc := range []struct{ method, path, body, code string }{
			{"POST", "/chat-messages", `{"query":"hi","inputs":{},"user":"u"}`, "not_chat_app"},
			{"GET", "/conversations?user=u", "", "not_chat_app"},
			{"GET", "/messages?user=u&conversation_id=0b7f3f0e-9a43-4b6e-9a55-5f1f0f3d2c11", "", "not_chat_app"},
			{"POST", "/completion-messages", `{"inputs":{},"user":"u"}`, "app_unavailable"},
		} {
			status, raw := rawCall(t, p, tc.method, tc.path, tc.body, key)
			wantError(t, tc.path+" on a workflow app", status, raw, 400, tc.code)
		}
		for _, tc := range []struct{ method, path, body string }{
			{"POST", "/workflows/run", `{"inputs":{},"user":"u"}`},
			{"POST", "/workflows/" + versionID + "/run", `{"inputs":{},"user":"u"}`},
			{"GET", "/workflows/run/" + runID, ""},
			{"GET", "/workflows/logs", ""},
		} {
			status, raw := rawCall(t, p, tc.method, tc.path, tc.body, p.AppKey)
			wantError(t, tc.path+" on a chat app", status, raw, 400, "not_workflow_app")
		}
	})
}

// TestWorkflowAppGolden pins a Workflow app's run blocking, streaming, and stopped while its
// LLM streams.
func TestWorkflowAppGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	key := exampleApp(t, p, workflowExample, "Topic Writer", "Golden Topic Writer")
	upstream.On("golden tides", openaitest.Reply{Chunks: []string{"Tides rise.", " Tides fall."}, Usage: &providers.Usage{PromptTokens: 12, CompletionTokens: 5}})
	upstream.On("golden endless", openaitest.Reply{Chunks: []string{"Once", " upon"}, HangAfterChunks: 1})

	t.Run("blocking", func(t *testing.T) {
		status, raw := rawCall(t, p, "POST", "/workflows/run", `{"inputs":{"topic":"golden tides"},"user":"golden","response_mode":"blocking"}`, key)
		got := fmt.Sprintf("HTTP %d\n\n%s\n", status, raw)
		got = finishedRE.ReplaceAllString(toolTimeRE.ReplaceAllString(normalize(got), `"$1":<seconds>`), `"finished_at":<ts>`)
		golden(t, "workflow_blocking.json.golden", got)
	})
	t.Run("streaming", func(t *testing.T) {
		got := streamGoldenAt(t, p, "/workflows/run", key, `{"inputs":{"topic":"golden tides"},"user":"golden","response_mode":"streaming"}`)
		golden(t, "workflow_streaming.sse.golden", timestampRE.ReplaceAllString(got, `"sys.timestamp":<ts>`))
	})
	t.Run("stopped", func(t *testing.T) {
		req, _ := newRequest("POST", p.URL+"/workflows/run", `{"inputs":{"topic":"golden endless"},"user":"golden","response_mode":"streaming"}`, key)
		resp, err := newContractClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		fmt.Fprintf(&b, "HTTP %d %s\n\n", resp.StatusCode, resp.Header.Get("Content-Type"))
		br := bufio.NewReader(resp.Body)
		stopped := false
		for {
			line, err := br.ReadString('\n')
			b.WriteString(line)
			if rest, ok := strings.CutPrefix(line, "data: "); ok && !stopped && strings.Contains(rest, `"event":"text_chunk"`) {
				var ev struct {
					TaskID string `json:"task_id"`
				}
				if err := json.Unmarshal([]byte(rest), &ev); err != nil {
					t.Fatal(err)
				}
				if status, raw := rawCall(t, p, "POST", "/workflows/tasks/"+ev.TaskID+"/stop", `{"user":"golden"}`, key); status != 200 {
					t.Fatalf("stop: %d %s", status, raw)
				}
				stopped = true
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		got := normalize(strings.TrimRight(b.String(), "\n") + "\n")
		got = finishedRE.ReplaceAllString(toolTimeRE.ReplaceAllString(got, `"$1":<seconds>`), `"finished_at":<ts>`)
		golden(t, "workflow_stopped.sse.golden", timestampRE.ReplaceAllString(got, `"sys.timestamp":<ts>`))
	})
}

// TestWorkflowRunsOfChatflow: a Chatflow's runs are read through GET /workflows/run/{id}, as
// Dify serves it for both kinds; its logs are empty (its runs are logged as messages), and the
// operations that run or stop a Workflow app refuse it with not_workflow_app.
func TestWorkflowRunsOfChatflow(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	ctx := context.Background()
	key := exampleApp(t, p, filepath.Join("..", "docs", "examples", "chatflow-basic.yml"), "Turn Counter", "Runs Turn Counter")
	c := newClient(t, p, key)
	q := marker(t, "runs of a chatflow")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Read", " back."}})
	var runID, taskID string
	for _, ev := range streamEvents(t, c, client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"name": "Ada"},
		ResponseMode: ptr(client.Streaming)}) {
		if eventName(t, ev) == "workflow_started" {
			ws, _ := ev.AsWorkflowStartedEvent()
			runID, taskID = ws.WorkflowRunId.String(), ws.TaskId.String()
		}
	}
	got, err := c.GetWorkflowRunWithResponse(ctx, runID)
	if err != nil || got.JSON200 == nil || got.JSON200.Status != "succeeded" || got.JSON200.TotalSteps != 4 ||
		!strings.Contains(got.JSON200.Inputs, q) {
		t.Fatalf("a Chatflow's run: %v %s", err, got.Body)
	}
	logs, err := c.ListWorkflowLogsWithResponse(ctx, &client.ListWorkflowLogsParams{})
	if err != nil || logs.JSON200 == nil || logs.JSON200.Total != 0 || len(logs.JSON200.Data) != 0 {
		t.Fatalf("a Chatflow's logs: %v %s", err, logs.Body)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/workflows/run", `{"inputs":{"name":"Ada"},"user":"u1"}`},
		{"POST", "/workflows/tasks/" + taskID + "/stop", `{"user":"u1"}`},
	} {
		status, raw := rawCall(t, p, tc.method, tc.path, tc.body, key)
		wantError(t, tc.path+" on a Chatflow", status, raw, 400, "not_workflow_app")
	}
}

// TestWorkflowRunKilledMidStream kills the server (SIGKILL) while a Workflow app's LLM streams.
// After a restart the run, left running by the dead process, ends failed with the interruption's
// error, through the same sweep as a chat message's, and the logs show it so.
func TestWorkflowRunKilledMidStream(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		key := exampleApp(t, p, workflowExample, "Topic Writer", "Killed Topic Writer "+p.engine.Name)
		c := newClient(t, p, key)
		stream := hangingWorkflow(t, c, marker(t, "an endless topic"), "kim")
		var runID string
		for runID == "" {
			if !stream.Next() {
				t.Fatalf("stream ended: %v", stream.Err())
			}
			if workflowEventName(t, stream.Event()) == "text_chunk" {
				tc, _ := stream.Event().AsTextChunkEvent()
				runID = tc.WorkflowRunId.String()
			}
		}
		if got, err := c.GetWorkflowRunWithResponse(ctx, runID); err != nil || got.JSON200 == nil || got.JSON200.Status != "running" ||
			got.JSON200.FinishedAt != nil {
			t.Fatalf("a running run: %v %s", err, got.Body)
		}
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		p.Start(t, "PARLEY_RUN_STALE_AFTER=2s")
		c = newClient(t, p, key)
		eventually(t, "the interrupted run to end", func() (bool, any) {
			got, err := c.GetWorkflowRunWithResponse(ctx, runID)
			return err == nil && got.JSON200 != nil && got.JSON200.Status == "failed", string(got.Body)
		})
		got, _ := c.GetWorkflowRunWithResponse(ctx, runID)
		if got.JSON200.Error == nil || *got.JSON200.Error != interruptedError || got.JSON200.FinishedAt == nil {
			t.Fatalf("after restart: %s", got.Body)
		}
		logs, err := c.ListWorkflowLogsWithResponse(ctx, &client.ListWorkflowLogsParams{Status: ptr(client.ListWorkflowLogsParamsStatusFailed)})
		if err != nil || logs.JSON200 == nil || logs.JSON200.Total != 1 || logs.JSON200.Data[0].WorkflowRun.Id.String() != runID {
			t.Fatalf("logs: %v %s", err, logs.Body)
		}
	})
}

// hangingWorkflow starts a streamed run, for user, of a Topic Writer whose model hangs after its
// first chunk on topic, and returns its event stream, closed when t ends.
func hangingWorkflow(t *testing.T, c *client.ClientWithResponses, topic, user string) *client.WorkflowEventStream {
	t.Helper()
	upstream.On(topic, openaitest.Reply{Chunks: []string{"Once", " upon"}, HangAfterChunks: 1})
	resp, err := c.RunWorkflow(context.Background(), nil, client.RunWorkflowJSONRequestBody{Inputs: map[string]any{"topic": topic}, User: user,
		ResponseMode: ptr(client.WorkflowStreaming)})
	if err != nil {
		t.Fatal(err)
	}
	events, err := client.NewWorkflowEventStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { events.Close() })
	return events
}
