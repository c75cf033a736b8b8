package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/providers"
)

type wirePart struct {
	Type     string    `json:"type"`
	Text     *string   `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type wireToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      string  `json:"name"`
	Arguments argText `json:"arguments"`
}

// argText is a tool call's arguments. OpenAI sends a JSON string holding
// JSON text; some compatible servers send the object itself, which is
// kept as its JSON text.
type argText string

// UnmarshalJSON accepts a string, an object, or null.
func (a *argText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*a = ""
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = argText(s)
	default:
		*a = argText(b)
	}
	return nil
}

// textContent is response content: a string, null, or an array of parts
// whose text parts are concatenated.
type textContent string

// UnmarshalJSON accepts a string, null, or an array of content parts.
func (t *textContent) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0 || string(b) == "null":
		*t = ""
	case b[0] == '"':
		// Fast path for the common delta without escapes: one allocation
		// instead of a nested decode.
		if len(b) >= 2 && bytes.IndexByte(b[1:len(b)-1], '\\') < 0 && bytes.IndexByte(b[1:len(b)-1], '"') < 0 {
			*t = textContent(b[1 : len(b)-1])
			return nil
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = textContent(s)
	case b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "output_text" {
				sb.WriteString(p.Text)
			}
		}
		*t = textContent(sb.String())
	default:
		return fmt.Errorf("unexpected content %.20s", b)
	}
	return nil
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u *wireUsage) usage() *providers.Usage {
	if u == nil {
		return nil
	}
	p := u.PromptTokens
	if p == 0 && u.CompletionTokens == 0 && u.TotalTokens > 0 {
		p = u.TotalTokens // embeddings servers that only report a total
	}
	return &providers.Usage{PromptTokens: p, CompletionTokens: u.CompletionTokens}
}

// chatResponse is a non-streamed chat completion.
type chatResponse struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content   textContent    `json:"content"`
			ToolCalls []wireToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamChunk is one chat.completion.chunk.
type streamChunk struct {
	Choices []streamChoice `json:"choices"`
	Usage   *wireUsage     `json:"usage"`
	Error   optionalRaw    `json:"error"`
}

// optionalRaw is json.RawMessage that stays nil for null, sparing an
// allocation on every chunk (OpenAI chunks carry no error member, but
// some servers send "error":null).
type optionalRaw []byte

// UnmarshalJSON keeps a copy of b unless it is null.
func (r *optionalRaw) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = nil
		return nil
	}
	*r = append((*r)[:0], b...)
	return nil
}

type streamChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content          textContent     `json:"content"`
		ReasoningContent textContent     `json:"reasoning_content"`
		ToolCalls        []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string  `json:"name"`
		Arguments argText `json:"arguments"`
	} `json:"function"`
}

type embedBody struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
	User  string   `json:"user,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage *wireUsage `json:"usage"`
}

// reservedParams are request fields the protocol sets itself; the same
// keys in ChatRequest.Parameters are ignored.
var reservedParams = []string{"model", "messages", "tools", "stream", "stream_options"}

// encodeChat renders req as a chat completions request body. Parameters
// become extra top-level fields in key order, so the output is
// deterministic. The messages, which carry a conversation's whole history
// into every request, are written by hand (with jsonenc), not through
// encoding/json's reflection.
func encodeChat(req providers.ChatRequest, stream, includeUsage bool) ([]byte, error) {
	size := 64 + len(req.Model) + len(req.User)
	for i := range req.Messages {
		size += 48 + len(req.Messages[i].Content)
	}
	out := make([]byte, 0, size+size/16)
	out = append(out, `{"model":`...)
	out = jsonenc.AppendString(out, req.Model)
	out = append(out, `,"messages":[`...)
	for i := range req.Messages {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = appendMessage(out, &req.Messages[i]); err != nil {
			return nil, err
		}
	}
	out = append(out, ']')
	if len(req.Tools) > 0 {
		tools := make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			tools[i] = wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
		}
		b, err := json.Marshal(tools)
		if err != nil {
			return nil, err
		}
		out = append(out, `,"tools":`...)
		out = append(out, b...)
	}
	if stream {
		out = append(out, `,"stream":true`...)
		if includeUsage {
			out = append(out, `,"stream_options":{"include_usage":true}`...)
		}
	}
	if req.User != "" {
		out = append(out, `,"user":`...)
		out = jsonenc.AppendString(out, req.User)
	}
	keys := make([]string, 0, len(req.Parameters))
	for k := range req.Parameters {
		if k == "" || slices.Contains(reservedParams, k) || (k == "user" && req.User != "") {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := json.Marshal(req.Parameters[k])
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", k, err)
		}
		out = append(out, ',')
		out = jsonenc.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// appendMessage appends m as OpenAI's message object: role, content (a
// string, an array of parts for vision, or null for an assistant message
// that only calls tools), name, tool_calls and tool_call_id.
func appendMessage(out []byte, m *providers.Message) ([]byte, error) {
	out = append(out, `{"role":`...)
	out = jsonenc.AppendString(out, m.Role)
	out = append(out, `,"content":`...)
	switch {
	case len(m.Parts) > 0:
		parts := make([]wirePart, len(m.Parts))
		for i, p := range m.Parts {
			switch p.Type {
			case providers.PartImageURL:
				parts[i] = wirePart{Type: providers.PartImageURL, ImageURL: &imageURL{URL: p.ImageURL, Detail: p.Detail}}
			case providers.PartText, "":
				parts[i] = wirePart{Type: providers.PartText, Text: &p.Text}
			default:
				return nil, fmt.Errorf("unsupported content part type %q", p.Type)
			}
		}
		b, err := json.Marshal(parts)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	case m.Content == "" && len(m.ToolCalls) > 0:
		out = append(out, "null"...)
	default:
		out = jsonenc.AppendString(out, m.Content)
	}
	if m.Name != "" {
		out = append(out, `,"name":`...)
		out = jsonenc.AppendString(out, m.Name)
	}
	if len(m.ToolCalls) > 0 {
		out = append(out, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, `{"id":`...)
			out = jsonenc.AppendString(out, tc.ID)
			out = append(out, `,"type":"function","function":{"name":`...)
			out = jsonenc.AppendString(out, tc.Name)
			out = append(out, `,"arguments":`...)
			out = jsonenc.AppendString(out, tc.Arguments)
			out = append(out, "}}"...)
		}
		out = append(out, ']')
	}
	if m.ToolCallID != "" {
		out = append(out, `,"tool_call_id":`...)
		out = jsonenc.AppendString(out, m.ToolCallID)
	}
	return append(out, '}'), nil
}
