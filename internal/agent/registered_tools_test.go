package agent

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/tools/toolreg"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// registeredTools is an agent with the loopback API's and MCP server's tools, named as a Dify
// export names them: the API provider by an id of another workspace and its name, the MCP
// server by its identifier.
var registeredTools = apps.Agent{Enabled: true, Strategy: "function_call", Tools: []apps.Tool{
	{ProviderType: "api", ProviderID: "5d3ae0e1-7d1c-4e57-9f0a-2b1d3c4e5f60", ProviderName: "inventory", Name: "getItem", Enabled: true},
	{ProviderType: "api", ProviderName: "inventory", Name: "broken", Enabled: true},
	{ProviderType: "api", ProviderName: "inventory", Name: "slow", Enabled: true},
	{ProviderType: "mcp", ProviderID: "notes", Name: toolregtest.MCPToolSearch, Enabled: true},
	{ProviderType: "mcp", ProviderID: "notes", Name: "hang", Enabled: true},
}}

// withRegistry registers the loopback API and MCP server in the env's store, through the network
// guard with loopback allowed as PARLEY_TOOLS_ALLOWED_NETWORKS=127.0.0.1 allows it, and makes the
// registry the agent's tool lookup.
func withRegistry(t *testing.T, api *toolregtest.API, notes *toolregtest.MCP, toolTimeout time.Duration) func(*apps.App, *Options) {
	return func(_ *apps.App, o *Options) {
		hc, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := toolreg.New(toolreg.Options{Store: o.Store.(*store.Store), Builtin: builtin.Find, HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Close() })
		ctx := t.Context()
		if _, err := reg.AddAPI(ctx, "inventory", toolreg.API{Schema: api.Document, Auth: toolreg.AuthBearer, Key: toolregtest.APIToken,
			Timeout: toolreg.Duration(300 * time.Millisecond)}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.AddMCP(ctx, "Team Notes", toolreg.MCP{ServerIdentifier: "notes", URL: notes.URL}, false); err != nil {
			t.Fatal(err)
		}
		o.Tools, o.ToolTimeout = reg.Find, toolTimeout
	}
}

// observations reads the stored steps' observations, tool name → text, in order.
func observations(t *testing.T, stored []store.AgentThought) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, s := range stored {
		if s.Observation == "" {
			continue
		}
		var o map[string]string
		if err := json.Unmarshal([]byte(s.Observation), &o); err != nil {
			t.Fatalf("observation %q: %v", s.Observation, err)
		}
		out = append(out, o)
	}
	return out
}

// TestRegisteredAPIAndMCPTools: a Legacy Agent calls a registered API's operation and an MCP
// server's tool (whose dotted name is offered as notes_search) in one round, then meets each
// fault: the API answers 500, the API does not answer within its timeout, the MCP tool does not
// answer within the agent's tool timeout; each is an observation and the agent answers. In the
// next turn the MCP server is down: the call's observation says so, and the agent answers.
func TestRegisteredAPIAndMCPTools(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		api, notes := toolregtest.NewAPI(t), toolregtest.NewMCP(t)
		env := newEnv(t, e, registeredTools, withRegistry(t, api, notes, 2*time.Second))
		env.upstream.OnEach("look things up", openaitest.Reply{
			Chunks: []string{"Looking."},
			ToolCalls: []providers.ToolCall{
				{Name: "getItem", Arguments: `{"id": "7"}`},
				{Name: "notes_search", Arguments: `{"query": "milk"}`},
			},
		}, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "broken", Arguments: `{}`}},
		}, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "slow", Arguments: `{}`}},
		}, openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "hang", Arguments: `{}`}},
		}, openaitest.Reply{Chunks: []string{"Item 7 is a widget."}})
		rn := env.send(t, "Please look things up", "")
		evs := collect(t, rn)
		if got, want := trace(evs), "T1 A T1t T1to T2 T2t T2to T3 T3t T3to T4 T4t T4to T5 A T5 E"; got != want {
			t.Fatalf("events %s, want %s", got, want)
		}
		reqs := env.upstream.Requests()
		var offered []string
		for _, d := range reqs[0].Tools {
			offered = append(offered, d.Name)
			if d.Name == "notes_search" && !strings.Contains(string(d.Parameters), `"query"`) {
				t.Errorf("notes_search parameters %s", d.Parameters)
			}
		}
		if got := strings.Join(offered, " "); got != "getItem broken slow notes_search hang" {
			t.Fatalf("offered tools %s", got)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 5 || stored[0].Tool != "getItem;notes_search" {
			t.Fatalf("stored %+v", stored)
		}
		obs := observations(t, stored)
		if len(obs) != 4 {
			t.Fatalf("observations %+v", obs)
		}
		if o := obs[0]; o["getItem"] != `{"id":"7","name":"widget","tenant":""}`+"\n" || o["notes_search"] != "found: MILK" {
			t.Errorf("first round observations %+v", o)
		}
		if o := obs[1]["broken"]; !strings.HasPrefix(o, "tool invoke error: ") || !strings.Contains(o, "500") || !strings.Contains(o, "database down") {
			t.Errorf("HTTP 500 observation %q", o)
		}
		if o := obs[2]["slow"]; !strings.HasPrefix(o, "tool invoke error: ") || !strings.Contains(o, "no answer within 300ms") {
			t.Errorf("API timeout observation %q", o)
		}
		if o := obs[3]["hang"]; o != "tool invoke error: the tool hang did not answer within 2s" {
			t.Errorf("MCP timeout observation %q", o)
		}
		if m := env.message(t, rn); m.Status != store.MessageStatusNormal || !strings.HasSuffix(m.Answer, "Item 7 is a widget.") {
			t.Fatalf("stored message %+v", m)
		}

		notes.Close()
		env.upstream.OnEach("search again", openaitest.Reply{
			ToolCalls: []providers.ToolCall{{Name: "notes_search", Arguments: `{"query": "eggs"}`}},
		}, openaitest.Reply{Chunks: []string{"The notes are unavailable."}})
		next := env.send(t, "Please search again", rn.ConversationID)
		if got := trace(collect(t, next)); got != "T1 T1t T1to T2 A T2 E" {
			t.Fatalf("events with the MCP server down %s", got)
		}
		obs = observations(t, env.thoughts(t, next))
		if o := obs[0]["notes_search"]; !strings.HasPrefix(o, "tool invoke error: ") || !strings.Contains(o, "calling tool notes.search failed") || !strings.Contains(o, "connection refused") {
			t.Errorf("MCP server down observation %q", o)
		}
		if m := env.message(t, next); m.Status != store.MessageStatusNormal || m.Answer != "The notes are unavailable." {
			t.Fatalf("stored message %+v", m)
		}
	})
}

// TestRegisteredToolReAct: a ReAct model calls the MCP tool by its offered name and reads its
// result as the observation.
func TestRegisteredToolReAct(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		api, notes := toolregtest.NewAPI(t), toolregtest.NewMCP(t)
		agentCfg := registeredTools
		agentCfg.Strategy = "react"
		env := newEnv(t, e, agentCfg, withRegistry(t, api, notes, 5*time.Second))
		env.upstream.OnEach("", openaitest.Reply{Chunks: []string{
			"Thought: search.\nAction:\n```json\n{\"action\": \"notes_search\", \"action_input\": {\"query\": \"tea\"}}\n```",
		}}, openaitest.Reply{Chunks: []string{"Thought: done.\nAction:\n```json\n{\"action\": \"Final Answer\", \"action_input\": \"Tea is noted.\"}\n```"}})
		rn := env.send(t, "Is tea in my notes?", "")
		if got := trace(collect(t, rn)); got != "T1 A T1t T1to T2 A A E" {
			t.Fatalf("events %s", got)
		}
		stored := env.thoughts(t, rn)
		if len(stored) != 2 || stored[0].Tool != "notes_search" || stored[0].Observation != `{"notes_search": "found: TEA"}` {
			t.Fatalf("stored %+v", stored)
		}
		if sys := env.upstream.Requests()[0].Messages[0].Content; !strings.Contains(sys, `"notes_search"`) || strings.Contains(sys, "notes.search") {
			t.Fatalf("the ReAct prompt names the tool as %q", sys)
		}
	})
}

// TestOfferedToolNames: names model APIs refuse are offered made acceptable, a name taken by an
// earlier tool gets a number, and a tool listed twice is offered once.
func TestOfferedToolNames(t *testing.T) {
	var asked []string
	r := New(Options{Tools: func(_ context.Context, ref tools.Ref) (tools.Tool, error) {
		asked = append(asked, ref.Name)
		return nil, tools.ErrUnknownTool
	}})
	app := &apps.App{Agent: &apps.Agent{Tools: []apps.Tool{
		{ProviderType: "mcp", Name: "notes.search", Enabled: true},
		{ProviderType: "mcp", Name: "notes_search", Enabled: true},
		{ProviderType: "mcp", Name: "notes.search", Enabled: true},
		{ProviderType: "mcp", Name: "off", Enabled: false},
		{ProviderType: "api", Name: "get weather", Enabled: true},
	}}}
	var names []string
	for _, o := range r.offers(context.Background(), app, &work{}) {
		names = append(names, o.Name)
	}
	if got := strings.Join(names, " "); got != "notes_search notes_search_2 get_weather" {
		t.Fatalf("offered %s", got)
	}
	if got := strings.Join(asked, " "); got != "notes.search notes_search get weather" {
		t.Fatalf("looked up %s", got)
	}
}
