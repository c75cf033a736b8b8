package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestChatflowKnowledge runs the example Chatflow that answers from the handbook knowledge base
// on both engines: the knowledge-retrieval node's result holds the chunk that answers, the LLM
// gets it as its context, and message_end cites it.
func TestChatflowKnowledge(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		kc := newClient(t, p, p.KnowledgeKey)
		ds := datasetByName(t, kc, "handbook")
		indexText(t, kc, ds, client.CreateDocumentByTextJSONRequestBody{Name: "handbook for flows", Text: handbookText,
			IndexingTechnique: ptr(client.HighQuality), ProcessRule: paragraphRule()})
		raw, err := os.ReadFile(filepath.Join("..", "docs", "examples", "chatflow-knowledge.yml"))
		if err != nil {
			t.Fatal(err)
		}
		name := "Handbook Desk " + strings.ReplaceAll(t.Name(), "/", "-")
		path := filepath.Join(t.TempDir(), "flow.yml")
		if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "name: Handbook Desk", "name: "+name, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		p.CLI(t, "apps", "import", "--publish", path)
		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", name))
		q := marker(t, "how many days of paid vacation does every employee receive")
		upstream.On(q, openaitest.Reply{Chunks: []string{"Twenty", " days."}})
		var answer string
		var end client.MessageEndEvent
		var result any
		for _, ev := range streamEvents(t, c, client.SendChatMessageJSONRequestBody{Query: q, User: "u", Inputs: map[string]any{}, ResponseMode: ptr(client.Streaming)}) {
			switch eventName(t, ev) {
			case "message":
				m, _ := ev.AsMessageEvent()
				answer += m.Answer
			case "node_finished":
				nf, _ := ev.AsNodeFinishedEvent()
				if nf.Data.NodeId == "search" && nf.Data.Outputs != nil {
					result = (*nf.Data.Outputs)["result"]
				}
			case "message_end":
				end, _ = ev.AsMessageEndEvent()
			}
		}
		items, _ := result.([]any)
		if answer != "Twenty days." || len(items) == 0 {
			t.Fatalf("answer %q, retrieval result %v", answer, result)
		}
		first, _ := items[0].(map[string]any)
		if !strings.Contains(first["content"].(string), "twenty days of paid vacation") || first["title"] != "handbook for flows" {
			t.Fatalf("first chunk %v", first)
		}
		var sys string
		for _, req := range upstream.Requests() {
			if req.LastUserMessage() == q {
				sys = req.Messages[0].Text()
			}
		}
		if !strings.HasPrefix(sys, "Answer from this context only:\nVacation policy: every employee receives twenty days") {
			t.Fatalf("system prompt %q", sys)
		}
		rs := end.Metadata.RetrieverResources
		if rs == nil || len(*rs) == 0 || (*rs)[0].Position != 1 || (*rs)[0].DatasetName != "handbook" || (*rs)[0].DocumentName != "handbook for flows" ||
			!strings.Contains((*rs)[0].Content, "twenty days") {
			t.Fatalf("message_end resources %+v", rs)
		}
	})
}
