package llm

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tokens"
)

// Request is one call of a model.
type Request struct {
	Messages []providers.Message
	// Params are the upstream parameters (Params); max_tokens is lowered to fit Messages
	// (FitReply).
	Params map[string]any
	// Tools are offered to a model that calls them natively.
	Tools []providers.Tool
	// User identifies the end user to the provider, when set.
	User string
	// OnStart, when set, is called once when the answer begins: at its first chunk, or at its
	// end when it has none. An error from it ends the call with that error. A call that fails
	// before the answer begins never calls it.
	OnStart func() error
	// OnDelta, when set, receives each piece of the answer's text as it streams.
	OnDelta func(string)
}

// Result is what one call produced. Stream fills it in also when the call fails part way:
// the text and usage of a partial answer are kept.
type Result struct {
	// Text is the answer's text; ToolCalls the tools the model called, in order.
	Text      string
	ToolCalls []providers.ToolCall
	// FinishReason is the provider's, when it reported one.
	FinishReason string
	// Tokens are the prompt and completion tokens the upstream reported, or counted when it
	// reported none.
	Tokens providers.Usage
	// Latency is from the request to the end of the answer.
	Latency time.Duration
	// Usage is Tokens priced with the model's pricing, with Latency.
	Usage models.Usage
}

// Stream calls the model and streams its answer: the text to req.OnDelta as it arrives, the
// tool calls, finish reason and usage into the result. It returns when the answer ends, the
// upstream fails or ctx ends.
func (m Model) Stream(ctx context.Context, req Request) (Result, error) {
	started := time.Now()
	var (
		res      Result
		text     strings.Builder
		reported *providers.Usage
	)
	err := func() error {
		creq := providers.ChatRequest{Model: m.Spec.Name, Messages: req.Messages, Tools: req.Tools,
			Parameters: FitReply(req.Params, m.Spec, req.Messages), User: req.User}
		s, err := m.Client.ChatStream(ctx, creq)
		if err != nil {
			return err
		}
		defer s.Close()
		begun := req.OnStart == nil
		for {
			c, err := s.Recv()
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if !begun {
				begun = true
				if serr := req.OnStart(); serr != nil {
					return serr
				}
			}
			if err != nil {
				return nil
			}
			if c.Usage != nil {
				reported = c.Usage
			}
			if c.FinishReason != "" {
				res.FinishReason = c.FinishReason
			}
			res.ToolCalls = append(res.ToolCalls, c.ToolCalls...)
			if c.Delta != "" {
				text.WriteString(c.Delta)
				if req.OnDelta != nil {
					req.OnDelta(c.Delta)
				}
			}
		}
	}()
	res.Text = text.String()
	if reported != nil {
		res.Tokens = *reported
	} else {
		res.Tokens = providers.Usage{PromptTokens: tokens.CountMessages(req.Messages), CompletionTokens: tokens.Count(res.Text)}
	}
	res.Latency = time.Since(started)
	res.Usage = models.ComputeUsage(m.Spec.Pricing, res.Tokens.PromptTokens, res.Tokens.CompletionTokens, res.Latency)
	return res, err
}
