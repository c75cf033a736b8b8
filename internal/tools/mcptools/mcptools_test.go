package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/mcptools"
	"github.com/parleyhq/parley/internal/tools/toolreg/toolregtest"
)

// newSet is the tools, reaching loopback servers only.
func newSet(t *testing.T) *mcptools.Set {
	t.Helper()
	hc, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mcptools.New(hc)
}

// invoke finds provider/name configured with configured and calls it with args.
func invoke(t *testing.T, s *mcptools.Set, provider, name string, configured map[string]any, args string) tools.Result {
	t.Helper()
	tl, err := s.Find(context.Background(), tools.Ref{Type: tools.TypeBuiltin, ProviderID: provider, Name: name, Configured: configured})
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(tl.Parameters(), &schema); err != nil || schema["type"] != "object" {
		t.Fatalf("%s parameters %s", name, tl.Parameters())
	}
	res, err := tl.Invoke(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestJunjiemMCPSSE: junjiem/mcp_sse's tools list and call the tools of the servers of
// servers_config, set on the tool (as an app sets it) or given by the model.
func TestJunjiemMCPSSE(t *testing.T) {
	t.Parallel()
	notes := toolregtest.NewMCP(t)
	s := newSet(t)
	config := map[string]any{"servers_config": `{"notes": {"url": "` + notes.URL + `", "headers": {"Authorization": "Bearer k"}, "timeout": 5}}`}

	res := invoke(t, s, "junjiem/mcp_sse/mcp_sse", "mcp_sse_list_tools", config, `{}`)
	if res.IsError || !strings.HasPrefix(res.Text, "MCP Server tools list: \n") || !strings.Contains(res.Text, `"name":"notes.search"`) ||
		!strings.Contains(res.Text, `"parameters":{`) {
		t.Fatalf("list: %+v", res)
	}
	if notes.Auth.Load() != "Bearer k" {
		t.Fatalf("Authorization %v", notes.Auth.Load())
	}
	res = invoke(t, s, "mcp_sse", "mcp_sse_call_tool", config, `{"tool_name": "notes.search", "arguments": "{\"query\": \"budget\"}"}`)
	if res.IsError || res.Text != "found: BUDGET" {
		t.Fatalf("call: %+v", res)
	}
	// The model gives the servers and an object for the arguments.
	res = invoke(t, s, "junjiem/mcp_sse/mcp_sse", "mcp_sse_call_tool", nil,
		`{"servers_config": `+mustJSON(t, config["servers_config"])+`, "tool_name": "notes.search", "arguments": {"query": "plan"}}`)
	if res.IsError || res.Text != "found: PLAN" {
		t.Fatalf("call with the model's servers: %+v", res)
	}
	for args, want := range map[string]string{
		`{"tool_name": "notes.search", "arguments": "{}"}`:                                                          "Please fill in the servers_config",
		`{"servers_config": "not json", "tool_name": "x", "arguments": "{}"}`:                                       "servers_config must be a valid JSON string",
		`{"servers_config": ` + mustJSON(t, config["servers_config"]) + `, "tool_name": "nope", "arguments": "{}"}`: `there is no tool "nope"`,
		`{"servers_config": ` + mustJSON(t, config["servers_config"]) + `, "tool_name": "notes.search"}`:            "Please fill in the arguments",
	} {
		if res := invoke(t, s, "mcp_sse", "mcp_sse_call_tool", nil, args); !res.IsError || !strings.Contains(res.Text, want) {
			t.Errorf("%s: %+v, want %q", args, res, want)
		}
	}
}

// TestMCPConfigDuringUse: arrenxxxxx/mcp_config_during_use's tools list and call the tools of
// the server each call names; a server the network guard refuses is the tool's answer.
func TestMCPConfigDuringUse(t *testing.T) {
	t.Parallel()
	notes := toolregtest.NewMCP(t)
	s := newSet(t)
	res := invoke(t, s, "arrenxxxxx/mcp_config_during_use/mcp_config", "mcp_list_tools", nil,
		`{"server_url": "`+notes.URL+`", "headers": "{\"Authorization\": \"Bearer d\"}", "timeout": 5}`)
	var listed []map[string]any
	if err := json.Unmarshal([]byte(res.Text), &listed); res.IsError || err != nil || len(listed) < 2 || listed[0]["inputSchema"] == nil {
		t.Fatalf("list: %+v (%v)", res, err)
	}
	if notes.Auth.Load() != "Bearer d" {
		t.Fatalf("Authorization %v", notes.Auth.Load())
	}
	res = invoke(t, s, "mcp_config", "mcp_call_tool", map[string]any{"server_url": notes.URL},
		`{"tool_name": "notes.search", "arguments": "{\"query\": \"memo\"}"}`)
	if res.IsError || res.Text != "found: MEMO" {
		t.Fatalf("call: %+v", res)
	}
	res = invoke(t, s, "mcp_config", "mcp_call_tool", nil, `{"server_url": "http://10.0.0.1:9/sse", "tool_name": "x", "timeout": 2}`)
	if !res.IsError || !strings.Contains(res.Text, "Error calling MCP Server tool") {
		t.Fatalf("a guarded address: %+v", res)
	}
	if _, err := s.Find(context.Background(), tools.Ref{Type: tools.TypeBuiltin, ProviderID: "time", Name: "current_time"}); !errors.Is(err, tools.ErrUnknownTool) {
		t.Fatalf("another provider's tool: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
