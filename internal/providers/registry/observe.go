package registry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tokens"
	"github.com/parleyhq/parley/internal/tracing"
)

// Every model call goes through a client this set hands out, so this is where calls are
// observed: with tracing or metrics on, the set hands out its clients wrapped so that each call
// is a span after OpenTelemetry's GenAI conventions (operation, provider, model, tokens, finish
// reasons, and with PARLEY_OTEL_CAPTURE_CONTENT the messages) and is counted in the metrics
// (duration, first token, tokens and cost by app, failures by kind and status). Off, the set
// hands out its clients as they are.

// observing reports whether the clients handed out are to be observed.
func (p *Set) observing() bool { return p.metrics != nil || tracing.On() }

// model is what the calls of one configured model share.
type model struct {
	spec    models.ModelSpec
	metrics *metrics.Metrics
}

// call is one model call being observed.
type call struct {
	m       model
	ctx     context.Context
	span    trace.Span
	op      string
	started time.Time
	// firstToken is when the first text of a streamed answer came, after started.
	firstToken time.Duration
}

func (m model) start(ctx context.Context, op, upstreamModel string) (context.Context, *call) {
	ctx, span := tracing.Start(ctx, op, trace.SpanKindClient)
	if span.IsRecording() {
		span.SetName(op + " " + upstreamModel)
		span.SetAttributes(tracing.GenAIOperation.String(op), tracing.GenAIProvider.String(m.spec.Provider),
			tracing.GenAIRequestModel.String(upstreamModel))
	}
	return ctx, &call{m: m, ctx: ctx, span: span, op: op, started: time.Now()}
}

// end records the call: its tokens (the provider's counts), and err, its failure.
func (c *call) end(in, out int, err error) {
	rec := metrics.ModelCall{App: metrics.AppFrom(c.ctx), Provider: c.m.spec.Provider, Model: c.m.spec.Name,
		Operation: c.op, Duration: time.Since(c.started), FirstToken: c.firstToken, InputTokens: in, OutputTokens: out,
		Outcome: "ok"}
	if c.m.spec.Pricing != nil && (in > 0 || out > 0) {
		u := models.ComputeUsage(c.m.spec.Pricing, in, out, 0)
		rec.Cost, _ = strconv.ParseFloat(u.TotalPrice, 64)
		rec.Currency = u.Currency
	}
	switch {
	case err == nil:
	case c.ctx.Err() != nil:
		rec.Outcome = "cancelled"
	default:
		rec.Outcome, rec.ErrorKind = "error", string(providers.KindOf(err))
		if e, ok := errors.AsType[*providers.Error](err); ok {
			rec.ErrorStatus = e.StatusCode
		}
	}
	c.m.metrics.ModelCalled(rec)
	if c.span.IsRecording() {
		if in > 0 || out > 0 {
			c.span.SetAttributes(tracing.GenAIInputTokens.Int(in), tracing.GenAIOutputTokens.Int(out))
		}
		if rec.Cost > 0 {
			c.span.SetAttributes(tracing.GenAICost.Float64(rec.Cost), tracing.ModelCurrency.String(rec.Currency))
		}
		if c.firstToken > 0 {
			c.span.SetAttributes(tracing.GenAIFirstChunk.Float64(c.firstToken.Seconds()))
		}
		tracing.Fail(c.span, err)
	}
	c.span.End()
}

// chatAttributes puts what a chat request asks for on its span.
func (c *call) chatAttributes(req providers.ChatRequest, stream bool) {
	if !c.span.IsRecording() {
		return
	}
	c.span.SetAttributes(tracing.GenAIRequestStream.Bool(stream))
	if v, ok := number(req.Parameters["max_tokens"]); ok {
		c.span.SetAttributes(tracing.GenAIMaxTokens.Int(int(v)))
	}
	if v, ok := number(req.Parameters["temperature"]); ok {
		c.span.SetAttributes(tracing.GenAITemperature.Float64(v))
	}
	if v, ok := number(req.Parameters["top_p"]); ok {
		c.span.SetAttributes(tracing.GenAITopP.Float64(v))
	}
	if tracing.CaptureContent() {
		c.span.SetAttributes(tracing.GenAIInputMessages.String(inputMessages(req.Messages)))
	}
}

// answered records a chat call's answer: its finish reason, and its text and tool calls when
// content is captured. Without the provider's token counts, the tokens are counted as the
// stored answer's are.
func (c *call) answered(req providers.ChatRequest, usage *providers.Usage, finish, text string, calls []providers.ToolCall, err error) {
	if c.span.IsRecording() {
		if finish != "" {
			c.span.SetAttributes(tracing.GenAIFinishReasons.StringSlice([]string{finish}))
		}
		if tracing.CaptureContent() && (text != "" || len(calls) > 0) {
			c.span.SetAttributes(tracing.GenAIOutputMessages.String(outputMessage(text, calls, finish)))
		}
	}
	in, out := 0, 0
	switch {
	case usage != nil:
		in, out = usage.PromptTokens, usage.CompletionTokens
	case err == nil:
		in, out = tokens.CountMessages(req.Messages), tokens.Count(text)
	}
	c.end(in, out, err)
}

// observedChat is a chat model whose calls are observed.
type observedChat struct {
	providers.ChatModel
	m model
}

func (o *observedChat) Chat(ctx context.Context, req providers.ChatRequest) (*providers.ChatResponse, error) {
	ctx, c := o.m.start(ctx, "chat", req.Model)
	c.chatAttributes(req, false)
	resp, err := o.ChatModel.Chat(ctx, req)
	if err != nil {
		c.answered(req, nil, "", "", nil, err)
		return nil, err
	}
	c.answered(req, resp.Usage, resp.FinishReason, resp.Content, resp.ToolCalls, nil)
	return resp, nil
}

func (o *observedChat) ChatStream(ctx context.Context, req providers.ChatRequest) (providers.Stream, error) {
	ctx, c := o.m.start(ctx, "chat", req.Model)
	c.chatAttributes(req, true)
	s, err := o.ChatModel.ChatStream(ctx, req)
	if err != nil {
		c.answered(req, nil, "", "", nil, err)
		return nil, err
	}
	return &observedStream{Stream: s, c: c, req: req}, nil
}

// observedStream is a streamed answer being observed; its call ends with the stream.
type observedStream struct {
	providers.Stream
	c      *call
	req    providers.ChatRequest
	text   strings.Builder
	calls  []providers.ToolCall
	finish string
	usage  *providers.Usage
	done   bool
}

// errClosedEarly: the caller closed a stream before its end, without a failure of its own.
var errClosedEarly = errors.New("the stream was closed before its end")

func (s *observedStream) Recv() (providers.Chunk, error) {
	ch, err := s.Stream.Recv()
	if s.done {
		return ch, err
	}
	if err != nil {
		failure := err
		if errors.Is(err, io.EOF) {
			failure = nil
		}
		s.done = true
		s.c.answered(s.req, s.usage, s.finish, s.text.String(), s.calls, failure)
		return ch, err
	}
	if ch.Delta != "" {
		if s.c.firstToken == 0 {
			s.c.firstToken = time.Since(s.c.started)
		}
		s.text.WriteString(ch.Delta)
	}
	if ch.Usage != nil {
		s.usage = ch.Usage
	}
	if ch.FinishReason != "" {
		s.finish = ch.FinishReason
	}
	s.calls = append(s.calls, ch.ToolCalls...)
	return ch, nil
}

func (s *observedStream) Close() error {
	if !s.done {
		s.done = true
		err := errClosedEarly
		if cause := context.Cause(s.c.ctx); cause != nil {
			err = cause
		}
		s.c.answered(s.req, s.usage, s.finish, s.text.String(), s.calls, err)
	}
	return s.Stream.Close()
}

// observedEmbedder is an embedding model whose calls are observed.
type observedEmbedder struct {
	providers.Embedder
	m model
}

func (o *observedEmbedder) Embed(ctx context.Context, name string, inputs []string) ([][]float32, *providers.Usage, error) {
	ctx, c := o.m.start(ctx, "embeddings", name)
	vs, u, err := o.Embedder.Embed(ctx, name, inputs)
	in := 0
	if u != nil {
		in = u.PromptTokens
	}
	if c.span.IsRecording() && len(vs) > 0 {
		c.span.SetAttributes(tracing.GenAIEmbeddingsCount.Int(len(vs[0])))
	}
	c.end(in, 0, err)
	return vs, u, err
}

// observedReranker is a rerank model whose calls are observed.
type observedReranker struct {
	providers.Reranker
	m model
}

func (o *observedReranker) Rerank(ctx context.Context, name, query string, docs []string, topN int) ([]providers.RerankResult, *providers.Usage, error) {
	ctx, c := o.m.start(ctx, "rerank", name)
	rs, u, err := o.Reranker.Rerank(ctx, name, query, docs, topN)
	in := 0
	if u != nil {
		in = u.PromptTokens
	}
	c.end(in, 0, err)
	return rs, u, err
}

// number reads a numeric completion parameter, as a Dify file or a client wrote it.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// genAIMessage and genAIPart are the JSON of gen_ai.input.messages and gen_ai.output.messages
// in OpenTelemetry's GenAI conventions.
type genAIMessage struct {
	Role         string      `json:"role"`
	Parts        []genAIPart `json:"parts"`
	FinishReason string      `json:"finish_reason,omitempty"`
}

type genAIPart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
	Modality  string `json:"modality,omitempty"`
	URI       string `json:"uri,omitempty"`
}

// inputMessages is the prompt as gen_ai.input.messages. An image sent inline (a data: URL) is
// named, not copied: it would be megabytes on a span.
func inputMessages(ms []providers.Message) string {
	out := make([]genAIMessage, 0, len(ms))
	for _, m := range ms {
		g := genAIMessage{Role: m.Role}
		switch {
		case m.Role == providers.RoleTool:
			g.Parts = append(g.Parts, genAIPart{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Text()})
		case len(m.Parts) > 0:
			for _, p := range m.Parts {
				if p.Type == providers.PartImageURL {
					uri := p.ImageURL
					if strings.HasPrefix(uri, "data:") {
						uri = "data:…"
					}
					g.Parts = append(g.Parts, genAIPart{Type: "uri", Modality: "image", URI: uri})
					continue
				}
				g.Parts = append(g.Parts, genAIPart{Type: "text", Content: p.Text})
			}
		case m.Content != "":
			g.Parts = append(g.Parts, genAIPart{Type: "text", Content: m.Content})
		}
		for _, tc := range m.ToolCalls {
			g.Parts = append(g.Parts, genAIPart{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		out = append(out, g)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// outputMessage is an answer as gen_ai.output.messages.
func outputMessage(text string, calls []providers.ToolCall, finish string) string {
	g := genAIMessage{Role: providers.RoleAssistant, FinishReason: finish}
	if text != "" {
		g.Parts = append(g.Parts, genAIPart{Type: "text", Content: text})
	}
	for _, tc := range calls {
		g.Parts = append(g.Parts, genAIPart{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	b, _ := json.Marshal([]genAIMessage{g})
	return string(b)
}
