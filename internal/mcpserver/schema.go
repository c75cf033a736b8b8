package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jsonenc"
)

// QueryDescription is the description of the `query` argument of chat apps' tools, Dify's.
const QueryDescription = "User Input/Question content"

// TakesQuery reports whether the tool of an app of mode takes a `query` argument besides the
// inputs: the chat kinds do (Chatbot, Legacy Agent, Agent, Chatflow); Completion and Workflow
// apps take their inputs alone.
func TakesQuery(mode string) bool {
	return mode != apps.ModeCompletion && mode != apps.ModeWorkflow
}

// skipped reports whether an input of this type is left out of the tool's schema, as Dify
// leaves it out: files cannot be given as a tool's arguments, and an external data tool's value
// is fetched by the app, not given.
func skipped(typ string) bool {
	return typ == "file" || typ == "file-list" || typ == "external_data_tool"
}

// InputSchema is the JSON Schema of the arguments of an app's tool: an object with a property
// per input of the form (files left out), each described by params (the server's parameter
// descriptions, "" when it has none), and `query` first for the chat kinds. Text inputs are
// strings (with their maximum length), selects strings among their options, numbers numbers,
// checkboxes booleans; other kinds of input have no type. Properties keep the form's order.
func InputSchema(mode string, form []apps.InputField, params map[string]string) json.RawMessage {
	b := []byte(`{"type":"object","properties":{`)
	var required []string
	first := true
	if TakesQuery(mode) {
		b = append(b, `"query":{"type":"string","description":`...)
		b = jsonenc.AppendString(b, QueryDescription)
		b = append(b, '}')
		required = append(required, "query")
		first = false
	}
	for _, f := range form {
		if skipped(f.Type) || f.Variable == "" || (f.Variable == "query" && TakesQuery(mode)) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = jsonenc.AppendString(b, f.Variable)
		b = append(b, `:{"description":`...)
		b = jsonenc.AppendString(b, params[f.Variable])
		switch f.Type {
		case apps.InputText, apps.InputParagraph:
			b = append(b, `,"type":"string"`...)
			if f.MaxLength > 0 {
				b = append(b, fmt.Sprintf(`,"maxLength":%d`, f.MaxLength)...)
			}
		case apps.InputSelect:
			b = append(b, `,"type":"string","enum":`...)
			opts, _ := json.Marshal(nonNil(f.Options))
			b = append(b, opts...)
		case apps.InputNumber:
			b = append(b, `,"type":"number"`...)
		case apps.InputCheckbox:
			b = append(b, `,"type":"boolean"`...)
		}
		b = append(b, '}')
		if f.Required {
			required = append(required, f.Variable)
		}
	}
	b = append(b, `},"required":`...)
	req, _ := json.Marshal(nonNil(required))
	b = append(b, req...)
	return append(b, '}')
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Variables lists the variables of the form the tool's schema has (file inputs left out), for
// the command line to check the names of parameter descriptions against.
func Variables(form []apps.InputField) []string {
	var out []string
	for _, f := range form {
		if !skipped(f.Type) && f.Variable != "" {
			out = append(out, f.Variable)
		}
	}
	return out
}

// maxToolName is the longest tool name clients accept (the MCP specification allows 128;
// some model APIs, which clients hand the tools to, allow 64).
const maxToolName = 64

// ToolName is the name of an app's tool: the app's name where it is already a tool name
// (letters, digits, `_`, `-` and `.`), else with every other character replaced by `_`, at
// most 64 characters. Dify names the tool after the app as it is, but the MCP specification
// asks tool names not to contain spaces and clients refuse names that model APIs refuse; the
// app's name as it is becomes the tool's title.
func ToolName(appName string) string {
	var b strings.Builder
	for _, r := range appName {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= maxToolName {
			break
		}
	}
	name := b.String()
	if strings.Trim(name, "_") == "" {
		return "app"
	}
	return name
}

// ArgumentError is a tool call whose arguments the app cannot take (JSON-RPC -32602, invalid
// params, as in Dify).
type ArgumentError struct{ Message string }

func (e *ArgumentError) Error() string { return e.Message }

// SafeMessage implements safeerr.Error: the message is for the client.
func (e *ArgumentError) SafeMessage() string { return e.Message }

// Arguments maps a tool call's arguments to the query and inputs the app runs with, as Dify
// does: a Workflow app's inputs are the arguments; a Completion app's too, with an empty query;
// a chat app's query is the `query` argument and its inputs are the others. Arguments that
// are not a JSON object, or a chat app's missing query, give an *ArgumentError; the inputs are
// checked against the app's form when the run starts.
func Arguments(mode string, raw json.RawMessage) (query string, inputs map[string]any, err error) {
	inputs = map[string]any{}
	if trimmed := strings.TrimSpace(string(raw)); trimmed != "" && trimmed != "null" {
		if err := json.Unmarshal(raw, &inputs); err != nil || inputs == nil {
			return "", nil, &ArgumentError{"The arguments must be a JSON object."}
		}
	}
	if !TakesQuery(mode) {
		return "", inputs, nil
	}
	q, present := inputs["query"]
	delete(inputs, "query")
	s, ok := q.(string)
	switch {
	case !present || q == nil:
		return "", nil, &ArgumentError{"query is required: " + QueryDescription + "."}
	case !ok:
		return "", nil, &ArgumentError{"query must be a string."}
	case strings.TrimSpace(s) == "":
		return "", nil, &ArgumentError{"query must not be empty."}
	}
	return s, inputs, nil
}
