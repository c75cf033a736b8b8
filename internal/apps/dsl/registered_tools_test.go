package dsl

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/agent"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/tools/toolreg"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// registeredToolsAgent is a Legacy Agent export naming a custom API tool (by Dify's provider
// uuid, meaningless here, and the provider's name) and an MCP tool (by server identifier).
const registeredToolsAgent = `version: 0.6.0
app: {name: Stock Agent, mode: agent-chat}
model_config:
  model: {provider: openai, name: gpt-4o-mini, mode: chat}
  agent_mode:
    enabled: true
    strategy: function_call
    tools:
    - enabled: true
      provider_type: api
      provider_id: 5d3ae0e1-7d1c-4e57-9f0a-2b1d3c4e5f60
      provider_name: inventory
      tool_name: getItem
      tool_label: getItem
      tool_parameters: {id: ''}
    - enabled: true
      provider_type: mcp
      provider_id: notes
      provider_name: Team Notes
      tool_name: notes.search
      tool_parameters: {}
`

// TestRegisteredTools: API and MCP tools resolve against the workspace's registry. Before
// registration both are problems (and --lenient keeps them missing); once registered, the same
// file imports with both resolved; a tool the provider does not have stays a problem.
func TestRegisteredTools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := testdb.Open(t, storetest.NewEngine(t, storetest.SQLite))
	hc, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := toolreg.New(toolreg.Options{Store: st, Builtin: builtin.Find, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	env := testEnv()
	env.Tool = agent.Available(ctx, reg.Find)
	agents := Options{Modes: []string{apps.ModeAgentChat}}

	e := importErr(t, registeredToolsAgent, env, agents)
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	want := `model_config.agent_mode.tools[0]: tool "getItem" of provider "inventory" (api) is not available on this server; import without --strict to keep it anyway
model_config.agent_mode.tools[1]: tool "notes.search" of provider "notes" (mcp) is not available on this server; import without --strict to keep it anyway`
	if strings.Join(got, "\n") != want {
		t.Fatalf("problems:\n%s", strings.Join(got, "\n"))
	}
	lenient := agents
	lenient.Lenient = true
	res, err := Import([]byte(registeredToolsAgent), env, lenient)
	if err != nil {
		t.Fatal(err)
	}
	if tl := res.App.Agent.Tools; len(tl) != 2 || !tl[0].Missing || !tl[1].Missing || len(res.Notes) != 2 {
		t.Fatalf("lenient: tools %+v notes %v", tl, res.Notes)
	}

	api, notes := toolregtest.NewAPI(t), toolregtest.NewMCP(t)
	if _, err := reg.AddAPI(ctx, "inventory", toolreg.API{Schema: api.Document}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.AddMCP(ctx, "Team Notes", toolreg.MCP{ServerIdentifier: "notes", URL: notes.URL}, false); err != nil {
		t.Fatal(err)
	}
	res, err = Import([]byte(registeredToolsAgent), env, agents)
	if err != nil {
		t.Fatalf("with the providers registered: %v", err)
	}
	if tl := res.App.Agent.Tools; len(tl) != 2 || tl[0].Missing || tl[1].Missing || len(res.Notes) != 0 {
		t.Fatalf("registered: tools %+v notes %v", tl, res.Notes)
	}
	roundTrip(t, res.App, env, agents)

	unknown := strings.Replace(registeredToolsAgent, "tool_name: notes.search", "tool_name: notes.delete", 1)
	if e := importErr(t, unknown, env, agents); len(e.Problems) != 1 ||
		!strings.Contains(e.Problems[0].String(), `tool "notes.delete" of provider "notes" (mcp) is not available`) {
		t.Fatalf("an MCP tool the server does not list: %v", e.Problems)
	}
}
