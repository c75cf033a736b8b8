package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// TestChatflowTools imports the example Chatflow with tool nodes and an agent node on both
// engines. Before its API tool is registered the import is refused, naming the node; once it
// is, a turn runs the built-in tool with its form settings and a mixed parameter, the API tool
// whose PNG is a file output with a signed link, and the agent node whose model calls a
// built-in tool and two operations of the API (one answering a PNG, a file output of the agent
// too) and then answers: its rounds and calls are agent_log
// events without workflow_run_id, and its text streams into the answer. Every event is
// validated against the contract by the server. An LLM node with reasoning_format separated
// streams its model's <think> block as reasoning_chunk events, not in the answer.
func TestChatflowTools(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		raw, err := os.ReadFile(filepath.Join("testdata", "chatflow-tools.yml"))
		if err != nil {
			t.Fatal(err)
		}
		name := "Tool Desk " + strings.ReplaceAll(t.Name(), "/", "-")
		path := filepath.Join(t.TempDir(), "flow.yml")
		if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "name: Tool Desk", "name: "+name, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		api := toolregtest.NewAPI(t)
		p.Restart(t, allowLoopback)
		if _, stderr, err := p.cliOut("apps", "import", "--strict", path); err == nil ||
			!strings.Contains(stderr, `node chart: tool "getChart" of provider "inventory" (api) is not available on this server`) ||
			!strings.Contains(stderr, `node clerk: tool "getItem" of provider "inventory" (api) is not available on this server`) {
			t.Fatalf("import before registration: %v\n%s", err, stderr)
		}
		addInventory(t, p, api)
		p.CLI(t, "apps", "import", "--publish", path)
		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", name))

		q := marker(t, "how many widgets")
		upstream.OnEach(q, openaitest.Reply{ToolCalls: []providers.ToolCall{
			{Name: "eval_expression", Arguments: `{"expression": "6 * 7"}`},
			{Name: "getItem", Arguments: `{"id": "7"}`},
			{Name: "getChart", Arguments: `{}`},
		}}, openaitest.Reply{Chunks: []string{"42 ", "widgets."}},
			openaitest.Reply{Chunks: []string{"<think>", "Keep it", " short.</think>", "Done."}})
		body := client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{"day": "14"}, ResponseMode: ptr(client.Streaming)}
		var (
			names   []string
			answer  string
			labels  []string
			status  string
			chart   map[string]any
			clerkOK bool
			reason  string
			finals  int
		)
		for _, ev := range streamEvents(t, c, body) {
			n := eventName(t, ev)
			switch n {
			case "node_started":
				ns, _ := ev.AsNodeStartedEvent()
				n += "(" + ns.Data.NodeId + ")"
			case "node_finished":
				nf, _ := ev.AsNodeFinishedEvent()
				n += "(" + nf.Data.NodeId + ")"
				if nf.Data.Status != "succeeded" {
					t.Fatalf("node %s: %s %v", nf.Data.NodeId, nf.Data.Status, nf.Data.Error)
				}
				if nf.Data.NodeId == "chart" && nf.Data.Outputs != nil {
					chart = *nf.Data.Outputs
				}
				if nf.Data.NodeId == "clerk" && nf.Data.Outputs != nil {
					files, _ := (*nf.Data.Outputs)["files"].([]any)
					clerkOK = (*nf.Data.Outputs)["text"] == "42 widgets." && len(files) == 1
				}
			case "agent_log":
				raw, _ := json.Marshal(ev)
				al, _ := ev.AsAgentLogEvent()
				if strings.Contains(string(raw), "workflow_run_id") || al.Data.NodeId != "clerk" {
					t.Fatalf("agent_log %s", raw)
				}
				if al.Data.Status != nil && *al.Data.Status != "start" && al.Data.Label != nil {
					labels = append(labels, *al.Data.Label)
				}
			case "reasoning_chunk":
				rc, _ := ev.AsReasoningChunkEvent()
				if rc.Data.NodeId == nil || *rc.Data.NodeId != "thinker" || finals > 0 {
					t.Fatalf("reasoning_chunk %+v", rc)
				}
				reason += rc.Data.Reasoning
				if rc.Data.IsFinal {
					finals++
				}
			case "message":
				m, _ := ev.AsMessageEvent()
				answer += m.Answer
			case "workflow_finished":
				wf, _ := ev.AsWorkflowFinishedEvent()
				status = string(wf.Data.Status)
			}
			if n != "message" && (len(names) == 0 || names[len(names)-1] != n) {
				names = append(names, n)
			}
		}
		if answer != "March 14, 2024 is Thursday. 42 widgets. Done." || status != "succeeded" || !clerkOK || reason != "Keep it short." || finals != 1 {
			t.Fatalf("answer %q status %s reasoning %q (%d final) events %v", answer, status, reason, finals, names)
		}
		want := "gpt-4o-mini Thought,CALL eval_expression,CALL getItem,CALL getChart,ROUND 1,gpt-4o-mini Thought,ROUND 2"
		if got := strings.Join(labels, ","); got != want {
			t.Fatalf("agent logs %s", got)
		}
		if got := strings.Join(names, " "); !strings.Contains(got, "node_started(clerk) agent_log node_finished(clerk)") {
			t.Fatalf("events %s", got)
		}
		files, _ := chart["files"].([]any)
		if len(files) != 1 {
			t.Fatalf("chart outputs %v", chart)
		}
		f, _ := files[0].(map[string]any)
		if f["mime_type"] != "image/png" || f["transfer_method"] != "tool_file" || !strings.Contains(f["url"].(string), "/files/tools/") {
			t.Fatalf("chart file %v", f)
		}
		var results []string
		for _, req := range upstream.Requests() {
			if req.LastUserMessage() != q {
				continue
			}
			if sys := req.Messages[0].Text(); sys != "You are the clerk. March 14, 2024 is Thursday." {
				t.Fatalf("instruction %q", sys)
			}
			for _, m := range req.Messages {
				if m.Role == "tool" {
					results = append(results, m.Text())
				}
			}
		}
		if len(results) != 3 || results[0] != "42" || !strings.Contains(results[1], `"name":"widget"`) || !strings.Contains(results[2], "image/png") {
			t.Fatalf("tool results %q", results)
		}
	})
}

var (
	startedRE  = regexp.MustCompile(`"started_at":\d+`)
	signedRE   = regexp.MustCompile(`(/files/tools/<uuid-\d+>\.png)\?[^"]+`)
	toolTimeRE = regexp.MustCompile(`"(elapsed_time|latency)":[0-9.e-]+`)
)

// TestChatflowToolsGolden pins the bytes of the tools Chatflow's stream: the tool nodes' outputs,
// the agent node's agent_log events and the reasoning chunks, after normalising ids, times and
// the signed link of the tool's file.
func TestChatflowToolsGolden(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "chatflow-tools.yml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flow.yml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "name: Tool Desk", "name: Golden Tools", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	api := toolregtest.NewAPI(t)
	p := startParley(t, "sqlite")
	p.Restart(t, allowLoopback)
	addInventory(t, p, api)
	p.CLI(t, "apps", "import", "--publish", path)
	key := p.CLI(t, "keys", "create", "--app", "Golden Tools")
	q := "golden tools"
	usage := &providers.Usage{PromptTokens: 30, CompletionTokens: 5}
	upstream.OnEach(q, openaitest.Reply{ToolCalls: []providers.ToolCall{
		{ID: "call_1", Name: "eval_expression", Arguments: `{"expression": "6 * 7"}`},
		{ID: "call_2", Name: "getItem", Arguments: `{"id": "7"}`},
		{ID: "call_3", Name: "getChart", Arguments: `{}`},
	}, Usage: usage}, openaitest.Reply{Chunks: []string{"42 ", "widgets."}, Usage: usage},
		openaitest.Reply{Chunks: []string{"<think>", "Keep it", " short.</think>", "Done."}, Usage: usage})
	body := `{"query":"` + q + `","inputs":{"day":"14"},"user":"golden","response_mode":"streaming","auto_generate_name":false}`
	req, _ := newRequest("POST", p.URL+"/chat-messages", body, key)
	resp, err := newContractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("HTTP %d %s\n\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), out)
	got = normalize(strings.TrimRight(got, "\n") + "\n")
	got = toolTimeRE.ReplaceAllString(got, `"$1":<seconds>`)
	got = finishedRE.ReplaceAllString(got, `"finished_at":<ts>`)
	got = startedRE.ReplaceAllString(got, `"started_at":<ts>`)
	got = signedRE.ReplaceAllString(got, `$1?<signature>`)
	for _, line := range strings.Split(got, "\n") {
		if rest, ok := strings.CutPrefix(line, "data: "); ok && !json.Valid([]byte(strings.NewReplacer("<seconds>", "0", "<ts>", "0").Replace(rest))) {
			t.Fatalf("not JSON: %s", line)
		}
	}
	golden(t, "chatflow_tools_streaming.sse.golden", got)
}
