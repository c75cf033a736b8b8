package tools

import (
	"strconv"
	"strings"
)

// Provider types, as Dify's DSL spells an agent tool's provider_type.
const (
	TypeBuiltin = "builtin"
	// TypePlugin is the plugin-era spelling of the built-in tools (provider ids such as
	// "langgenius/time/time").
	TypePlugin = "plugin"
	// TypeAPI is a custom API tool: an operation of a registered OpenAPI or Swagger document.
	TypeAPI = "api"
	// TypeMCP is a tool of a registered MCP server.
	TypeMCP = "mcp"
	// TypeWorkflow is a published Workflow app of this server offered as a tool.
	TypeWorkflow = "workflow"
)

// Ref is how an app names a tool, in the words of Dify's DSL.
type Ref struct {
	// Type is the provider_type; empty means builtin.
	Type string
	// ProviderID and ProviderName are provider_id and provider_name: for built-in tools the
	// provider's id, for API tools the provider's id and name, for MCP tools the server
	// identifier and the provider's name.
	ProviderID, ProviderName string
	// Name is the tool_name.
	Name string
	// Configured are the values the app set for the tool's parameters (tool_parameters).
	Configured map[string]any
}

// Provider is the provider the reference names: its id, else its name.
func (r Ref) Provider() string {
	if r.ProviderID != "" {
		return r.ProviderID
	}
	return r.ProviderName
}

// maxModelName is the longest tool name model APIs accept.
const maxModelName = 64

// ModelName turns name into a tool name model APIs accept (^[a-zA-Z0-9_-]{1,64}$) that is not
// in taken: other characters become "_", a long name is cut, and a taken one gets a number
// ("_2", "_3", …). A name that is already acceptable and free is returned as is.
func ModelName(name string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range name {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" {
		base = "tool"
	}
	if len(base) > maxModelName {
		base = base[:maxModelName]
	}
	out := base
	for n := 2; taken[out]; n++ {
		suffix := "_" + strconv.Itoa(n)
		out = base[:min(len(base), maxModelName-len(suffix))] + suffix
	}
	return out
}
