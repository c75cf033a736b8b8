package tools

import (
	"fmt"
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

// PluginSpec names a built-in tool of a Dify plugin: the plugin's provider id
// ("langgenius/echarts/echarts"), its bare provider name ("echarts") and the tool's name.
type PluginSpec interface {
	PluginName() (plugin, provider, name string)
}

// FindPlugin is the spec ref names among specs, by the plugin's provider id or bare name and
// the tool's name, for a reference of provider type builtin or plugin (or none); an error
// wrapping ErrUnknownTool otherwise. kind says what the specs are, for that error.
func FindPlugin[S PluginSpec](ref Ref, kind string, specs []S) (S, error) {
	var none S
	switch ref.Type {
	case "", TypeBuiltin, TypePlugin:
	default:
		return none, fmt.Errorf("%w: %s tools are not %s", ErrUnknownTool, ref.Type, kind)
	}
	provider := ref.Provider()
	for _, sp := range specs {
		if plugin, bare, name := sp.PluginName(); (provider == plugin || provider == bare) && ref.Name == name {
			return sp, nil
		}
	}
	return none, fmt.Errorf("%w: %s/%s", ErrUnknownTool, provider, ref.Name)
}
