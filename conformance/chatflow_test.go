package conformance

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// chatflowDSL is the example Chatflow of docs/examples, named for the test.
func chatflowDSL(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "examples", "chatflow-basic.yml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flow.yml")
	doc := strings.Replace(string(raw), "name: Turn Counter", "name: "+name, 1)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestChatflow imports the example Chatflow and runs it through the generated client on both
// engines: an unpublished import does not run; once published a stream carries the workflow and
// node events in Dify's order with the answer streamed between them, message_end then
// workflow_finished; conversation variables persist from turn to turn and the LLM gets its
// memory; a failing model ends the run with workflow_finished failed then error; workflow_id
// follows the seed's rules; a stop ends the run stopped. Every event is validated against the
// contract.
func TestChatflow(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		name := "Turn Counter " + strings.ReplaceAll(t.Name(), "/", "-")
		path := chatflowDSL(t, name)
		if got := p.CLI(t, "apps", "import", path); got != name {
			t.Fatalf("import printed %q", got)
		}
		key := p.CLI(t, "keys", "create", "--app", name)
		c := newClient(t, p, key)
		q := marker(t, "what is a chatflow")
		body := client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"name": "Ada"}}

		// Imported, not published: the API has no version to run.
		r, err := c.SendChatMessageWithResponse(ctx, nil, body)
		if err != nil {
			t.Fatal(err)
		}
		segErr(t, "unpublished", r.StatusCode(), r.Body, 400, "invalid_param", "Workflow not published")
		p.CLI(t, "apps", "publish", name)

		// The export imports back as the same Chatflow (graph, features, variables), under another
		// name, and exports the same again.
		exported := p.CLI(t, "apps", "export", name)
		if !strings.Contains(exported, "mode: advanced-chat") || !strings.Contains(exported, "conversation_variables:") ||
			!strings.Contains(exported, "opening_statement: Ask me anything.") {
			t.Fatalf("export:\n%s", exported)
		}
		copyPath := filepath.Join(t.TempDir(), "exported.yml")
		if err := os.WriteFile(copyPath, []byte(exported+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := p.CLI(t, "apps", "import", "--name", name+" copy", copyPath); got != name+" copy" {
			t.Fatalf("re-import printed %q", got)
		}
		if again := p.CLI(t, "apps", "export", name+" copy"); again != strings.Replace(exported, "name: "+name, "name: "+name+" copy", 1) {
			t.Fatalf("the re-imported Chatflow exports differently:\n%s\n---\n%s", again, exported)
		}

		// The form of the start node is the app's form.
		par, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
		if err != nil || par.JSON200 == nil || len(par.JSON200.UserInputForm) != 1 || par.JSON200.UserInputForm[0]["text-input"].Variable != "name" ||
			par.JSON200.OpeningStatement != "Ask me anything." {
			t.Fatalf("parameters: %v %s", err, par.Body)
		}
		noName := body
		noName.Inputs = map[string]any{}
		r, err = c.SendChatMessageWithResponse(ctx, nil, noName)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, "missing input", r.StatusCode(), r.Body, 400, "invalid_param")

		upstream.On(q, openaitest.Reply{Chunks: []string{"A graph", " of nodes."}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 4}})
		stream := body
		stream.ResponseMode = ptr(client.Streaming)
		var names []string
		var answer, conv, appID, runID, versionID string
		var fin client.WorkflowFinishedEvent
		nodeStatus := map[string]string{}
		for _, ev := range streamEvents(t, c, stream) {
			n := eventName(t, ev)
			names = append(names, n)
			switch n {
			case "workflow_started":
				ws, _ := ev.AsWorkflowStartedEvent()
				runID = ws.WorkflowRunId.String()
				if ws.Data.Id.String() != runID || ws.Data.Reason == nil || *ws.Data.Reason != "initial" || ws.Data.Inputs["name"] != "Ada" {
					t.Fatalf("workflow_started %+v", ws)
				}
				appID, _ = ws.Data.Inputs["sys.app_id"].(string)
				versionID = ws.Data.WorkflowId
			case "node_started":
				ns, _ := ev.AsNodeStartedEvent()
				if ns.WorkflowRunId.String() != runID {
					t.Fatalf("node_started of another run: %+v", ns)
				}
				names[len(names)-1] += "(" + ns.Data.NodeType + ")"
			case "node_finished":
				nf, _ := ev.AsNodeFinishedEvent()
				nodeStatus[nf.Data.NodeType] = string(nf.Data.Status)
				names[len(names)-1] += "(" + nf.Data.NodeType + ")"
			case "message":
				m, _ := ev.AsMessageEvent()
				answer += m.Answer
				conv = m.ConversationId.String()
			case "workflow_finished":
				fin, _ = ev.AsWorkflowFinishedEvent()
			}
		}
		want := "workflow_started message message node_started(start) node_finished(start) message message node_started(assigner) node_finished(assigner) " +
			"node_started(llm) message message node_finished(llm) node_started(answer) node_finished(answer) message_end workflow_finished"
		if got := strings.Join(names, " "); got != want {
			t.Fatalf("events\n got %s\nwant %s", got, want)
		}
		if answer != "Hi Ada: A graph of nodes." {
			t.Fatalf("answer %q", answer)
		}
		if fin.Data.Status != "succeeded" || fin.Data.TotalSteps != 4 || fin.Data.TotalTokens != 24 || fin.Data.Id.String() != runID {
			t.Fatalf("workflow_finished %+v", fin.Data)
		}
		for typ, st := range nodeStatus {
			if st != "succeeded" {
				t.Fatalf("node %s ended %s", typ, st)
			}
		}
		sysOf := func(query string) (string, []providers.Message) {
			t.Helper()
			for _, req := range upstream.Requests() {
				if req.LastUserMessage() == query {
					return req.Messages[0].Text(), req.Messages
				}
			}
			t.Fatalf("no model call saw %q", query)
			return "", nil
		}
		if sys, _ := sysOf(q); sys != "You help Ada. This is turn 1." {
			t.Fatalf("system prompt %q", sys)
		}

		// The next turn: the conversation variable counted on, the memory holds the first turn,
		// and the blocking reply is the streamed answer.
		q2 := marker(t, "and a node")
		upstream.On(q2, openaitest.Reply{Chunks: []string{"One step."}})
		next := body
		next.Query, next.ConversationId = q2, &conv
		br, err := c.SendChatMessageWithResponse(ctx, nil, next)
		if err != nil || br.JSON200 == nil {
			t.Fatalf("blocking: %v %s", err, br.Body)
		}
		if br.JSON200.Answer != "Hi Ada: One step." || br.JSON200.Mode != client.AppModeAdvancedChat || br.JSON200.ConversationId.String() != conv {
			t.Fatalf("blocking reply %+v", br.JSON200)
		}
		sys, msgs := sysOf(q2)
		if sys != "You help Ada. This is turn 2." || len(msgs) != 4 || msgs[1].Text() != q || msgs[2].Text() != "Hi Ada: A graph of nodes." {
			t.Fatalf("second prompt: %q %+v", sys, msgs)
		}

		// A model that fails ends the run: workflow_finished failed, then error, no message_end.
		q3 := marker(t, "fail please")
		upstream.On(q3, openaitest.Reply{Status: 500, ErrorMessage: "upstream broke"})
		failing := stream
		failing.Query = q3
		names = names[:0]
		var errEv client.ErrorEvent
		for _, ev := range streamEvents(t, c, failing) {
			n := eventName(t, ev)
			names = append(names, n)
			switch n {
			case "workflow_finished":
				fin, _ = ev.AsWorkflowFinishedEvent()
			case "error":
				errEv, _ = ev.AsErrorEvent()
			}
		}
		if got := strings.Join(names[len(names)-2:], " "); got != "workflow_finished error" || strings.Contains(strings.Join(names, " "), "message_end") {
			t.Fatalf("failed run events %v", names)
		}
		if fin.Data.Status != "failed" || fin.Data.Error == nil || errEv.Code != "invalid_param" || errEv.Status != 400 ||
			!strings.HasPrefix(errEv.Message, "Run failed: node 1711000000003 (LLM):") {
			t.Fatalf("failed run: %+v %+v", fin.Data, errEv)
		}

		// workflow_id: malformed and the draft's id are bad requests, an unknown id is not found.
		for _, tc := range []struct {
			id     string
			status int
			code   string
		}{{"not-a-uuid", 400, "bad_request"}, {appID, 400, "bad_request"}, {"0b7f3f0e-9a43-4b6e-9a55-5f1f0f3d2c11", 404, "not_found"}} {
			pinned := body
			pinned.WorkflowId = ptr(tc.id)
			r, err := c.SendChatMessageWithResponse(ctx, nil, pinned)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "workflow_id "+tc.id, r.StatusCode(), r.Body, tc.status, tc.code)
		}

		// Stop: the LLM hangs after its first chunk, which the answer streams; the stop ends the run
		// stopped, workflow_finished before message_end.
		q4 := marker(t, "never ending story")
		upstream.On(q4, openaitest.Reply{Chunks: []string{"Once", " upon"}, HangAfterChunks: 1})
		resp, err := c.SendChatMessage(ctx, nil, client.SendChatMessageJSONRequestBody{Query: q4, User: "u1",
			Inputs: map[string]any{"name": "Ada"}, ResponseMode: ptr(client.Streaming)})
		if err != nil {
			t.Fatal(err)
		}
		events, err := client.NewEventStream(resp)
		if err != nil {
			t.Fatal(err)
		}
		defer events.Close()
		var task string
		for events.Next() {
			if eventName(t, events.Event()) == "message" {
				m, _ := events.Event().AsMessageEvent()
				if m.Answer == "Once" {
					task = m.TaskId.String()
					break
				}
			}
		}
		if task == "" {
			t.Fatalf("no chunk before the hang: %v", events.Err())
		}
		if st, err := c.StopChatMessageWithResponse(ctx, task, client.StopChatMessageJSONRequestBody{User: "u1"}); err != nil || st.JSON200 == nil {
			t.Fatalf("stop: %v", err)
		}
		var after []string
		var stopped client.WorkflowFinishedEvent
		for events.Next() {
			n := eventName(t, events.Event())
			after = append(after, n)
			if n == "workflow_finished" {
				stopped, _ = events.Event().AsWorkflowFinishedEvent()
			}
		}
		if len(after) < 2 || after[len(after)-2] != "workflow_finished" || after[len(after)-1] != "message_end" || stopped.Data.Status != "stopped" {
			t.Fatalf("after stop: %v %+v (%v)", after, stopped.Data, events.Err())
		}

		// By default the published version may be pinned; with PARLEY_WORKFLOW_VERSION_EXECUTION
		// set to not_allowed (Dify's hosted free plan) any workflow_id is refused with 403, and a
		// message without one still runs the latest published version.
		q5 := marker(t, "pinned version")
		upstream.On(q5, openaitest.Reply{Chunks: []string{"Pinned."}})
		pinned := body
		pinned.Query, pinned.WorkflowId = q5, ptr(versionID)
		if r, err := c.SendChatMessageWithResponse(ctx, nil, pinned); err != nil || r.JSON200 == nil || r.JSON200.Answer != "Hi Ada: Pinned." {
			t.Fatalf("pinned %s: %v %d %s", versionID, err, r.StatusCode(), r.Body)
		}
		p.Restart(t, "PARLEY_WORKFLOW_VERSION_EXECUTION=not_allowed")
		c = newClient(t, p, key)
		for _, id := range []string{versionID, "not-a-uuid", appID} {
			pinned.WorkflowId = ptr(id)
			r, err := c.SendChatMessageWithResponse(ctx, nil, pinned)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "refused workflow_id "+id, r.StatusCode(), r.Body, 403, "workflow_version_execution_not_allowed")
		}
		pinned.WorkflowId = nil
		if r, err := c.SendChatMessageWithResponse(ctx, nil, pinned); err != nil || r.JSON200 == nil || r.JSON200.Answer != "Hi Ada: Pinned." {
			t.Fatalf("unpinned with versions refused: %v %d %s", err, r.StatusCode(), r.Body)
		}
	})
}

var finishedRE = regexp.MustCompile(`"finished_at":\d+`)

// TestChatflowGolden pins the bytes of a Chatflow events.
func TestChatflowGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	name := "Golden Flow"
	p.CLI(t, "apps", "import", "--publish", chatflowDSL(t, name))
	key := p.CLI(t, "keys", "create", "--app", name)
	q := "golden chatflow"
	upstream.On(q, openaitest.Reply{Chunks: []string{"Hello", " there", "!"}, Usage: &providers.Usage{PromptTokens: 24, CompletionTokens: 3}})
	body := `{"query":"` + q + `","inputs":{"name":"Ada"},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
	got := streamGolden(t, p, key, body)
	golden(t, "chatflow_streaming.sse.golden", got)
}
