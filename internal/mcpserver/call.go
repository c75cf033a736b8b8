package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
)

// Runner starts runs; *run.Engine implements it.
type Runner interface {
	Start(ctx context.Context, req run.Request) (*run.Run, error)
}

// Progress is one progress notification of a call: Progress grows with every step reported
// (a node finished, a piece of the answer); the total is unknown.
type Progress struct {
	Progress float64
	Message  string
}

// ProgressInterval is the least time between two progress notifications of one call: a model
// that streams a token at a time would otherwise send one per token.
const ProgressInterval = 200 * time.Millisecond

// File is a file a run produced, for the tool's result as a resource link.
type File struct {
	// URL is the file's signed link, as the API gives it (a path from the server's root when no
	// public URL is configured).
	URL      string
	Name     string
	MIMEType string
}

// Result is what a tool call answers.
type Result struct {
	// Text is the answer: the answer text of the chat kinds and Completion, the JSON of a
	// Workflow app's outputs; for a failed call, why it failed.
	Text string
	// Structured is a Workflow app's outputs, as the result's structuredContent.
	Structured map[string]any
	Files      []File
	// Failed says the run did not succeed (the result is the tool's error).
	Failed bool
}

// RunError is a failure of the run once started (an error event: the model failed, the run was
// stopped, the server is shutting down): the tool's error, not a protocol error.
type RunError struct{ Err error }

func (e *RunError) Error() string { return e.Err.Error() }

func (e *RunError) Unwrap() error { return e.Err }

// Call runs app for one tool call of the server's end user and waits for its answer, reporting
// progress to progress (nil: none). The app runs as the Service API would run it for a blocking
// request, except the agent kinds, which stream inside (they only stream); a chat app starts a
// new conversation each time. Arguments the app cannot take give an *ArgumentError (or the
// *apps.InputError of the form's check); a refused start the engine's error; a failure after
// the start a *RunError. A client that goes away detaches from the run, which finishes and is
// stored.
func Call(ctx context.Context, runner Runner, app *apps.App, user string, args json.RawMessage, progress func(Progress)) (Result, error) {
	query, inputs, err := Arguments(app.Mode, args)
	if err != nil {
		return Result{}, err
	}
	runApp := app
	if app.Mode == apps.ModeAgent {
		if runApp, err = apps.AgentRun(app, query); err != nil {
			return Result{}, err
		}
	}
	r, err := runner.Start(ctx, run.Request{App: runApp, User: user, Query: query, Inputs: inputs,
		Streaming: app.StreamingOnly()})
	if err != nil {
		return Result{}, err
	}
	c := &collector{report: progress}
	if app.Mode == apps.ModeWorkflow {
		return c.workflow(ctx, r)
	}
	return c.answer(ctx, r)
}

// collector reads a run's events into a Result.
type collector struct {
	report func(Progress)
	steps  float64
	last   time.Time
	// text follows the answer's text (the chat kinds and Completion).
	text  run.AnswerText
	files []File
	seen  map[string]bool
}

// step counts a step of the run and reports it, unless one was reported less than
// ProgressInterval ago; describe gives its message, called only when it is reported.
func (c *collector) step(describe func() string) {
	c.steps++
	if c.report == nil {
		return
	}
	now := time.Now()
	if !c.last.IsZero() && now.Sub(c.last) < ProgressInterval {
		return
	}
	c.last = now
	c.report(Progress{Progress: c.steps, Message: describe()})
}

// common handles the events of every kind: steps, streamed text and files.
func (c *collector) common(ev run.Event) {
	switch ev.Kind {
	case run.EventNodeFinished:
		c.step(func() string {
			var d struct {
				Title string `json:"title"`
			}
			if raw, err := json.Marshal(ev.Data); err == nil {
				_ = json.Unmarshal(raw, &d)
			}
			if d.Title == "" {
				return "A step finished."
			}
			return fmt.Sprintf("%s finished.", d.Title)
		})
	case run.EventMessage, run.EventAgentMessage, run.EventTextChunk:
		c.step(func() string { return "Writing the answer." })
	case run.EventMessageFile:
		c.addFiles(ev.Data)
	}
}

// answer collects the answer of the chat kinds and Completion, as a blocking request does: the
// text of the message events, as message_replace left it, until message_end.
func (c *collector) answer(ctx context.Context, r *run.Run) (Result, error) {
	paused := false
	for {
		select {
		case <-ctx.Done():
			r.Detach()
			return Result{}, ctx.Err()
		case ev, ok := <-r.Events():
			if !ok {
				if paused {
					return Result{Failed: true, Text: "The app paused for a human input form, which a tool call cannot wait for; " +
						"the answer so far: " + c.text.String()}, nil
				}
				return Result{}, errors.New("mcpserver: the run ended without its final event")
			}
			c.common(ev)
			c.text.Add(ev)
			switch ev.Kind {
			case run.EventWorkflowPaused:
				paused = true
			case run.EventError:
				return Result{}, &RunError{ev.Err}
			case run.EventMessageEnd:
				r.Detach()
				if ev.End != nil {
					c.addFiles(ev.End.Files)
				}
				return Result{Text: c.text.String(), Files: c.files}, nil
			}
		}
	}
}

// workflow waits for a Workflow app's run to end: its outputs, as JSON text and as structured
// content, or why it failed.
func (c *collector) workflow(ctx context.Context, r *run.Run) (Result, error) {
	for {
		select {
		case <-ctx.Done():
			r.Detach()
			return Result{}, ctx.Err()
		case ev, ok := <-r.Events():
			if !ok {
				return Result{}, errors.New("mcpserver: the run ended without its final event")
			}
			c.common(ev)
			switch ev.Kind {
			case run.EventError:
				return Result{}, &RunError{ev.Err}
			case run.EventWorkflowPaused:
				r.Detach()
				return Result{Failed: true, Text: "The workflow paused for a human input form, which a tool call cannot wait for."}, nil
			case run.EventWorkflowFinished:
				r.Detach()
				return c.finished(ev)
			}
		}
	}
}

// finished is the result of a Workflow app's workflow_finished.
func (c *collector) finished(ev run.Event) (Result, error) {
	raw, err := json.Marshal(ev.Data)
	if err != nil {
		return Result{}, err
	}
	var d struct {
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
		Error   *string        `json:"error"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return Result{}, err
	}
	if d.Status != "succeeded" && d.Status != "partial-succeeded" {
		msg := "the run ended " + d.Status
		if d.Error != nil && *d.Error != "" {
			msg = *d.Error
		}
		return Result{Failed: true, Text: "The workflow failed: " + msg}, nil
	}
	if d.Outputs == nil {
		d.Outputs = map[string]any{}
	}
	// The outputs as Dify's json.dumps(ensure_ascii=False) has them: text as it is, no
	// escaping of <, > and &.
	var text bytes.Buffer
	enc := json.NewEncoder(&text)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d.Outputs); err != nil {
		return Result{}, err
	}
	c.addFiles(d.Outputs)
	return Result{Text: strings.TrimSuffix(text.String(), "\n"), Structured: d.Outputs, Files: c.files}, nil
}

// fileIdentity marks a serialised file in a workflow's values (value.FileModelIdentity).
const fileIdentity = "__dify__file__"

// addFiles adds the files found in v: serialised files of a workflow's values, a message_file
// event, the files of message_end; each once.
func (c *collector) addFiles(v any) {
	if v == nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	var plain any
	if json.Unmarshal(raw, &plain) != nil {
		return
	}
	c.walk(plain, 0)
}

// maxFileDepth bounds how deep addFiles looks into nested values.
const maxFileDepth = 8

func (c *collector) walk(v any, depth int) {
	if depth > maxFileDepth {
		return
	}
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			c.walk(it, depth+1)
		}
	case map[string]any:
		url, _ := x["url"].(string)
		id, _ := x["dify_model_identity"].(string)
		_, belongs := x["belongs_to"]
		_, transfer := x["transfer_method"]
		if url != "" && (id == fileIdentity || belongs || transfer) {
			c.add(url, x)
			return
		}
		for _, it := range x {
			c.walk(it, depth+1)
		}
	}
}

func (c *collector) add(url string, m map[string]any) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[url] {
		return
	}
	c.seen[url] = true
	f := File{URL: url}
	f.Name, _ = m["filename"].(string)
	f.MIMEType, _ = m["mime_type"].(string)
	if f.Name == "" {
		// A message_file event names no file: the link's last segment does.
		name := url
		if i := strings.IndexAny(name, "?#"); i >= 0 {
			name = name[:i]
		}
		f.Name = name[strings.LastIndex(name, "/")+1:]
	}
	c.files = append(c.files, f)
}
