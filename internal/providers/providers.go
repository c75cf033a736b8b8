// Package providers defines the small, protocol-neutral interface between
// Parley's chat and knowledge runtimes and the model providers behind them.
//
// A protocol package (internal/providers/openai, …) implements [ChatModel]
// and [Embedder] for one wire protocol. The runtimes only see the types in
// this package: messages in, text, tool calls and token usage out, and an
// [*Error] whose [Kind] tells the API layer which Dify error code to use
// (see [Kind] for the mapping).
//
// Usage reported by the provider is passed through as is. A nil *Usage means
// the provider reported none (older vLLM/Ollama servers that reject
// stream_options, a stream that ended after finish_reason but before its
// usage chunk); counting tokens then is the caller's job (internal/tokens).
package providers

import (
	"context"
	"encoding/json"
	"io"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Part types for multimodal message content.
const (
	PartText     = "text"
	PartImageURL = "image_url"
)

// Image detail levels for [Part.Detail] (OpenAI's vision "detail").
const (
	DetailAuto = "auto"
	DetailLow  = "low"
	DetailHigh = "high"
)

// Message is one chat message.
type Message struct {
	// Role is RoleSystem, RoleUser, RoleAssistant or RoleTool.
	Role string
	// Content is the text content. It is ignored when Parts is non-empty.
	Content string
	// Parts is optional multimodal content (text and images, in order). When
	// set it replaces Content on the wire.
	Parts []Part
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID links a RoleTool message (the tool's result) to its call.
	ToolCallID string
	// Name is the optional participant name.
	Name string
}

// Text returns the message's text: Content, or the text parts joined
// without separator when Parts is set.
func (m Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	if len(m.Parts) == 1 && m.Parts[0].Type == PartText {
		return m.Parts[0].Text
	}
	var n int
	for _, p := range m.Parts {
		n += len(p.Text)
	}
	b := make([]byte, 0, n)
	for _, p := range m.Parts {
		if p.Type == PartText {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// Part is one piece of multimodal content.
type Part struct {
	// Type is PartText or PartImageURL.
	Type string
	// Text is the text of a PartText part.
	Text string
	// ImageURL is the image of a PartImageURL part: an http(s) URL or a
	// data: URL with base64 content.
	ImageURL string
	// Detail is DetailLow, DetailHigh, DetailAuto or empty (provider
	// default).
	Detail string
}

// Tool is a function the model may call.
type Tool struct {
	// Name is the function name.
	Name string
	// Description tells the model what the function does.
	Description string
	// Parameters is the JSON Schema of the arguments object; empty means
	// no parameters.
	Parameters json.RawMessage
}

// ToolCall is one function call made by the model.
type ToolCall struct {
	// ID identifies the call; tool results refer to it (Message.ToolCallID).
	ID string
	// Name is the called function.
	Name string
	// Arguments is the JSON text of the arguments, as produced by the model
	// (not validated: models do produce invalid JSON).
	Arguments string
}

// ChatRequest is one chat completion request.
type ChatRequest struct {
	// Model is the upstream model id.
	Model string
	// Messages is the conversation, oldest first.
	Messages []Message
	// Tools are the functions the model may call.
	Tools []Tool
	// Parameters are model parameters passed through verbatim as top-level
	// request fields (temperature, top_p, max_tokens, presence_penalty,
	// frequency_penalty, stop, response_format, …). Keys that the protocol
	// sets itself (model, messages, tools, stream, stream_options) are
	// ignored.
	Parameters map[string]any
	// User is the optional end-user id forwarded for abuse monitoring.
	User string
}

// Usage is the token usage reported by a provider.
type Usage struct {
	// PromptTokens counts the input tokens.
	PromptTokens int
	// CompletionTokens counts the generated tokens (0 for embeddings).
	CompletionTokens int
}

// TotalTokens returns PromptTokens + CompletionTokens.
func (u Usage) TotalTokens() int { return u.PromptTokens + u.CompletionTokens }

// ChatResponse is a complete (non-streamed) answer.
type ChatResponse struct {
	// Content is the generated text.
	Content string
	// ToolCalls are the function calls the model made, in order.
	ToolCalls []ToolCall
	// FinishReason is the provider's finish reason ("stop", "length",
	// "tool_calls", "content_filter", …); empty when not reported.
	FinishReason string
	// Usage is nil when the provider reported none.
	Usage *Usage
}

// Chunk is one piece of a streamed answer. Content arrives in Delta; the
// last chunk before io.EOF carries FinishReason, the complete ToolCalls and
// Usage, and may also carry a final Delta.
type Chunk struct {
	// Delta is the next piece of generated text; it may be empty.
	Delta string
	// Reasoning is the next piece of the model's reasoning when the provider streams it apart
	// from the text (an OpenAI-compatible reasoning_content delta); it may be empty.
	Reasoning string
	// ToolCalls are the complete function calls, assembled from the
	// streamed pieces; set on the final chunk only.
	ToolCalls []ToolCall
	// FinishReason is set on the final chunk only (it may be empty there
	// when the provider ended with [DONE] without reporting one).
	FinishReason string
	// Usage is set on the final chunk when the provider reported it; nil
	// otherwise.
	Usage *Usage
}

// Stream is a streamed answer. It is not safe for concurrent use.
type Stream interface {
	// Recv returns the next chunk. It returns io.EOF after the final chunk
	// (the one with FinishReason), and an error wrapping ErrTruncated when
	// the upstream stream ended without its terminal marker. It returns
	// promptly when the request's context is cancelled.
	Recv() (Chunk, error)
	// Close releases the connection. It is safe to call more than once and
	// after Recv returned an error or io.EOF; closing a stream that has not
	// finished aborts it.
	Close() error
}

// ChatModel generates chat completions.
type ChatModel interface {
	// Chat returns the complete answer.
	Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error)
	// ChatStream starts a streamed answer. Errors that occur before the
	// first byte of the answer (HTTP status, connection) are returned here;
	// later ones by Stream.Recv. The caller must Close the stream.
	ChatStream(ctx context.Context, req ChatRequest) (Stream, error)
}

// Embedder computes text embeddings.
type Embedder interface {
	// Embed returns one vector per input, in input order, and the usage
	// (nil when the provider reported none). It sends one request: the
	// caller batches inputs by the model's max_chunks.
	Embed(ctx context.Context, model string, inputs []string) ([][]float32, *Usage, error)
}

// Reranker scores documents against a query.
type Reranker interface {
	// Rerank returns the topN most relevant documents (all of them when
	// topN <= 0 or exceeds len(docs)), best first, each by its index in
	// docs, and the usage (nil when the provider reported none). No docs,
	// no request.
	Rerank(ctx context.Context, model, query string, docs []string, topN int) ([]RerankResult, *Usage, error)
}

// RerankResult is the relevance of one document.
type RerankResult struct {
	// Index is the document's position in the request's docs.
	Index int
	// Score is the provider's relevance score, higher is more relevant
	// (usually in [0, 1], but the scale is the model's).
	Score float64
}

// Transcriber turns speech into text (a speech2text model).
type Transcriber interface {
	// Transcribe returns the text spoken in audio, a file of the given name and content type.
	Transcribe(ctx context.Context, model, filename, contentType string, audio []byte) (string, error)
}

// Synthesizer turns text into speech (a tts model).
type Synthesizer interface {
	// Synthesize reads text aloud with voice; the audio streams from the returned reader (which
	// the caller closes), of the returned content type.
	Synthesize(ctx context.Context, model, text, voice string) (audio io.ReadCloser, contentType string, err error)
}
