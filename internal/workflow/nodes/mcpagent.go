package nodes

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"

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

// mcpDefaultServer is the name a lone URL's server goes by, as hjlarry/agent names it.
const mcpDefaultServer = "default_server"

// mcpServers are the MCP servers of one run of an MCP agent node, by name.
type mcpServers struct {
	names     []string
	providers []*mcp.Provider
}

// mcpServerName is what junjiem/mcp_see_agent allows a server's name to be.
var mcpServerName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// parseMCPServers reads the text of param, the parameter that names an MCP strategy's servers.
func parseMCPServers(param, spec string) (map[string]mcp.ServerConfig, error) {
	spec = strings.TrimSpace(spec)
	if param == workflow.MCPServersConfigParam {
		spec = strings.Trim(spec, `"`)
	} else if strings.HasPrefix(spec, "http") && !strings.ContainsAny(spec, " \n\t{[") {
		return map[string]mcp.ServerConfig{mcpDefaultServer: {URL: spec}}, nil
	}
	servers, err := mcp.ParseServers([]byte(spec))
	if err != nil {
		if param == workflow.MCPServerParam {
			return nil, workflow.Errorf(agentErrorType, "mcp_server is neither an MCP server's URL nor a JSON object of servers: %v", err)
		}
		return nil, workflow.Errorf(agentErrorType, "%s: %v", param, err)
	}
	if param == workflow.MCPServersConfigParam {
		for name := range servers {
			if !mcpServerName.MatchString(name) {
				return nil, workflow.Errorf(agentErrorType, "MCP server name %q: use only letters, digits, _ and -", name)
			}
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
		p, err := mcp.New(configs[name].Options(name, a.d.MCPClient))
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
