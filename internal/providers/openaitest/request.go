package openaitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/parleyhq/parley/internal/providers"
)

// Request is a received request, decoded for assertions.
type Request struct {
	// Method and Path are the request line; RawQuery keeps e.g.
	// api-version.
	Method, Path, RawQuery string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the raw body.
	Body []byte

	// Model is the "model" member.
	Model string
	// Stream is the "stream" member (chat).
	Stream bool
	// StreamOptions reports whether "stream_options" was present;
	// IncludeUsage is its include_usage.
	StreamOptions, IncludeUsage bool
	// Messages are the chat messages, decoded back into providers types:
	// string content in Content, array content in Parts.
	Messages []providers.Message
	// Tools are the declared functions.
	Tools []providers.Tool
	// Params holds every other top-level member (temperature, max_tokens,
	// stop, user, …) as decoded by encoding/json.
	Params map[string]any
	// Input is the embeddings input, normalised to a list.
	Input []string
	// EncodingFormat and Dimensions are the embeddings options.
	EncodingFormat string
	Dimensions     int

	promptKey string // raw messages + tools JSON, the prompt count cache key
}

// LastUserMessage returns the text of the last user message ("" if none).
func (r *Request) LastUserMessage() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == providers.RoleUser {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// known chat/embeddings members, kept out of Params.
var knownMembers = map[string]bool{
	"model": true, "messages": true, "tools": true, "stream": true, "stream_options": true,
	"input": true, "encoding_format": true, "dimensions": true,
}

// decode fills the typed fields from Body and validates the shape the way
// OpenAI does, so that client bugs surface as 400s.
func (r *Request) decode() error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.Body, &top); err != nil {
		return fmt.Errorf("We could not parse the JSON body of your request. (%v)", err)
	}
	if err := unmarshalField(top, "model", &r.Model); err != nil {
		return err
	}
	if r.Model == "" {
		return errors.New("you must provide a model parameter")
	}
	if err := unmarshalField(top, "stream", &r.Stream); err != nil {
		return err
	}
	if raw, ok := top["stream_options"]; ok && string(raw) != "null" {
		r.StreamOptions = true
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(raw, &so); err != nil {
			return fmt.Errorf("invalid stream_options: %v", err)
		}
		r.IncludeUsage = so.IncludeUsage
	}
	for k, v := range top {
		if knownMembers[k] {
			continue
		}
		if r.Params == nil {
			r.Params = map[string]any{}
		}
		var x any
		_ = json.Unmarshal(v, &x)
		r.Params[k] = x
	}
	r.promptKey = string(top["messages"]) + "\x00" + string(top["tools"])
	if raw, ok := top["messages"]; ok {
		if err := r.decodeMessages(raw); err != nil {
			return err
		}
	}
	if raw, ok := top["tools"]; ok {
		if err := r.decodeTools(raw); err != nil {
			return err
		}
	}
	if raw, ok := top["input"]; ok {
		if err := r.decodeInput(raw); err != nil {
			return err
		}
	}
	if err := unmarshalField(top, "encoding_format", &r.EncodingFormat); err != nil {
		return err
	}
	return unmarshalField(top, "dimensions", &r.Dimensions)
}

func unmarshalField(top map[string]json.RawMessage, name string, dst any) error {
	raw, ok := top[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("invalid type for '%s': %v", name, err)
	}
	return nil
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wirePart struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

func (r *Request) decodeMessages(raw json.RawMessage) error {
	var msgs []wireMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return fmt.Errorf("invalid 'messages': %v", err)
	}
	if len(msgs) == 0 {
		return errors.New("'messages' must contain at least one message")
	}
	r.Messages = make([]providers.Message, len(msgs))
	for i, m := range msgs {
		out := providers.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		switch m.Role {
		case providers.RoleSystem, providers.RoleUser, providers.RoleAssistant, "developer":
		case providers.RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("messages[%d]: tool messages need 'tool_call_id'", i)
			}
		default:
			return fmt.Errorf("messages[%d].role: invalid value %q", i, m.Role)
		}
		content := bytes.TrimSpace(m.Content)
		switch {
		case len(content) == 0 || string(content) == "null":
			if m.Role != providers.RoleAssistant || len(m.ToolCalls) == 0 {
				return fmt.Errorf("messages[%d].content: expected a string or an array of parts, got null", i)
			}
		case content[0] == '"':
			if err := json.Unmarshal(content, &out.Content); err != nil {
				return fmt.Errorf("messages[%d].content: %v", i, err)
			}
		case content[0] == '[':
			var parts []wirePart
			if err := json.Unmarshal(content, &parts); err != nil {
				return fmt.Errorf("messages[%d].content: %v", i, err)
			}
			for j, p := range parts {
				switch {
				case p.Type == "text" && p.Text != nil:
					out.Parts = append(out.Parts, providers.Part{Type: providers.PartText, Text: *p.Text})
				case p.Type == "image_url" && p.ImageURL != nil && p.ImageURL.URL != "":
					out.Parts = append(out.Parts, providers.Part{Type: providers.PartImageURL, ImageURL: p.ImageURL.URL, Detail: p.ImageURL.Detail})
				default:
					return fmt.Errorf("messages[%d].content[%d]: invalid part of type %q", i, j, p.Type)
				}
			}
		default:
			return fmt.Errorf("messages[%d].content: expected a string or an array of parts", i)
		}
		for j, tc := range m.ToolCalls {
			if tc.Type != "function" || tc.ID == "" || tc.Function.Name == "" {
				return fmt.Errorf("messages[%d].tool_calls[%d]: need id, type \"function\" and function.name", i, j)
			}
			out.ToolCalls = append(out.ToolCalls, providers.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		r.Messages[i] = out
	}
	return nil
}

func (r *Request) decodeTools(raw json.RawMessage) error {
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return fmt.Errorf("invalid 'tools': %v", err)
	}
	for i, t := range tools {
		if t.Type != "function" || t.Function.Name == "" {
			return fmt.Errorf("tools[%d]: need type \"function\" and function.name", i)
		}
		r.Tools = append(r.Tools, providers.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return nil
}

func (r *Request) decodeInput(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("invalid 'input': %v", err)
		}
		r.Input = []string{s}
		return nil
	}
	if err := json.Unmarshal(raw, &r.Input); err != nil {
		return fmt.Errorf("'input' must be a string or an array of strings: %v", err)
	}
	return nil
}
