package workflow

import "strings"

// AgentStrategy is how an agent node runs the strategy its data names (Dify's
// agent_strategy_provider_name and agent_strategy_name): the strategy plugins Parley runs are
// built in, one entry each.
type AgentStrategy struct {
	// ReAct describes the tools in the prompt and reads the model's answer in the ReAct text
	// protocol, instead of calling them natively (function calling).
	ReAct bool
	// MCPServers names the agent parameter that lists MCP servers whose tools are added to the
	// node's own: mcp_server (hjlarry/agent's mcp_agent: one URL or a JSON object of servers) or
	// mcp_servers_config (junjiem/mcp_see_agent: a JSON object of servers); "" for none.
	MCPServers string
	// TOD is svcvit/agent's task-oriented dialogue: it asks the questions of an information
	// schema over the turns of a conversation, keeping the answers between them, instead of
	// calling tools.
	TOD bool
}

// The agent parameters that name MCP servers (AgentStrategy.MCPServers).
const (
	MCPServerParam        = "mcp_server"
	MCPServersConfigParam = "mcp_servers_config"
)

// Strategy plugins the agent node runs.
const (
	// AgentPluginDify is Dify's own agent plugin: function_calling and ReAct.
	AgentPluginDify = "langgenius/agent"
	// AgentProviderMCP is the strategy provider of hjlarry/agent, "MCP agent": function_calling
	// with MCP servers' tools.
	AgentProviderMCP = "hjlarry/agent/mcp_agent"
	// AgentProviderMCPSee is the strategy provider of junjiem/mcp_see_agent, "Agent strategies
	// (support MCP tools)": mcp_sse_function_calling and mcp_sse_ReAct.
	AgentProviderMCPSee = "junjiem/mcp_see_agent/mcp_see_agent"
	// AgentProviderDialogue is the strategy provider of svcvit/agent, "Dialogue Agent": TOD.
	AgentProviderDialogue = "svcvit/agent/agent"
)

// SupportedAgentStrategies says which strategies LookupAgentStrategy finds, for messages.
const SupportedAgentStrategies = "langgenius/agent's function_calling and ReAct, hjlarry/agent/mcp_agent's function_calling, " +
	"junjiem/mcp_see_agent's mcp_sse_function_calling and mcp_sse_ReAct, svcvit/agent's TOD"

// LookupAgentStrategy finds the strategy an agent node names: provider is the strategy
// provider (langgenius/agent/agent, hjlarry/agent/mcp_agent), name the strategy; an empty
// provider is Dify's own plugin and an empty name function calling, as early exports write them.
func LookupAgentStrategy(provider, name string) (AgentStrategy, bool) {
	switch {
	case provider == "" || strings.HasPrefix(provider, AgentPluginDify+"/") || provider == AgentPluginDify:
		switch name {
		case "", "function_calling":
			return AgentStrategy{}, true
		case "ReAct":
			return AgentStrategy{ReAct: true}, true
		}
	case provider == AgentProviderMCP:
		if name == "" || name == "function_calling" {
			return AgentStrategy{MCPServers: MCPServerParam}, true
		}
	case provider == AgentProviderDialogue:
		if name == "TOD" {
			return AgentStrategy{TOD: true}, true
		}
	case provider == AgentProviderMCPSee:
		switch name {
		case "mcp_sse_function_calling":
			return AgentStrategy{MCPServers: MCPServersConfigParam}, true
		case "mcp_sse_ReAct":
			return AgentStrategy{ReAct: true, MCPServers: MCPServersConfigParam}, true
		}
	}
	return AgentStrategy{}, false
}
