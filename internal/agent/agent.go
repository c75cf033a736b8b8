// Package agent answers Legacy Agent apps (mode agent-chat): the app's model is called in rounds
// with the app's tools; each round is a step (an agent thought) that is stored and streamed as
// it fills in, the tools the model calls run between rounds, and their results go back to the
// model until it answers. It plugs into the run engine (internal/run) as the runner of that mode.
//
// This is the function-calling strategy: the model calls tools natively. See docs/agents.md.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
	"github.com/parleyhq/parley/internal/tools"
)

// ErrMaxIterations is the failure of an agent whose model still calls a tool in the last round,
// where it was offered none. As in Dify, the stream ends with an internal error.
var ErrMaxIterations = errors.New("agent: the model called a tool in the last allowed round")

// DefaultMaxIteration is the number of tool rounds when the app sets none; at most
// maxIterationCap are allowed, and one more round follows them to force an answer.
const (
	DefaultMaxIteration = 10
	maxIterationCap     = 99
)

// DefaultToolTimeout bounds a tool call when Options set no other limit.
const DefaultToolTimeout = 60 * time.Second

// saveTimeout bounds the storing of one step.
const saveTimeout = 10 * time.Second

// MaxToolFiles bounds the files kept for one answer: a tool (an MCP server, say) that returns
// thousands of files must not fill the disk or the stream. Those past it are told to the model
// as not kept.
const MaxToolFiles = 50

// Store is what the runner needs from storage; *store.Store implements it.
type Store interface {
	RecentMessages(ctx context.Context, conversationID string, n int) ([]store.Message, error)
	AgentThoughts(ctx context.Context, messageIDs []string) (map[string][]store.AgentThought, error)
	SaveAgentThought(ctx context.Context, t store.AgentThought) (store.AgentThought, error)
}

// Chat gives what an agent shares with Chatbot apps; *chat.Service implements it.
type Chat interface {
	Base(ctx context.Context, t run.Turn) (chat.Base, error)
}

// ToolFiles keeps the files tools return; *files.Service implements it.
type ToolFiles interface {
	SaveToolFile(ctx context.Context, f files.ToolFile) (files.SavedToolFile, error)
}

// ToolLookup finds the tool an app names (its provider type, provider and name), configured with
// the app's values; an error wrapping tools.ErrUnknownTool if there is none. builtin.Find finds
// the built-in tools; the workspace's tool registry (toolreg.Registry.Find) also the registered
// API and MCP tools.
type ToolLookup func(ctx context.Context, ref tools.Ref) (tools.Tool, error)

// Options configure a Runner.
type Options struct {
	Store Store
	Chat  Chat
	Tools ToolLookup
	// Knowledge searches the app's knowledge bases, which the agent has as tools; without it
	// they are not offered.
	Knowledge Knowledge
	// Files stores the files tools return as the answer's files; without it they are dropped.
	Files ToolFiles
	// ToolTimeout bounds one tool call (default DefaultToolTimeout); a tool that takes longer
	// is told to the model as a failure.
	ToolTimeout time.Duration
	// HistoryMessages bounds the earlier exchanges considered for the prompt (default 50).
	HistoryMessages int
	Logger          *slog.Logger
}

// Runner is the run.Runner of Legacy Agent apps.
type Runner struct {
	o Options
}

// New returns a Runner.
func New(o Options) *Runner {
	if o.HistoryMessages <= 0 {
		o.HistoryMessages = 50
	}
	if o.ToolTimeout <= 0 {
		o.ToolTimeout = DefaultToolTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Runner{o: o}
}

// Prepare implements run.Runner: the app's model, its tools, and the conversation's history
// with the tool calls of earlier answers.
func (r *Runner) Prepare(ctx context.Context, t run.Turn) (run.Job, error) {
	app := t.App
	base, err := r.o.Chat.Base(ctx, t)
	if err != nil {
		return run.Job{}, err
	}
	var history []store.Message
	var thoughts map[string][]store.AgentThought
	if !t.NewConversation {
		if history, err = r.o.Store.RecentMessages(ctx, t.Conversation.ID, r.o.HistoryMessages); err != nil {
			return run.Job{}, err
		}
		ids := make([]string, len(history))
		for i, m := range history {
			ids[i] = m.ID
		}
		if thoughts, err = r.o.Store.AgentThoughts(ctx, ids); err != nil {
			return run.Job{}, err
		}
	}
	w := &work{
		r: r, base: base, prompt: buildPrompt(app, base.Spec, t.Inputs, history, thoughts, t.Query),
		rounds: rounds(app.Agent), user: t.EndUser.ID, appID: app.ID, cite: app.Features.RetrieverResource.Enabled,
	}
	if app.Agent != nil {
		w.react = useReAct(app.Agent.Strategy, base.Spec)
	} else {
		w.react = useReAct("", base.Spec)
	}
	w.text = w.react && completionModel(app, base.Spec)
	w.tools = r.tools(ctx, app, w)
	return run.Job{Provider: base.Spec.Provider, Model: base.Spec.Name, Files: base.Files, Work: w, After: base.After}, nil
}

// rounds is how many times the model may be called: max_iteration (default 10, at most 99)
// rounds with tools, and one more without them.
func rounds(a *apps.Agent) int {
	n := DefaultMaxIteration
	if a != nil && a.MaxIteration > 0 {
		n = a.MaxIteration
	}
	return min(n, maxIterationCap) + 1
}

// agentTool is a tool as the agent offers it: its model-facing name, and either the tool or why
// it cannot run.
type agentTool struct {
	name    string
	labels  map[string]string
	tool    tools.Tool
	missing error
}

// tools resolves the app's enabled tools. A tool Parley does not have is still offered under its
// name, so that the model calling it learns why it failed. The names offered are what model APIs
// accept (an MCP tool may be called "files.read"), unique; each maps back to its tool.
func (r *Runner) tools(ctx context.Context, app *apps.App, w *work) []agentTool {
	var out []agentTool
	seen := map[string]bool{}
	if r.o.Knowledge != nil {
		for _, kb := range app.KnowledgeBases {
			name := datasetToolName(kb)
			if seen[name] {
				continue
			}
			seen[name] = true
			tool := &datasetTool{k: r.o.Knowledge, kb: kb, name: name, found: w.found}
			out = append(out, agentTool{name: name, tool: tool, labels: tool.Identity().Label})
		}
	}
	if app.Agent == nil {
		return out
	}
	// An app's tool named like a knowledge tool, or listed twice, is left out.
	knowledge, listed := maps.Clone(seen), map[string]bool{}
	for _, t := range app.Agent.Tools {
		if !t.Enabled || listed[t.Name] || knowledge[t.Name] {
			continue
		}
		listed[t.Name] = true
		name := tools.ModelName(t.Name, seen)
		seen[name] = true
		at := agentTool{name: name}
		if tool, err := resolve(ctx, r.o.Tools, t); err != nil {
			at.missing = err
		} else {
			at.tool, at.labels = tool, tool.Identity().Label
		}
		at.labels = labelsOf(at.labels, t.Label, t.Name)
		out = append(out, at)
	}
	return out
}

// resolve finds the tool an app's entry names with lookup.
func resolve(ctx context.Context, lookup ToolLookup, t apps.Tool) (tools.Tool, error) {
	if lookup == nil {
		return nil, tools.ErrUnknownTool
	}
	return lookup(ctx, tools.Ref{Type: t.ProviderType, ProviderID: t.ProviderID, ProviderName: t.ProviderName,
		Name: t.Name, Configured: t.Parameters})
}

// Available reports whether an app's tool can run with lookup, as the runner resolves it; the
// import of agent apps asks it.
func Available(ctx context.Context, lookup ToolLookup) func(apps.Tool) bool {
	return func(t apps.Tool) bool {
		_, err := resolve(ctx, lookup, t)
		return err == nil
	}
}

// labelsOf is a tool's label object as agent_thought's tool_labels carries it: en_US and
// zh_Hans at least, falling back to the app's label and then the tool's name.
func labelsOf(known map[string]string, label, name string) map[string]string {
	out := map[string]string{}
	for k, v := range known {
		out[k] = v
	}
	fallback := out["en_US"]
	if fallback == "" {
		fallback = label
	}
	if fallback == "" {
		fallback = name
	}
	for _, k := range []string{"en_US", "zh_Hans"} {
		if out[k] == "" {
			out[k] = fallback
		}
	}
	return out
}

// definitions are the tools as the model is offered them.
func definitions(ts []agentTool) []providers.Tool {
	out := make([]providers.Tool, 0, len(ts))
	for _, t := range ts {
		d := providers.Tool{Name: t.name}
		if t.tool != nil {
			d.Description, d.Parameters = t.tool.Description(), t.tool.Parameters()
		} else {
			d.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, d)
	}
	return out
}

// work is one agent answer; it implements run.Work.
type work struct {
	r      *Runner
	base   chat.Base
	prompt []providers.Message
	tools  []agentTool
	rounds int
	user   string
	appID  string
	// files are the files the tools returned, as message_end lists them.
	files []map[string]any
	// react runs the ReAct strategy instead of function calling.
	react bool
	// text sends a ReAct round to a completion model as one text (reactText).
	text bool
	// cite returns the chunks the knowledge tools found as retriever resources.
	cite      bool
	resources []store.RetrieverResource
}

// found records the chunks a knowledge tool returned, numbered in the order found.
func (w *work) found(rs []store.RetrieverResource) {
	if !w.cite {
		return
	}
	for _, r := range rs {
		r.Position = len(w.resources) + 1
		w.resources = append(w.resources, r)
	}
}

// thoughtEvent is the payload of an agent_thought event.
type thoughtEvent struct {
	ID           string         `json:"id"`
	Position     int            `json:"position"`
	Thought      string         `json:"thought"`
	Observation  string         `json:"observation"`
	Tool         string         `json:"tool"`
	ToolLabels   map[string]any `json:"tool_labels"`
	ToolInput    string         `json:"tool_input"`
	MessageFiles []string       `json:"message_files"`
}

// Run implements run.Work: the rounds of the agent, until the model answers without calling a
// tool. Every step is stored before it is streamed; the usage of all rounds is summed, also when
// a round fails. message_end lists the files the tools returned.
func (w *work) Run(ctx context.Context, out *run.Output) (run.Outcome, error) {
	o, err := w.run(ctx, out)
	if len(w.files) > 0 {
		o.Files = w.files
	}
	return o, err
}

func (w *work) run(ctx context.Context, out *run.Output) (run.Outcome, error) {
	var total models.Usage
	prompt := w.prompt
	if w.base.Images != nil {
		images, err := w.base.Images(ctx)
		if err != nil {
			return run.Outcome{}, err
		}
		if len(images) > 0 {
			prompt = chat.WithImages(prompt, images)
		}
	}
	if w.react {
		return w.runReAct(ctx, out, prompt)
	}
	for position := 1; ; position++ {
		last := position == w.rounds
		st := &step{w: w, out: out, t: newThought(out, position)}
		calls, usage, err := st.call(ctx, prompt, last)
		total = models.AddUsage(total, usage)
		outcome := run.Outcome{Usage: total, Resources: w.resources}
		if err != nil {
			return outcome, err
		}
		if len(calls) == 0 {
			return outcome, nil
		}
		if last {
			return outcome, fmt.Errorf("%w (max_iteration %d)", ErrMaxIterations, w.rounds-1)
		}
		results, err := st.invoke(ctx, calls)
		if err != nil {
			return run.Outcome{Usage: total, Resources: w.resources}, err
		}
		prompt = append(prompt, providers.Message{Role: providers.RoleAssistant, Content: st.t.Thought, ToolCalls: calls})
		for i, c := range calls {
			prompt = append(prompt, providers.Message{Role: providers.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[i]})
		}
	}
}

// step is one round of the agent and the thought that records it.
type step struct {
	w       *work
	out     *run.Output
	t       store.AgentThought
	labels  map[string]any
	started bool
}

// newThought is the empty step at position of the message being answered.
func newThought(out *run.Output, position int) store.AgentThought {
	return store.AgentThought{ID: store.NewID(), MessageID: out.MessageID(), Position: position}
}

// save stores the step as it is now and streams it.
func (s *step) save(ctx context.Context) error {
	if err := s.store(ctx); err != nil {
		return err
	}
	s.emit()
	return nil
}

// store stores the step as it is now. A step is stored even when the run was stopped, so that
// what was done is kept.
func (s *step) store(ctx context.Context) error {
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	t, err := s.w.r.o.Store.SaveAgentThought(saveCtx, s.t)
	if err != nil {
		return err
	}
	s.t = t
	return nil
}

// emit streams the step as it is now.
func (s *step) emit() {
	t := s.t
	labels := s.labels
	if labels == nil {
		labels = map[string]any{}
	}
	s.out.Emit(run.Event{Kind: run.EventAgentThought, Data: thoughtEvent{
		ID: t.ID, Position: t.Position, Thought: t.Thought, Observation: t.Observation, Tool: t.Tool,
		ToolLabels: labels, ToolInput: t.ToolInput, MessageFiles: t.Files,
	}})
}

// start stores and streams the empty step, once, when the model's answer begins.
func (s *step) start(ctx context.Context) error {
	if s.started {
		return nil
	}
	s.started = true
	return s.save(ctx)
}

// stream calls the model once and passes each piece of its text to onDelta; it returns the tool
// calls the model made and the usage of the call, and records the call's tokens and latency on
// the step. The step starts with the model's answer.
func (s *step) stream(ctx context.Context, prompt []providers.Message, tools []providers.Tool, params map[string]any,
	onDelta func(string)) ([]providers.ToolCall, models.Usage, error) {
	w := s.w
	started := time.Now()
	req := providers.ChatRequest{Model: w.base.Spec.Name, Messages: prompt, Tools: tools,
		Parameters: chat.FitReply(params, w.base.Spec, prompt), User: w.user}
	var (
		text     strings.Builder
		calls    []providers.ToolCall
		reported *providers.Usage
	)
	err := func() error {
		stream, err := w.base.Model.ChatStream(ctx, req)
		if err != nil {
			return err
		}
		defer stream.Close()
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return s.start(ctx)
			}
			if err != nil {
				return err
			}
			if err := s.start(ctx); err != nil {
				return err
			}
			if chunk.Usage != nil {
				reported = chunk.Usage
			}
			calls = append(calls, chunk.ToolCalls...)
			if chunk.Delta != "" {
				text.WriteString(chunk.Delta)
				onDelta(chunk.Delta)
			}
		}
	}()
	u := providers.Usage{PromptTokens: tokens.CountMessages(prompt), CompletionTokens: tokens.Count(text.String())}
	if reported != nil {
		u = *reported
	}
	latency := time.Since(started)
	s.t.MessageTokens, s.t.AnswerTokens, s.t.Latency = int64(u.PromptTokens), int64(u.CompletionTokens), latency.Seconds()
	return calls, models.ComputeUsage(w.base.Spec.Pricing, u.PromptTokens, u.CompletionTokens, latency), err
}

// call calls the model once, streaming its text as agent_message events, and records what it
// said and the tools it called. The last round offers no tools.
func (s *step) call(ctx context.Context, prompt []providers.Message, last bool) ([]providers.ToolCall, models.Usage, error) {
	var tools []providers.Tool
	if !last {
		tools = definitions(s.w.tools)
	}
	var text strings.Builder
	calls, usage, err := s.stream(ctx, prompt, tools, s.w.base.Params, func(delta string) {
		text.WriteString(delta)
		s.out.Emit(run.Event{Kind: run.EventAgentMessage, Answer: delta})
	})
	if !s.started {
		return nil, usage, err
	}
	// The step records what the round produced, also when it failed part-way.
	s.t.Thought += text.String()
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = "call_" + store.NewID()
		}
	}
	if len(calls) > 0 {
		s.describeCalls(calls)
	}
	if serr := s.save(ctx); serr != nil && err == nil {
		err = serr
	}
	return calls, usage, err
}

// describeCalls fills in the step's tool, tool_input and tool_labels from the calls.
func (s *step) describeCalls(calls []providers.ToolCall) {
	names := make([]string, 0, len(calls))
	input := newObject()
	s.labels = map[string]any{}
	labelsJSON := newObject()
	for _, c := range calls {
		names = append(names, c.Name)
		var args any = map[string]any{}
		if strings.TrimSpace(c.Arguments) != "" {
			if v, ok := pyJSON(c.Arguments); ok {
				args = v
			} else {
				args = c.Arguments // kept as the model wrote it
			}
		}
		input.set(c.Name, args)
		l := labelsOf(nil, "", c.Name)
		if t := s.w.find(c.Name); t != nil {
			l = t.labels
		}
		s.labels[c.Name] = l
		labelsJSON.set(c.Name, l)
	}
	s.t.Tool = strings.Join(names, ";")
	s.t.ToolInput = input.String()
	s.t.ToolLabels = json.RawMessage(labelsJSON.String())
}

// find returns the app's tool the model calls name, or nil.
func (w *work) find(name string) *agentTool {
	for i := range w.tools {
		if w.tools[i].name == name {
			return &w.tools[i]
		}
	}
	return nil
}

// invoke runs the calls in order and records their results as the step's observation. A tool
// that fails, is unknown or gets bad arguments is a result the model reads, not an error; only
// the end of the run (stop, shutdown) or storage stops the agent.
func (s *step) invoke(ctx context.Context, calls []providers.ToolCall) ([]string, error) {
	results := make([]string, len(calls))
	obs := newObject()
	for i, c := range calls {
		var produced []tools.File
		results[i], produced = s.w.invokeOne(ctx, c)
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		results[i] += s.keepFiles(ctx, c.Name, produced)
		obs.set(c.Name, results[i])
	}
	s.t.Observation = obs.String()
	return results, s.save(ctx)
}

// invokeOne runs one call and returns what the model reads, in the words Dify uses, and the
// files the tool returned.
func (w *work) invokeOne(ctx context.Context, c providers.ToolCall) (string, []tools.File) {
	t := w.find(c.Name)
	if t == nil {
		return fmt.Sprintf("there is not a tool named %s", c.Name), nil
	}
	if t.tool == nil {
		return fmt.Sprintf("tool invoke error: the tool %s is not available on this server: %v", c.Name, t.missing), nil
	}
	return Invoke(ctx, t.tool, c, w.r.o.ToolTimeout)
}

// Invoke runs one call of the model to tool and returns what the model reads, in the words Dify
// uses (a failure, bad arguments or a timeout are results, not errors), and the files the tool
// returned. A workflow agent node calls its tools with it too.
func Invoke(ctx context.Context, tool tools.Tool, c providers.ToolCall, timeout time.Duration) (string, []tools.File) {
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
		return fmt.Sprintf("tool invoke error: the tool %s did not answer within %v", c.Name, timeout), nil
	}
	switch {
	case err != nil && errors.Is(err, tools.ErrBadArguments):
		return fmt.Sprintf("tool parameters validation error: %v, please check your tool parameters", err), nil
	case err != nil:
		return fmt.Sprintf("tool invoke error: %v", err), nil
	case res.IsError && strings.Contains(res.Text, tools.ErrBadArguments.Error()):
		return fmt.Sprintf("tool parameters validation error: %s, please check your tool parameters", res.Text), res.Files
	case res.IsError:
		return fmt.Sprintf("tool invoke error: %s", res.Text), res.Files
	}
	return res.Text, res.Files
}

// messageFileEvent is the payload of a message_file event.
type messageFileEvent struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	BelongsTo string `json:"belongs_to"`
	URL       string `json:"url"`
}

// keepFiles stores the files a tool returned as files of the answer: each is attached to the
// step (message_files) and announced with a message_file event, as Dify does. A file that
// cannot be kept (over the size limit, a refused extension) is told to the model in what it
// returns, the text to add to the tool's result.
func (s *step) keepFiles(ctx context.Context, tool string, produced []tools.File) string {
	w := s.w
	if len(produced) == 0 {
		return ""
	}
	if w.r.o.Files == nil {
		w.r.o.Logger.DebugContext(ctx, "agent: tool files dropped: no file store", "tool", tool, "files", len(produced))
		return ""
	}
	var note strings.Builder
	for i, f := range produced {
		if len(w.files) >= MaxToolFiles {
			fmt.Fprintf(&note, "\n(%d files the tool returned were not kept: an answer keeps at most %d)", len(produced)-i, MaxToolFiles)
			break
		}
		saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
		saved, err := w.r.o.Files.SaveToolFile(saveCtx, files.ToolFile{
			AppID: w.appID, MessageID: s.out.MessageID(), CreatedBy: w.user, Name: f.Name, MIMEType: f.MIMEType, Data: f.Data,
		})
		cancel()
		if err != nil {
			w.r.o.Logger.WarnContext(ctx, "agent: a tool file was not kept", "tool", tool, "message_id", s.out.MessageID(), "error", err)
			fmt.Fprintf(&note, "\n(a file the tool returned was not kept: %s)", fileRefusal(err))
			continue
		}
		mf := saved.Message
		s.t.Files = append(s.t.Files, mf.ID)
		s.out.Emit(run.Event{Kind: run.EventMessageFile, Data: messageFileEvent{
			ID: mf.ID, Type: mf.Type, BelongsTo: mf.BelongsTo, URL: saved.URL,
		}})
		up := saved.Upload
		w.files = append(w.files, map[string]any{
			"related_id": mf.ID, "extension": "." + up.Extension, "filename": up.Name, "size": up.Size,
			"mime_type": up.MimeType, "transfer_method": mf.TransferMethod, "type": mf.Type, "url": saved.URL,
			"upload_file_id": up.ID, "remote_url": nil,
		})
	}
	return note.String()
}

// fileRefusal says why a tool file was not kept, in words fit for the model.
func fileRefusal(err error) string {
	var tooLarge *files.TooLargeError
	var ext *files.ExtensionNotAllowedError
	switch {
	case errors.As(err, &tooLarge):
		return fmt.Sprintf("larger than %d bytes", tooLarge.Limit)
	case errors.As(err, &ext):
		return ext.Error()
	}
	return "it could not be stored"
}
