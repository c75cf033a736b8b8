// Package mcptools holds built-in tools under the names of the Dify tool plugins that wrap MCP
// servers, so that the apps that use them resolve: junjiem/mcp_sse (mcp_sse_list_tools and
// mcp_sse_call_tool, its servers a JSON object in servers_config) and
// arrenxxxxx/mcp_config_during_use (mcp_list_tools and mcp_call_tool, its one server given
// with each call as server_url, headers and timeout). Each call opens a session with the
// server(s) through the mcp package's client, with its guards (the network-guarded HTTP client,
// size and count caps, timeouts), lists or calls, and closes it, as the plugins do.
//
// junjiem/mcp_sse reads servers_config from the provider's credentials when a call leaves it
// out. DSL exports carry no credentials, so here it must be set on the tool (a tool node's or an
// agent's tool_parameters) or given by the model.
package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/mcp"
)

// Provider ids, as plugin ids and as the plugins name their providers.
const (
	junjiemPlugin   = "junjiem/mcp_sse/mcp_sse"
	junjiemName     = "mcp_sse"
	duringUsePlugin = "arrenxxxxx/mcp_config_during_use/mcp_config"
	duringUseName   = "mcp_config"
)

// Set finds the tools of the MCP tool plugins.
type Set struct {
	client *http.Client
}

// New returns the tools, reaching MCP servers through client (the network-guarded client the
// workspace's tools use).
func New(client *http.Client) *Set { return &Set{client: client} }

// Find returns the tool ref names, configured with the app's values; tools.ErrUnknownTool for
// a tool of another provider.
func (s *Set) Find(_ context.Context, ref tools.Ref) (tools.Tool, error) {
	sp, err := tools.FindPlugin(ref, "MCP plugin tools", specs)
	if err != nil {
		return nil, err
	}
	return &tool{spec: sp, set: s, configured: ref.Configured}, nil
}

// spec is one tool of the plugins.
type spec struct {
	plugin, provider, name string
	label, description     string
	parameters             json.RawMessage
	run                    func(ctx context.Context, s *Set, a args) tools.Result
}

// PluginName implements tools.PluginSpec.
func (sp spec) PluginName() (plugin, provider, name string) { return sp.plugin, sp.provider, sp.name }

var specs = []spec{
	{plugin: junjiemPlugin, provider: junjiemName, name: "mcp_sse_list_tools", label: "Fetch MCP Tools",
		description: "Fetch MCP Servers tools list (Gets a list of MCP tools in addition to existing tools).",
		parameters:  schema(map[string]string{"servers_config": "MCP Servers config (JSON), overriding the one set for the tool"}),
		run:         listServersTools},
	{plugin: junjiemPlugin, provider: junjiemName, name: "mcp_sse_call_tool", label: "Call MCP Tool",
		description: "Call MCP Server tool.",
		parameters: schema(map[string]string{"tool_name": "Name of the MCP tool to execute.",
			"arguments":      "MCP Tool arguments (JSON string in the python dict[str, Any] format).",
			"servers_config": "MCP Servers config (JSON), overriding the one set for the tool"}, "tool_name", "arguments"),
		run: callServersTool},
	{plugin: duringUsePlugin, provider: duringUseName, name: "mcp_list_tools", label: "List MCP Tools",
		description: "List all available tools from an MCP Server.",
		parameters:  schema(serverParams(), "server_url"),
		run:         listServerTools},
	{plugin: duringUsePlugin, provider: duringUseName, name: "mcp_call_tool", label: "Call MCP Tool",
		description: "Call a tool on an MCP Server.",
		parameters:  schema(withCallParams(serverParams()), "server_url", "tool_name"),
		run:         callServerTool},
}

// serverParams are the parameters that name mcp_config_during_use's server.
func serverParams() map[string]string {
	return map[string]string{"server_url": "The URL of the MCP Server with SSE endpoint.",
		"headers":          `HTTP headers in JSON format (e.g. {"Authorization":"Bearer token"}).`,
		"timeout":          "HTTP request timeout in seconds.",
		"sse_read_timeout": "SSE read timeout in seconds (time to wait for SSE events)."}
}

// withCallParams is params with the parameters of mcp_config_during_use's call.
func withCallParams(params map[string]string) map[string]string {
	params["tool_name"] = "Name of the tool to execute."
	params["arguments"] = "Tool arguments (JSON string in the python dict[str, Any] format)."
	return params
}

// schema is the JSON Schema of an object of string parameters (timeouts are numbers).
func schema(props map[string]string, required ...string) json.RawMessage {
	p := map[string]any{}
	for name, desc := range props {
		typ := "string"
		if strings.HasSuffix(name, "timeout") {
			typ = "number"
		}
		p[name] = map[string]any{"type": typ, "description": desc}
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": p, "required": append([]string{}, required...)})
	if err != nil {
		panic(err)
	}
	return b
}

// tool is a spec configured for one app.
type tool struct {
	spec
	set        *Set
	configured map[string]any
}

func (t *tool) Identity() tools.Identity {
	return tools.Identity{Provider: t.provider, Name: t.name, Label: map[string]string{"en_US": t.label}}
}

func (t *tool) Description() string { return t.description }

func (t *tool) Parameters() json.RawMessage { return t.parameters }

// Invoke runs the tool with the model's arguments over the app's values. As the plugins do,
// what goes wrong past bad arguments is the tool's answer, for the model to read.
func (t *tool) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	a, err := tools.MergeArgs(t.configured, raw)
	if err != nil {
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	res := t.run(ctx, t.set, a)
	if ctx.Err() != nil {
		return tools.Result{}, context.Cause(ctx)
	}
	return res, nil
}

// args are a call's parameters by name.
type args map[string]any

// text is argument name as text (tools.ArgText).
func (a args) text(name string) string { return tools.ArgText(a, name) }

// number is a numeric parameter (a number or its text); 0 when absent or not a number.
func (a args) number(name string) float64 {
	switch v := a[name].(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case float64:
		return v
	case string:
		var f float64
		if _, err := fmt.Sscan(v, &f); err == nil {
			return f
		}
	}
	return 0
}

// failed is a result that tells the model what went wrong.
func failed(format string, v ...any) tools.Result {
	return tools.Result{Text: fmt.Sprintf(format, v...), IsError: true}
}

// session is the providers of one call, by server name in name order.
type session struct {
	names     []string
	providers []*mcp.Provider
}

func (s *session) close() {
	for _, p := range s.providers {
		_ = p.Close()
	}
}

// open makes a provider of each server.
func (s *Set) open(servers map[string]mcp.ServerConfig) (*session, error) {
	out := &session{}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		p, err := mcp.New(servers[name].Options(name, s.client))
		if err != nil {
			out.close()
			return nil, err
		}
		out.names = append(out.names, name)
		out.providers = append(out.providers, p)
	}
	return out, nil
}

// listed is a tool as the list tools describe it.
type listed struct {
	name   string
	server int
	tool   tools.Tool
}

// list lists the tools of every server of the session; a name two servers share is prefixed
// with the server's name ("server__tool") from the second on, as junjiem/mcp_sse names them.
func (s *session) list(ctx context.Context) ([]listed, error) {
	var out []listed
	taken := map[string]bool{}
	for i, p := range s.providers {
		ts, err := p.Tools(ctx)
		if err != nil {
			return nil, errors.New(p.SafeError(err))
		}
		for _, t := range ts {
			name := t.Identity().Name
			if taken[name] {
				name = s.names[i] + "__" + name
			}
			taken[name] = true
			out = append(out, listed{name: name, server: i, tool: t})
		}
	}
	return out, nil
}

// serversConfig is junjiem/mcp_sse's servers_config of a call, or the plugin's message for
// what is wrong with it.
func serversConfig(a args) (map[string]mcp.ServerConfig, string) {
	text := strings.TrimSpace(a.text("servers_config"))
	if text == "" {
		return nil, "Please fill in the servers_config"
	}
	servers, err := mcp.ParseServers([]byte(text))
	if err != nil {
		return nil, fmt.Sprintf("servers_config must be a valid JSON string: %v", err)
	}
	return servers, ""
}

// listServersTools is mcp_sse_list_tools: the tools of every server, as the model is offered
// tools ({name, description, parameters}), after "MCP Server tools list:".
func listServersTools(ctx context.Context, s *Set, a args) tools.Result {
	servers, msg := serversConfig(a)
	return s.withSession(servers, msg, "Error listing MCP Server tools", func(sess *session) tools.Result {
		return listTools(ctx, sess, "MCP Server tools list: \n", "parameters")
	})
}

// callServersTool is mcp_sse_call_tool: the tool named tool_name, on the server that lists it.
func callServersTool(ctx context.Context, s *Set, a args) tools.Result {
	servers, msg := serversConfig(a)
	return s.withSession(servers, msg, "Error calling MCP Server tool", func(sess *session) tools.Result {
		return call(ctx, sess, a, true)
	})
}

// oneServer is mcp_config_during_use's server of a call, or the plugin's message for what is
// wrong with it.
func oneServer(a args) (map[string]mcp.ServerConfig, string) {
	url := strings.TrimSpace(a.text("server_url"))
	if url == "" {
		return nil, "Please fill in the server_url"
	}
	c := mcp.ServerConfig{URL: url, Timeout: a.number("timeout"), SSEReadTimeout: a.number("sse_read_timeout")}
	if c.Timeout == 0 {
		c.Timeout = 60 // the plugin's default
	}
	if h := strings.TrimSpace(a.text("headers")); h != "" {
		if err := json.Unmarshal([]byte(h), &c.Headers); err != nil {
			return nil, fmt.Sprintf("Headers must be a valid JSON string: %v", err)
		}
	}
	return map[string]mcp.ServerConfig{"server": c}, ""
}

// listServerTools is mcp_list_tools: the server's tools as it lists them ({name,
// description, inputSchema}).
func listServerTools(ctx context.Context, s *Set, a args) tools.Result {
	server, msg := oneServer(a)
	return s.withSession(server, msg, "Error listing MCP Server tools", func(sess *session) tools.Result {
		return listTools(ctx, sess, "", "inputSchema")
	})
}

// callServerTool is mcp_call_tool: the tool named tool_name on the server.
func callServerTool(ctx context.Context, s *Set, a args) tools.Result {
	server, msg := oneServer(a)
	return s.withSession(server, msg, "Error calling MCP Server tool", func(sess *session) tools.Result {
		return call(ctx, sess, a, false)
	})
}

// withSession runs fn with a session of servers, closed after; msg, when set, is what is wrong
// with the servers' configuration, the answer instead. A session that cannot be opened is the
// answer, after failing (the plugins' wording).
func (s *Set) withSession(servers map[string]mcp.ServerConfig, msg, failing string, fn func(*session) tools.Result) tools.Result {
	if msg != "" {
		return failed("%s", msg)
	}
	sess, err := s.open(servers)
	if err != nil {
		return failed("%s: %v", failing, err)
	}
	defer sess.close()
	return fn(sess)
}

// listTools answers the session's tools as a JSON list of {name, description, schemaKey}
// after prefix.
func listTools(ctx context.Context, sess *session, prefix, schemaKey string) tools.Result {
	ts, err := sess.list(ctx)
	if err != nil {
		return failed("Error listing MCP Server tools: %v", err)
	}
	out := make([]map[string]any, 0, len(ts))
	for _, t := range ts {
		out = append(out, map[string]any{"name": t.name, "description": t.tool.Description(), schemaKey: t.tool.Parameters()})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return failed("Error listing MCP Server tools: %v", err)
	}
	return tools.Result{Text: prefix + string(b)}
}

// call calls the tool tool_name of the session with arguments (a JSON object, or its text;
// needArgs: it must be given, as junjiem/mcp_sse asks).
func call(ctx context.Context, sess *session, a args, needArgs bool) tools.Result {
	name := a.text("tool_name")
	if name == "" {
		return failed("Please fill in the tool_name")
	}
	argText := strings.TrimSpace(a.text("arguments"))
	if argText == "" {
		if needArgs {
			return failed("Please fill in the arguments")
		}
		argText = "{}"
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(argText), &obj); err != nil {
		return failed("Arguments must be a valid JSON string: %v", err)
	}
	ts, err := sess.list(ctx)
	if err != nil {
		return failed("Error calling MCP Server tool: %v", err)
	}
	for _, t := range ts {
		if t.name != name {
			continue
		}
		res, err := t.tool.Invoke(ctx, json.RawMessage(argText))
		if err != nil {
			return failed("Error calling MCP Server tool: %s", sess.providers[t.server].SafeError(err))
		}
		return res
	}
	return failed("Error calling MCP Server tool: there is no tool %q", name)
}
