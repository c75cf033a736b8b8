package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/providers"
)

// Chat sends a non-streamed chat completion and returns the first choice.
func (c *Client) Chat(ctx context.Context, req providers.ChatRequest) (*providers.ChatResponse, error) {
	body, err := encodeChat(req, false, false)
	if err != nil {
		return nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	x, err := c.post(ctx, c.chatURL, body, false)
	if err != nil {
		return nil, err
	}
	var resp chatResponse
	derr := json.NewDecoder(x).Decode(&resp)
	if derr != nil {
		e := c.decodeError(x, derr)
		x.finish(false)
		return nil, e
	}
	x.finish(true)
	if len(resp.Choices) == 0 {
		if e := c.bodyError(resp.Error); e != nil {
			return nil, e
		}
		return nil, providers.NewError(c.name, providers.KindInvocation, http.StatusOK, "response has no choices", nil)
	}
	ch := resp.Choices[0]
	out := &providers.ChatResponse{
		Content:      string(ch.Message.Content),
		FinishReason: ch.FinishReason,
		Usage:        resp.Usage.usage(),
	}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, providers.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
	}
	return out, nil
}

// decodeError classifies a failure to read or decode a 2xx body: transport
// failures (including timeouts and cancellation) keep their meaning, bad
// JSON is an invocation error.
func (c *Client) decodeError(x *exchange, err error) *providers.Error {
	if x.ctx.Err() != nil || isTimeout(err) {
		return c.transportError(x.ctx, err, false)
	}
	_, syntax := errors.AsType[*json.SyntaxError](err)
	_, typ := errors.AsType[*json.UnmarshalTypeError](err)
	if syntax || typ || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return providers.NewError(c.name, providers.KindInvocation, http.StatusOK, "invalid response from the provider", err)
	}
	return c.transportError(x.ctx, err, false)
}

// bodyError maps an "error" member found in a 2xx body or a stream chunk;
// nil when there is none.
func (c *Client) bodyError(raw []byte) *providers.Error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	e := parseErrorBody(append(append([]byte(`{"error":`), raw...), '}'))
	msg := c.scrub(e.Message)
	if msg == "" {
		msg = "the provider reported an error"
	}
	return providers.NewError(c.name, classify(0, e), 0, msg, fmt.Errorf("upstream error (type %q, code %q)", e.Type, e.Code))
}

// ChatStream starts a streamed chat completion, asking for usage with
// stream_options.include_usage. If the upstream rejects stream_options
// with a 400/422 that names it (older vLLM and Ollama), the request is
// retried once without it and later streams of this client skip it; those
// streams report no usage (Chunk.Usage nil) and the caller counts tokens.
func (c *Client) ChatStream(ctx context.Context, req providers.ChatRequest) (providers.Stream, error) {
	withUsage := !c.noStreamOptions.Load()
	s, err := c.openStream(ctx, req, withUsage)
	if err == nil || !withUsage || !rejectsStreamOptions(err) {
		return s, err
	}
	s, err = c.openStream(ctx, req, false)
	if err == nil {
		c.noStreamOptions.Store(true)
	}
	return s, err
}

func (c *Client) openStream(ctx context.Context, req providers.ChatRequest, withUsage bool) (*stream, error) {
	body, err := encodeChat(req, true, withUsage)
	if err != nil {
		return nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	x, err := c.post(ctx, c.chatURL, body, true)
	if err != nil {
		return nil, err
	}
	return newStream(c, x), nil
}

// rejectsStreamOptions recognises an upstream's refusal of the
// stream_options field: a 400/422 invocation error whose message points at
// the field or at unknown fields in general.
func rejectsStreamOptions(err error) bool {
	e, ok := errors.AsType[*providers.Error](err)
	if !ok || e.Kind != providers.KindInvocation || (e.StatusCode != http.StatusBadRequest && e.StatusCode != http.StatusUnprocessableEntity) {
		return false
	}
	msg := strings.ToLower(e.Message)
	for _, hint := range []string{"stream_options", "stream options", "extra", "unrecognized", "unknown field", "not permitted"} {
		if strings.Contains(msg, hint) {
			return true
		}
	}
	return false
}

// toolCalls assembles streamed tool-call deltas into complete calls. Deltas
// carry an index; the first one of a call has its id and name, later ones
// append to the arguments. Servers that omit the index send each call
// whole or continue the last one, which the id tells apart.
type toolCalls struct {
	calls []indexedCall
}

type indexedCall struct {
	index int
	call  providers.ToolCall // Arguments is filled from args by list
	args  []byte
}

func (t *toolCalls) add(d toolCallDelta) {
	var cur *indexedCall
	if d.Index != nil {
		for i := range t.calls {
			if t.calls[i].index == *d.Index {
				cur = &t.calls[i]
				break
			}
		}
	} else if n := len(t.calls); n > 0 && (d.ID == "" || t.calls[n-1].call.ID == "" || t.calls[n-1].call.ID == d.ID) {
		cur = &t.calls[n-1]
	}
	if cur == nil {
		idx := len(t.calls)
		if d.Index != nil {
			idx = *d.Index
		}
		t.calls = append(t.calls, indexedCall{index: idx})
		cur = &t.calls[len(t.calls)-1]
	}
	if cur.call.ID == "" {
		cur.call.ID = d.ID
	}
	// The name normally arrives whole in the first delta; some servers
	// repeat it in every delta, a few split it.
	switch name := d.Function.Name; {
	case name == "" || name == cur.call.Name:
	case cur.call.Name == "":
		cur.call.Name = name
	default:
		cur.call.Name += name
	}
	cur.args = append(cur.args, d.Function.Arguments...)
}

func (t *toolCalls) list() []providers.ToolCall {
	if len(t.calls) == 0 {
		return nil
	}
	slices.SortStableFunc(t.calls, func(a, b indexedCall) int { return a.index - b.index })
	out := make([]providers.ToolCall, len(t.calls))
	for i, c := range t.calls {
		out[i] = c.call
		out[i].Arguments = string(c.args)
	}
	return out
}
