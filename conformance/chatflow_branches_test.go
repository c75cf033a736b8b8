package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestChatflowBranches runs the example with branches on both engines: each if-else case takes
// its branch and skips the others; an LLM that keeps failing is retried once (node_retry) and then
// takes its fail branch, so the run is partial-succeeded with the node in exception.
func TestChatflowBranches(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		raw, err := os.ReadFile(filepath.Join("..", "docs", "examples", "chatflow-branches.yml"))
		if err != nil {
			t.Fatal(err)
		}
		name := "Branches " + strings.ReplaceAll(t.Name(), "/", "-")
		path := filepath.Join(t.TempDir(), "flow.yml")
		if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "name: Branches", "name: "+name, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		p.CLI(t, "apps", "import", "--publish", path)
		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", name))

		type run struct {
			answer, status string
			events         []string
			nodes          map[string]string
		}
		send := func(mode, query string) run {
			t.Helper()
			var r run
			r.nodes = map[string]string{}
			body := client.SendChatMessageJSONRequestBody{Query: query, User: "u", Inputs: map[string]any{"mode": mode}, ResponseMode: ptr(client.Streaming)}
			for _, ev := range streamEvents(t, c, body) {
				n := eventName(t, ev)
				r.events = append(r.events, n)
				switch n {
				case "message":
					m, _ := ev.AsMessageEvent()
					r.answer += m.Answer
				case "node_finished":
					nf, _ := ev.AsNodeFinishedEvent()
					r.nodes[nf.Data.NodeId] = string(nf.Data.Status)
				case "workflow_finished":
					wf, _ := ev.AsWorkflowFinishedEvent()
					r.status = string(wf.Data.Status)
				}
			}
			return r
		}

		r := send("summary", "ab")
		if r.answer != "A-B" || r.status != "succeeded" || r.nodes["summary"] != "succeeded" || r.nodes["draft"] != "" || r.nodes["plain"] != "" {
			t.Fatalf("summary branch: %+v", r)
		}
		r = send("plain", "why")
		if r.answer != "Plain answer to why." || r.status != "succeeded" || r.nodes["merge"] != "" || r.nodes["answer"] != "" {
			t.Fatalf("else branch: %+v", r)
		}
		q := marker(t, "draft this")
		upstream.On(q, openaitest.Reply{Status: 500, ErrorMessage: "down"})
		r = send("draft", q)
		if r.answer != "Sorry, the draft failed (LLMNodeError)." || r.status != "partial-succeeded" || r.nodes["draft"] != "exception" ||
			strings.Count(strings.Join(r.events, " "), "node_retry") != 1 {
			t.Fatalf("fail branch: %+v", r)
		}
		if got := r.events[len(r.events)-2:]; got[0] != "message_end" || got[1] != "workflow_finished" {
			t.Fatalf("fail branch ends %v", r.events)
		}

	})
}
