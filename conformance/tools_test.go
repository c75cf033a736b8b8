package conformance

import (
	"bytes"
	"os"
	"os/exec"
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
		doc, keyFile, dsl := filepath.Join(dir, "inventory.yaml"), filepath.Join(dir, "key"), filepath.Join(dir, "agent.yml")
		for path, data := range map[string]string{doc: api.Document, keyFile: toolregtest.APIToken + "\n", dsl: stockAgent} {
			if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, stderr, err := p.cliOut("apps", "import", dsl); err == nil ||
			!strings.Contains(stderr, `tool "getItem" of provider "inventory" (api) is not available on this server`) {
			t.Fatalf("import before registration: %v\n%s", err, stderr)
		}
		if _, stderr, err := p.cliOut("tools", "add-api", "inventory", "--schema", keyFile); err == nil || !strings.Contains(stderr, "invalid API document") {
			t.Fatalf("a file that is no API document: %v\n%s", err, stderr)
		}
		if name := p.CLI(t, "tools", "add-api", "inventory", "--schema", doc, "--auth", "bearer", "--key-file", keyFile); name != "inventory" {
			t.Fatalf("add-api printed %q", name)
		}
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

		ask := func(what string) string {
			t.Helper()
			q := marker(t, what)
			upstream.OnEach(q, openaitest.Reply{
				ToolCalls: []providers.ToolCall{{Name: "getItem", Arguments: `{"id":"7"}`}},
			}, openaitest.Reply{Chunks: []string{"Done."}})
			body := client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{}, ResponseMode: ptr(client.Streaming)}
			var observation string
			for _, ev := range streamEvents(t, c, body) {
				if eventName(t, ev) != "agent_thought" {
					continue
				}
				th, err := ev.AsAgentThoughtEvent()
				if err != nil {
					t.Fatal(err)
				}
				if th.Observation != nil && *th.Observation != "" {
					observation = *th.Observation
				}
			}
			return observation
		}

		if o := ask("guarded"); !strings.Contains(o, "tool invoke error") || !strings.Contains(o, "forbidden") {
			t.Fatalf("a loopback API without an allowance: %q", o)
		}
		if n := api.Calls.Load(); n != 0 {
			t.Fatalf("the API saw %d requests through the guard", n)
		}
		p.Restart(t, "PARLEY_TOOLS_ALLOWED_NETWORKS=127.0.0.1")
		c = newClient(t, p, key)
		if o := ask("allowed"); o != `{"getItem": "{\"id\":\"7\",\"name\":\"widget\",\"tenant\":\"\"}\n"}` {
			t.Fatalf("the API's answer: %q", o)
		}
		p.CLI(t, "tools", "delete", "inventory")
		if o := ask("deleted"); !strings.Contains(o, "not available on this server") {
			t.Fatalf("a deleted provider's tool: %q", o)
		}
	})
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
		allow := "PARLEY_TOOLS_ALLOWED_NETWORKS=127.0.0.1"
		p.Restart(t, allow)
		cli := func(args ...string) (string, string, error) {
			cmd := exec.Command(binary, args...)
			cmd.Env = append(append([]string(nil), p.env...), allow, "NOTES_AUTH=Bearer mcp-secret")
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			return strings.TrimSpace(out.String()), errOut.String(), err
		}
		if _, stderr, err := p.cliOut("tools", "add-mcp", "Team Notes", notes.URL, "--id", "notes"); err == nil || !strings.Contains(stderr, "forbidden") {
			t.Fatalf("a CLI without the allowance: %v\n%s", err, stderr)
		}
		if out, stderr, err := cli("tools", "add-mcp", "Team Notes", notes.URL, "--id", "notes", "--header-env", "Authorization=NOTES_AUTH"); err != nil || out != "Team Notes" {
			t.Fatalf("add-mcp: %v %q\n%s", err, out, stderr)
		}
		list := p.CLI(t, "tools", "list")
		if !strings.Contains(list, "notes.search") || !strings.Contains(list, "Authorization") || strings.Contains(list, "mcp-secret") {
			t.Fatalf("tools list:\n%s", list)
		}
		dsl := filepath.Join(t.TempDir(), "notes.yml")
		if err := os.WriteFile(dsl, []byte(notesAgent), 0o600); err != nil {
			t.Fatal(err)
		}
		if name := p.CLI(t, "apps", "import", dsl); name != "Notes Agent" {
			t.Fatalf("import printed %q", name)
		}
		c := newClient(t, p, p.CLI(t, "keys", "create", "--app", "Notes Agent"))
		q := marker(t, "search my notes")
		upstream.OnEach(q, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "notes_search", Arguments: `{"query":"milk"}`}},
		}, openaitest.Reply{Chunks: []string{"Found."}})
		var observation string
		for _, ev := range streamEvents(t, c, client.SendChatMessageJSONRequestBody{Query: q, User: "u1", Inputs: map[string]any{}, ResponseMode: ptr(client.Streaming)}) {
			if eventName(t, ev) != "agent_thought" {
				continue
			}
			th, err := ev.AsAgentThoughtEvent()
			if err != nil {
				t.Fatal(err)
			}
			if th.Observation != nil && *th.Observation != "" {
				observation = *th.Observation
			}
		}
		if observation != `{"notes_search": "found: MILK"}` {
			t.Fatalf("observation %q", observation)
		}
		if got := notes.Auth.Load(); got != "Bearer mcp-secret" {
			t.Fatalf("the MCP server saw Authorization %v", got)
		}
	})
}
