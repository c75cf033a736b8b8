package conformance

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestChatflowPluginsGolden pins the bytes of a Chatflow whose nodes use the plugins of exported
// apps that Parley builds in: svcvit/agent's TOD strategy (completed in one turn), junjiem's
// MCP function calling over HTTP+SSE, arrenxxxxx's MCP tool and a Workflow app called as a
// workflow tool, after normalising ids, times and the MCP server's port.
func TestChatflowPluginsGolden(t *testing.T) {
	p := mcpFlowServer(t, "chatflow-plugins.yml", "testdata/workflow-as-tool.yml")
	key := p.CLI(t, "keys", "create", "--app", "Plugin Desk")
	q := "golden plugins to Lisbon"
	usage := &providers.Usage{PromptTokens: 30, CompletionTokens: 5}
	// The TOD node's two calls first: their last user message quotes the query.
	upstream.On("User answer: "+q, openaitest.Reply{Text: "Lisbon", Usage: usage})
	upstream.On("User reply: "+q, openaitest.Reply{Text: `{"destination": "Lisbon"}`, Usage: usage})
	upstream.OnEach(q, openaitest.Reply{ToolCalls: []providers.ToolCall{
		{ID: "call_1", Name: "notes_search", Arguments: `{"query": "lisbon"}`},
	}, Usage: usage}, openaitest.Reply{Chunks: []string{"Lisbon is ", "in the notes."}, Usage: usage})
	got := streamGolden(t, p, key, `{"query":"`+q+`","inputs":{},"user":"golden","response_mode":"streaming","auto_generate_name":false}`)
	want := "InformationCollectionCompleted:\nWhere do you want to go? Lisbon | Lisbon is in the notes. | found: LISBON TRIP"
	if !strings.Contains(got, strings.ReplaceAll(want, "\n", `\n`)) || !strings.Contains(got, `LISBON IS IN THE NOTES.!`) ||
		!strings.Contains(got, `"label":"Answer Extraction"`) || !strings.Contains(got, `"label":"CALL notes_search"`) {
		t.Fatalf("stream:\n%s", got)
	}
	golden(t, "chatflow_plugins_streaming.sse.golden", got)
}
