package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// stockAgent is a Legacy Agent export naming a custom API tool by its provider's name (the
// provider id is another workspace's).
const stockAgent = `app: {name: Stock Agent, mode: agent-chat}
kind: app
model_config:
  agent_mode:
    enabled: true
    strategy: function_call
    tools:
    - {enabled: true, provider_type: api, provider_id: 5d3ae0e1-7d1c-4e57-9f0a-2b1d3c4e5f60, provider_name: inventory, tool_name: getItem, tool_label: getItem, tool_parameters: {id: ''}}
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You look items up.
  prompt_type: simple
version: 0.6.0
`

// TestRegisteredAPITool registers a loopback API as a custom API tool through the CLI while the
// server runs, imports an agent that names it, and calls it over HTTP. Without an allowance the
// network guard refuses the loopback call (an observation); with PARLEY_TOOLS_ALLOWED_NETWORKS
// it goes through with the registered key, which `tools list` never shows. A deleted provider's
// tool is an observation too.
func TestRegisteredAPITool(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		api := toolregtest.NewAPI(t)
		dir := t.TempDir()
		notDoc, dsl := filepath.Join(dir, "key"), filepath.Join(dir, "agent.yml")
		for path, data := range map[string]string{notDoc: toolregtest.APIToken + "\n", dsl: stockAgent} {
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, stderr, err := p.cliOut("apps", "import", "--strict", dsl); err == nil ||
			!strings.Contains(stderr, `tool "getItem" of provider "inventory" (api) is not available on this server`) {
			t.Fatalf("import before registration: %v\n%s", err, stderr)
		}
		if _, stderr, err := p.cliOut("tools", "add-api", "inventory", "--schema", notDoc); err == nil || !strings.Contains(stderr, "invalid API document") {
			t.Fatalf("a file that is no API document: %v\n%s", err, stderr)
		}
		addInventory(t, p, api)
		list := p.CLI(t, "tools", "list")
		if !strings.Contains(list, "inventory") || !strings.Contains(list, "bearer") || !strings.Contains(list, "getItem") ||
			strings.Contains(list, toolregtest.APIToken) {
			t.Fatalf("tools list:\n%s", list)
		}
		if name := p.CLI(t, "apps", "import", dsl); name != "Stock Agent" {
			t.Fatalf("import printed %q", name)
		}
		key := p.CLI(t, "keys", "create", "--app", "Stock Agent")
		c := newClient(t, p, key)

		getItem := providers.ToolCall{Name: "getItem", Arguments: `{"id":"7"}`}
		if o := observation(t, askAgent(t, c, "guarded", getItem)); !strings.Contains(o, "tool invoke error") || !strings.Contains(o, "forbidden") {
			t.Fatalf("a loopback API without an allowance: %q", o)
		}
		if n := api.Calls.Load(); n != 0 {
			t.Fatalf("the API saw %d requests through the guard", n)
		}
		p.Restart(t, allowLoopback)
		c = newClient(t, p, key)
		if o := observation(t, askAgent(t, c, "allowed", getItem)); o != `{"getItem": "{\"id\":\"7\",\"name\":\"widget\",\"tenant\":\"\"}\n"}` {
			t.Fatalf("the API's answer: %q", o)
		}
		p.CLI(t, "tools", "delete", "inventory")
		if o := observation(t, askAgent(t, c, "deleted", getItem)); !strings.Contains(o, "not available on this server") {
			t.Fatalf("a deleted provider's tool: %q", o)
		}
	})
}

// allowLoopback lets the server's tools, and the CLI (which connects to an MCP server it
// registers), reach the tests' loopback servers.
const allowLoopback = "PARLEY_TOOLS_ALLOWED_NETWORKS=127.0.0.1"

// addInventory registers api through the CLI as the custom API tool provider "inventory", with
// bearer auth and the API's token.
func addInventory(t *testing.T, p *Parley, api *toolregtest.API) {
	t.Helper()
	dir := t.TempDir()
	doc, keyFile := filepath.Join(dir, "inventory.yaml"), filepath.Join(dir, "key")
	for path, data := range map[string]string{doc: api.Document, keyFile: toolregtest.APIToken + "\n"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if name := p.CLI(t, "tools", "add-api", "inventory", "--schema", doc, "--auth", "bearer", "--key-file", keyFile); name != "inventory" {
		t.Fatalf("add-api printed %q", name)
	}
}

// addNotes registers the MCP server notes through the CLI as "Team Notes" (identifier notes),
// with an Authorization header the server reads from NOTES_AUTH; the CLI runs with the loopback
// allowance and the header's value in its environment.
func addNotes(t *testing.T, p *Parley, notes *toolregtest.MCP) {
	t.Helper()
	if out, stderr, err := p.cliWith([]string{allowLoopback, "NOTES_AUTH=Bearer mcp-secret"},
		"tools", "add-mcp", "Team Notes", notes.URL, "--id", "notes", "--header-env", "Authorization=NOTES_AUTH"); err != nil || out != "Team Notes\n" {
		t.Fatalf("add-mcp: %v %q\n%s", err, out, stderr)
	}
}

// askAgent has the upstream model call the tool once and then answer "Done.", asks an agent app
// (through c) a question made unique to t from what, and returns the stream's events.
func askAgent(t *testing.T, c *client.ClientWithResponses, what string, call providers.ToolCall) []client.ChatStreamEvent {
	t.Helper()
	q := marker(t, what)
	upstream.OnEach(q, openaitest.Reply{ToolCalls: []providers.ToolCall{call}}, openaitest.Reply{Chunks: []string{"Done."}})
	return streamEvents(t, c, client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{}, ResponseMode: ptr(client.Streaming)})
}

// observation is the last observation the stream's steps carry.
func observation(t *testing.T, evs []client.ChatStreamEvent) string {
	t.Helper()
	var o string
	for _, ev := range evs {
		if eventName(t, ev) != "agent_thought" {
			continue
		}
		th, err := ev.AsAgentThoughtEvent()
		if err != nil {
			t.Fatal(err)
		}
		if th.Observation != nil && *th.Observation != "" {
			o = *th.Observation
		}
	}
	return o
}

// notesAgent names an MCP server's tool by the server's identifier.
const notesAgent = `app: {name: Notes Agent, mode: agent-chat}
kind: app
model_config:
  agent_mode:
    enabled: true
    strategy: function_call
    tools:
    - {enabled: true, provider_type: mcp, provider_id: notes, provider_name: Team Notes, tool_name: notes.search, tool_parameters: {}}
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
  pre_prompt: You search notes.
  prompt_type: simple
version: 0.6.0
`

// TestRegisteredMCPServer registers a loopback MCP server through the CLI (which connects to it,
// so the CLI needs the allowance too) with a secret header from the environment, and an imported
// agent calls its dotted tool, offered to the model as notes_search.
func TestRegisteredMCPServer(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		notes := toolregtest.NewMCP(t)
		p.Restart(t, allowLoopback)
		if _, stderr, err := p.cliOut("tools", "add-mcp", "Team Notes", notes.URL, "--id", "notes"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Fatalf("a CLI without the allowance: %v\n%s", err, stderr)
		}
		addNotes(t, p, notes)
		list := p.CLI(t, "tools", "list")
		if !strings.Contains(list, "notes.search") || !strings.Contains(list, "Authorization") || strings.Contains(list, "mcp-secret") {
			t.Fatalf("tools list:\n%s", list)
		}
		c := newClient(t, p, importFile(t, p, "Notes Agent", notesAgent))
		evs := askAgent(t, c, "search my notes", providers.ToolCall{Name: "notes_search", Arguments: `{"query":"milk"}`})
		if o := observation(t, evs); o != `{"notes_search": "found: MILK"}` {
			t.Fatalf("observation %q", o)
		}
		if got := notes.Auth.Load(); got != "Bearer mcp-secret" {
			t.Fatalf("the MCP server saw Authorization %v", got)
		}
	})
}
