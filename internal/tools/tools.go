// Package tools is what agents (Legacy Agent and Agent apps) and workflow tool nodes call: a Tool
// has a name, a description and a JSON Schema of its arguments for the model, and is invoked with
// the arguments the model chose. Tool kinds live in sub-packages: builtin (tools that need no
// network, and a web-page reader behind the network guard), openapi (operations of an OpenAPI 3 or
// Swagger 2 document) and mcp (the tools of an MCP server).
//
// A tool's failure is data for the model, not an error of the run: Invoke returns an error only
// when the call could not be made at all (a cancelled context, a misconfigured tool), and reports
// what went wrong on the other side (an HTTP 500, a timeout, bad arguments) in the Result's text
// with IsError set, which an agent passes back to the model as the observation.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Tool is one callable tool.
type Tool interface {
	// Identity names the tool: its provider and name as Dify's DSL spells them, and its labels.
	Identity() Identity
	// Description tells the model what the tool does.
	Description() string
	// Parameters is the JSON Schema (an object schema) of the arguments the model gives.
	Parameters() json.RawMessage
	// Invoke calls the tool with the model's arguments (a JSON object), merged over the values an
	// app configured for the tool (see Configured).
	Invoke(ctx context.Context, args json.RawMessage) (Result, error)
}

// Identity names a tool.
type Identity struct {
	// Provider is the tool's provider id, e.g. "time", "math", "json_process", or the name an API
	// or MCP tool provider was registered under.
	Provider string
	// Name is the tool's name within its provider, e.g. "current_time"; what the model calls it
	// by is Name, unique within one agent.
	Name string
	// Label is the tool's display name per locale (en_US at least); agent_thought's tool_labels
	// carries it.
	Label map[string]string
}

// Result is what a call returned.
type Result struct {
	// Text is the observation the model reads.
	Text string
	// IsError says the call reached the tool and failed; Text says how.
	IsError bool
	// Files are files the tool produced (images, documents); an agent stores them as message
	// files.
	Files []File
	// Variables is a JSON object of named outputs the tool declares (an MCP tool's output schema
	// and its structured content); a workflow's tool node exposes each member as an output
	// variable, as Dify's variable messages. Nil for tools without declared outputs.
	Variables json.RawMessage
	// JSON is a JSON object the tool sends besides its text, as a Dify plugin's JSON message:
	// a workflow's tool node has it as its json output. Nil for none.
	JSON json.RawMessage
}

// File is a file a tool produced.
type File struct {
	Name     string
	MIMEType string
	Data     []byte
}

// ErrUnknownTool: no tool of that provider and name is registered.
var ErrUnknownTool = errors.New("tools: unknown tool")

// ErrBadArguments: the arguments are not a JSON object, or do not fit the tool's parameters.
// Invoke implementations report it in the Result (IsError) rather than returning it; it exists so
// that implementations can wrap and tests can recognise it.
var ErrBadArguments = errors.New("tools: bad arguments")

// MergeArgs is a call's arguments: the model's (raw, a JSON object, numbers as json.Number so
// that integers stay exact) over the values an app configured for the tool. An empty string or
// a null counts as unset, as Dify's exports leave unset parameters as "". Arguments that are not
// one JSON object are ErrBadArguments.
func MergeArgs(configured map[string]any, raw json.RawMessage) (map[string]any, error) {
	a := map[string]any{}
	for k, v := range configured {
		if s, ok := v.(string); (ok && s == "") || v == nil {
			continue
		}
		a[k] = v
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return a, nil
	}
	var model map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&model); err != nil || model == nil {
		return nil, fmt.Errorf("%w: the arguments must be a JSON object", ErrBadArguments)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: the arguments must be one JSON object", ErrBadArguments)
	}
	for k, v := range model {
		if s, ok := v.(string); (ok && s == "") || v == nil {
			continue
		}
		a[k] = v
	}
	return a, nil
}

// ArgText is argument name of a (MergeArgs's) as text: a string as it is, anything else as
// its JSON text (a model may give an object where a plugin asks for JSON text); "" when absent.
func ArgText(a map[string]any, name string) string {
	switch v := a[name].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}
