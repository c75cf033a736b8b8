package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// TestChatflowMCPGolden pins the bytes of a Chatflow that reaches an MCP server it has not
// registered, as exported apps do: hjlarry/agent's MCP agent strategy (its agent_log events,
// the server's tool called between two rounds) and a tool node of the junjiem/mcp_sse tool
// plugin, after normalising ids, times and the MCP server's port.
func TestChatflowMCPGolden(t *testing.T) {
	p := mcpFlowServer(t, "chatflow-mcp.yml")
	key := p.CLI(t, "keys", "create", "--app", "MCP Desk")
	q := "golden mcp"
	usage := &providers.Usage{PromptTokens: 30, CompletionTokens: 5}
	upstream.OnEach(q, openaitest.Reply{ToolCalls: []providers.ToolCall{
		{ID: "call_1", Name: "notes_search", Arguments: `{"query": "roadmap"}`},
	}, Usage: usage}, openaitest.Reply{Chunks: []string{"The roadmap ", "is in the notes."}, Usage: usage})
	got := streamGolden(t, p, key, `{"query":"`+q+`","inputs":{},"user":"golden","response_mode":"streaming","auto_generate_name":false}`)
	if !strings.Contains(got, "The roadmap is in the notes. / found: GOLDEN MCP") || !strings.Contains(got, `"label":"CALL notes_search"`) {
		t.Fatalf("stream:\n%s", got)
	}
	golden(t, "chatflow_mcp_streaming.sse.golden", got)
}

// mcpFlowServer is a server of the test's own that reaches loopback tool servers, with the
// Chatflow of testdata/file imported and published, MCP_URL in it standing for the address of a
// loopback MCP server (toolregtest.NewMCP).
func mcpFlowServer(t *testing.T, file string, before ...string) *Parley {
	t.Helper()
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	notes := toolregtest.NewMCP(t)
	raw, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flow.yml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), "MCP_URL", notes.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startParley(t, "sqlite")
	p.Restart(t, allowLoopback)
	for _, f := range before {
		p.CLI(t, "apps", "import", "--publish", f)
	}
	p.CLI(t, "apps", "import", "--publish", path)
	return p
}
