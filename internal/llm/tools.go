package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tracing"
)

// DefaultToolTimeout bounds a tool call when the caller sets no other limit.
const DefaultToolTimeout = 60 * time.Second

// MaxToolFiles bounds the files kept for one answer or node: a tool (an MCP server, say) that
// returns thousands of files must not fill the disk or the stream. Those past it are told to
// the model as not kept.
const MaxToolFiles = 50

// Offer is a tool as an agent offers it to the model: its model-facing name (unique among the
// offers, in the characters model APIs accept), and the tool or why it cannot run. A tool this
// server does not have is still offered under its name, so that the model calling it learns
// why it failed.
type Offer struct {
	Name    string
	Tool    tools.Tool
	Missing error
	// Labels are the tool's display names by locale, and Provider names its provider, for
	// what the agent records of its calls.
	Labels   map[string]string
	Provider string
}

// emptyParameters is the parameter schema of a tool that cannot run.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// Definitions are the offers as the model is offered them.
func Definitions(offers []Offer) []providers.Tool {
	out := make([]providers.Tool, 0, len(offers))
	for _, o := range offers {
		d := providers.Tool{Name: o.Name, Parameters: emptyParameters}
		if o.Tool != nil {
			d.Description, d.Parameters = o.Tool.Description(), o.Tool.Parameters()
		}
		out = append(out, d)
	}
	return out
}

// Find returns the offer the model calls name, or nil.
func Find(offers []Offer, name string) *Offer {
	for i := range offers {
		if offers[i].Name == name {
			return &offers[i]
		}
	}
	return nil
}

// Call runs one tool call of the model among the offers and returns what the model reads and
// the files the tool returned. A call of a tool not offered, or one that cannot run, is told to
// the model in the words Dify uses. The call is a span (tracing.StartTool).
func Call(ctx context.Context, offers []Offer, c providers.ToolCall, timeout time.Duration) (string, []tools.File) {
	o := Find(offers, c.Name)
	ctx, span := tracing.StartTool(ctx, c.Name, c.ID)
	if span.IsRecording() && o != nil {
		provider := o.Provider
		if provider == "" && o.Tool != nil {
			provider = o.Tool.Identity().Provider
		}
		span.SetAttributes(tracing.ToolProvider.String(provider))
	}
	var (
		text   string
		files  []tools.File
		failed bool
	)
	switch {
	case o == nil:
		text, failed = fmt.Sprintf("there is not a tool named %s", c.Name), true
	case o.Tool == nil:
		text, failed = fmt.Sprintf("tool invoke error: the tool %s is not available on this server: %v", c.Name, o.Missing), true
	default:
		text, files, failed = invoke(ctx, o.Tool, c, timeout)
	}
	if span.IsRecording() { // a span that records nothing has nothing to end
		var err error
		if failed {
			err = errors.New(text)
		}
		tracing.EndTool(span, c.Arguments, text, err)
	}
	return text, files
}

// Invoke runs one call of the model to tool and returns what the model reads, in the words Dify
// uses (a failure, bad arguments or a timeout are results, not errors), and the files the tool
// returned. timeout bounds the call (DefaultToolTimeout when not positive).
func Invoke(ctx context.Context, tool tools.Tool, c providers.ToolCall, timeout time.Duration) (string, []tools.File) {
	text, files, _ := invoke(ctx, tool, c, timeout)
	return text, files
}

// invoke is Invoke, saying also whether the call failed.
func invoke(ctx context.Context, tool tools.Tool, c providers.ToolCall, timeout time.Duration) (string, []tools.File, bool) {
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	args := json.RawMessage(c.Arguments)
	if strings.TrimSpace(c.Arguments) == "" {
		args = json.RawMessage("{}")
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := tool.Invoke(callCtx, args)
	if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("tool invoke error: the tool %s did not answer within %v", c.Name, timeout), nil, true
	}
	switch {
	case err != nil && errors.Is(err, tools.ErrBadArguments):
		return fmt.Sprintf("tool parameters validation error: %v, please check your tool parameters", err), nil, true
	case err != nil:
		return fmt.Sprintf("tool invoke error: %v", err), nil, true
	case res.IsError && strings.Contains(res.Text, tools.ErrBadArguments.Error()):
		return fmt.Sprintf("tool parameters validation error: %s, please check your tool parameters", res.Text), res.Files, true
	case res.IsError:
		return fmt.Sprintf("tool invoke error: %s", res.Text), res.Files, true
	}
	return res.Text, res.Files, false
}
