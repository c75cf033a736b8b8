package nodes

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/mcp"
	"github.com/parleyhq/parley/internal/workflow"
)

// The MCP strategies are function calling (or ReAct) whose tools are the node's own plus those
// of the MCP servers a parameter names, as the plugins read it:
//   - hjlarry/agent's mcp_agent: mcp_server, one server's URL or a JSON object of servers by
//     name, each {"url", "headers", "timeout", "sse_read_timeout"} (timeouts in seconds);
//   - junjiem/mcp_see_agent: mcp_servers_config, a JSON object of servers by name, each also
//     with "transport" (sse or streamable_http), possibly wrapped in double quotes by the
//     variable it was injected from; server names are letters, digits, _ and -.
//
// The servers are connected for the node's run and their tools listed then; a server that
// cannot be reached or listed fails the node, as it fails the plugins' strategies.

// maxMCPServers bounds the servers one node may name.
const maxMCPServers = 8

// mcpDefaultServer is the name a lone URL's server goes by, as the plugin names it.
const mcpDefaultServer = "default_server"

// mcpServerConfig is one server of a JSON mcp_server parameter.
type mcpServerConfig struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// Timeout bounds connecting, listing and each call, in seconds (0: the client's default).
	Timeout float64 `json:"timeout"`
	// SSEReadTimeout is how long the plugin's client waits for an event of an HTTP+SSE
	// stream; Parley's calls are bounded by Timeout instead, so it is read and not used.
	SSEReadTimeout float64 `json:"sse_read_timeout"`
	// Transport is sse or streamable_http (junjiem/mcp_see_agent); the client finds the
	// transport a server speaks by itself, so it is read and not needed.
	Transport string `json:"transport"`
}

// mcpServers are the MCP servers of one run of an MCP agent node, by name.
type mcpServers struct {
	names     []string
	providers []*mcp.Provider
}

// mcpServerName is what junjiem/mcp_see_agent allows a server's name to be.
var mcpServerName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// parseMCPServers reads the text of param, the parameter that names an MCP strategy's servers.
func parseMCPServers(param, spec string) (map[string]mcpServerConfig, error) {
	spec = strings.TrimSpace(spec)
	if param == workflow.MCPServersConfigParam {
		spec = strings.Trim(spec, `"`)
	}
	var servers map[string]mcpServerConfig
	if err := json.Unmarshal([]byte(spec), &servers); err != nil {
		if param != workflow.MCPServerParam || !strings.HasPrefix(spec, "http") || strings.ContainsAny(spec, " \n\t{[") {
			if param == workflow.MCPServersConfigParam {
				return nil, workflow.Errorf(agentErrorType, "mcp_servers_config must be a JSON object of servers: %v", err)
			}
			return nil, workflow.Errorf(agentErrorType, "mcp_server is neither an MCP server's URL nor a JSON object of servers")
		}
		return map[string]mcpServerConfig{mcpDefaultServer: {URL: spec}}, nil
	}
	if len(servers) > maxMCPServers {
		return nil, workflow.Errorf(agentErrorType, "mcp_server names %d servers; at most %d are allowed", len(servers), maxMCPServers)
	}
	for name, c := range servers {
		if c.URL == "" {
			return nil, workflow.Errorf(agentErrorType, "MCP server %q has no url", name)
		}
		if param == workflow.MCPServersConfigParam && !mcpServerName.MatchString(name) {
			return nil, workflow.Errorf(agentErrorType, "MCP server name %q: use only letters, digits, _ and -", name)
		}
	}
	return servers, nil
}

// connectMCP opens the servers spec, the text of param, names (their sessions open on first use). The caller closes
// what it returns, error or not.
func (a *agentNode) connectMCP(ctx context.Context, param, spec string) (*mcpServers, error) {
	out := &mcpServers{}
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	configs, err := parseMCPServers(param, spec)
	if err != nil {
		return out, err
	}
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		c := configs[name]
		h := http.Header{}
		for k, v := range c.Headers {
			h.Set(k, v)
		}
		p, err := mcp.New(mcp.Options{URL: c.URL, Provider: name, HTTPClient: a.d.MCPClient, Headers: h,
			Timeout: time.Duration(c.Timeout * float64(time.Second))})
		if err != nil {
			return out, workflow.Errorf(agentErrorType, "MCP server %q: %v", name, err)
		}
		out.names = append(out.names, name)
		out.providers = append(out.providers, p)
	}
	return out, ctx.Err()
}

// offer lists the servers' tools and returns offers with them added, each under a name no
// other offer has.
func (s *mcpServers) offer(ctx context.Context, offers []llm.Offer) ([]llm.Offer, error) {
	taken := make(map[string]bool, len(offers))
	for _, o := range offers {
		taken[o.Name] = true
	}
	for i, p := range s.providers {
		ts, err := p.Tools(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, workflow.Errorf(agentErrorType, "MCP server %q: %s", s.names[i], p.SafeError(err))
		}
		for _, t := range ts {
			id := t.Identity()
			name := tools.ModelName(id.Name, taken)
			taken[name] = true
			offers = append(offers, llm.Offer{Name: name, Tool: t, Labels: id.Label, Provider: s.names[i]})
		}
	}
	return offers, nil
}

// close ends the servers' sessions.
func (s *mcpServers) close() {
	if s == nil {
		return
	}
	for _, p := range s.providers {
		_ = p.Close()
	}
}
