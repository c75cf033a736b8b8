package dsl

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/nodes"
)

// TestChatflowToolNodes: a public Chatflow whose agent node has a built-in tool Parley has and
// one it lacks is refused with a problem naming the node and the missing tool only; --lenient
// imports it with a note. An agent node of another strategy plugin is refused naming the node.
func TestChatflowToolNodes(t *testing.T) {
	t.Parallel()
	env := testEnv()
	env.Tool = builtinTool
	opts := Options{ModelFallback: "openai:gpt-4o-mini", NodeTypes: nodes.Registry(nodes.Deps{}).Supports}
	data := read(t, filepath.Join("testdata", "public", "advanced-chat", "svcvit-agent-tool-calling.yml"))
	_, err := Import(data, env, opts)
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) != 1 ||
		!strings.Contains(e.Problems[0].String(), `node 1739781971571: tool "ddgo_search" of provider "langgenius/duckduckgo/duckduckgo" (builtin) is not available on this server`) {
		t.Fatalf("import: %v", err)
	}
	opts.Lenient = true
	res, err := Import(data, env, opts)
	if err != nil || len(res.Notes) == 0 {
		t.Fatalf("lenient import: %v", err)
	}
	var missing []string
	for _, n := range res.Notes {
		if n.Kind == NoteMissingTool {
			missing = append(missing, n.String())
		}
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "ddgo_search") {
		t.Fatalf("notes %v", res.Notes)
	}
	// The agent node's model was resolved (to the fallback), in the key the node reads.
	for _, n := range res.App.Workflow.Graph["nodes"].([]any) {
		d := n.(map[string]any)["data"].(map[string]any)
		if d["type"] != "agent" {
			continue
		}
		m := d["agent_parameters"].(map[string]any)["model"].(map[string]any)["value"].(map[string]any)
		if m["provider"] != "openai" || m["model"] != "gpt-4o-mini" {
			t.Fatalf("agent model %v", m)
		}
	}

	// hjlarry/agent's MCP strategy imports; a strategy plugin Parley does not have is refused,
	// naming it.
	data = read(t, filepath.Join("testdata", "public", "advanced-chat", "svcvit-mcp.yml"))
	if _, err := Import(data, env, opts); err != nil {
		t.Fatalf("the MCP agent strategy: %v", err)
	}
	// junjiem/mcp_see_agent's strategies import too (the file is the same agent node under
	// that plugin's names).
	see := strings.NewReplacer("hjlarry/agent/mcp_agent", "junjiem/mcp_see_agent/mcp_see_agent",
		"agent_strategy_name: function_calling", "agent_strategy_name: mcp_sse_ReAct").Replace(string(data))
	if _, err := Import([]byte(see), env, opts); err != nil {
		t.Fatalf("junjiem/mcp_see_agent: %v", err)
	}
	if _, err := Import([]byte(strings.Replace(see, "mcp_sse_ReAct", "mcp_sse_planning", 1)), env, opts); err == nil {
		t.Fatal("a strategy mcp_see_agent does not have imported")
	}
	// svcvit/agent's TOD imports; its MTD, which Parley does not have, is refused, naming it.
	tod := read(t, filepath.Join("testdata", "public", "advanced-chat", "svcvit-tod-agent-demo.yml"))
	if _, err := Import(tod, env, opts); err != nil {
		t.Fatalf("svcvit/agent's TOD: %v", err)
	}
	mtd := strings.Replace(string(tod), "agent_strategy_name: TOD", "agent_strategy_name: MTD", 1)
	if _, err := Import([]byte(mtd), env, opts); err == nil || !strings.Contains(err.Error(), `agent strategy "MTD" of "svcvit/agent/agent" is not supported yet`) {
		t.Fatalf("another strategy: %v", err)
	}
}
