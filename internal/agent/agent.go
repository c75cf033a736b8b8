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
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
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

// saveTimeout bounds the storing of one step.
const saveTimeout = 10 * time.Second

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
	// ToolTimeout bounds one tool call (default llm.DefaultToolTimeout); a tool that takes
	// longer is told to the model as a failure.
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
	history, err := t.Prior(ctx, r.o.HistoryMessages, r.o.Store.RecentMessages)
	if err != nil {
		return run.Job{}, err
	}
	var thoughts map[string][]store.AgentThought
	if !t.NewConversation {
		// A stored conversation's answers are replayed with the tool calls they made.
		ids := make([]string, len(history))
		for i, m := range history {
			ids[i] = m.ID
		}
		if thoughts, err = r.o.Store.AgentThoughts(ctx, ids); err != nil {
			return run.Job{}, err
		}
	}
	spec := base.Model.Spec
	w := &work{
		r: r, base: base, prompt: buildPrompt(app, spec, t.Inputs, history, thoughts, t.Query),
		user: t.EndUser.ID, appID: app.ID, cite: app.Features.RetrieverResource.Enabled,
	}
	strategy := ""
	if app.Agent != nil {
		strategy = app.Agent.Strategy
	}
	react := useReAct(strategy, spec)
	w.agent = llm.Agent{Model: base.Model, Params: base.Params, Offers: r.offers(ctx, app, w), Rounds: rounds(app.Agent),
		ReAct: react, Text: react && completionModel(app, spec), User: t.EndUser.ID, ToolTimeout: r.o.ToolTimeout}
	return run.Job{Provider: spec.Provider, Model: spec.Name, Files: base.Files, Work: w, After: base.After}, nil
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

// offers are the app's enabled tools as the model is offered them, with the knowledge bases
// the agent searches as tools first. A tool Parley does not have is still offered under its
// name, so that the model calling it learns why it failed. The names offered are what model
// APIs accept (an MCP tool may be called "files.read"), unique; each maps back to its tool.
func (r *Runner) offers(ctx context.Context, app *apps.App, w *work) []llm.Offer {
	var out []llm.Offer
	seen := map[string]bool{}
	if r.o.Knowledge != nil {
		for _, kb := range app.KnowledgeBases {
			name := datasetToolName(kb)
			if seen[name] {
				continue
			}
			seen[name] = true
			tool := &datasetTool{k: r.o.Knowledge, kb: kb, name: name, found: w.found}
			out = append(out, llm.Offer{Name: name, Tool: tool, Labels: tool.Identity().Label})
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
		o := llm.Offer{Name: name}
		if tool, err := resolve(ctx, r.o.Tools, t); err != nil {
			o.Missing = err
		} else {
			o.Tool, o.Labels = tool, tool.Identity().Label
		}
		o.Labels = labelsOf(o.Labels, t.Label, t.Name)
		out = append(out, o)
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

// work is one agent answer; it implements run.Work, and llm.Observer for its rounds.
type work struct {
	r      *Runner
	base   chat.Base
	prompt []providers.Message
	agent  llm.Agent
	user   string
	appID  string
	out    *run.Output
	// st is the step of the round under way.
	st *step
	// files are the files the tools returned, as message_end lists them.
	files []map[string]any
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
	w.out = out
	prompt := w.prompt
	if w.base.Images != nil {
		images, err := w.base.Images(ctx)
		if err != nil {
			return run.Outcome{}, err
		}
		if len(images) > 0 {
			prompt = llm.WithImages(prompt, images)
		}
	}
	usage, err := w.agent.Run(ctx, prompt, w)
	if errors.Is(err, llm.ErrMaxRounds) {
		err = fmt.Errorf("%w (max_iteration %d)", ErrMaxIterations, w.agent.Rounds-1)
	}
	o := run.Outcome{Usage: usage, Resources: w.resources}
	if len(w.files) > 0 {
		o.Files = w.files
	}
	return o, err
}

// Begin implements llm.Observer: each round is a step at its position in the answer.
func (w *work) Begin(_ context.Context, r *llm.Round) error {
	w.st = &step{w: w, t: store.AgentThought{ID: store.NewID(), MessageID: w.out.MessageID(), Position: r.N}}
	return nil
}

// Started implements llm.Observer: the step is stored and streamed, empty, when the model's
// answer begins.
func (w *work) Started(ctx context.Context, _ *llm.Round) error {
	w.st.started = true
	return w.st.save(ctx)
}

// Delta implements llm.Observer: what the model says streams as agent_message events.
func (w *work) Delta(_ *llm.Round, text string) {
	w.out.Emit(run.Event{Kind: run.EventAgentMessage, Answer: text})
}

// Said implements llm.Observer: the step records the round's tokens, what the model said and
// the tools it called, also when the call failed part-way, and is stored. A step with tool
// calls is streamed again; a ReAct model's final answer streams as agent_message.
func (w *work) Said(ctx context.Context, r *llm.Round, err error) error {
	st := w.st
	tok := r.Result.Tokens
	st.t.MessageTokens, st.t.AnswerTokens, st.t.Latency = int64(tok.PromptTokens), int64(tok.CompletionTokens), r.Result.Latency.Seconds()
	if !st.started {
		return err
	}
	st.t.Thought += r.Thought
	var serr error
	switch {
	case r.Final:
		w.out.Emit(run.Event{Kind: run.EventAgentMessage, Answer: r.Answer})
		st.t.Thought += r.Answer
		serr = st.store(ctx)
	case w.agent.ReAct && (len(r.Calls) == 0 || r.Last):
		// Stored, not streamed: a ReAct step is streamed again only once its action runs.
		serr = st.store(ctx)
	default:
		if len(r.Calls) > 0 {
			st.describeCalls(r.Calls)
		}
		serr = st.save(ctx)
	}
	if err == nil {
		err = serr
	}
	return err
}

// Calling implements llm.Observer.
func (w *work) Calling(context.Context, *llm.Round, int) {}

// Called implements llm.Observer: the files the tool returned are kept, and the result is the
// step's observation of that tool.
func (w *work) Called(ctx context.Context, r *llm.Round, i int, result string, files []tools.File) string {
	name := r.Calls[i].Name
	result += w.st.keepFiles(ctx, name, files)
	if w.st.observations == nil {
		w.st.observations = newObject()
	}
	w.st.observations.set(name, result)
	return result
}

// Done implements llm.Observer: the step, with its observation, is stored and streamed.
func (w *work) Done(ctx context.Context, _ *llm.Round) error {
	w.st.t.Observation = w.st.observations.String()
	return w.st.save(ctx)
}

// step is one round of the agent and the thought that records it.
type step struct {
	w            *work
	t            store.AgentThought
	labels       map[string]any
	observations *object
	started      bool
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
	s.w.out.Emit(run.Event{Kind: run.EventAgentThought, Data: thoughtEvent{
		ID: t.ID, Position: t.Position, Thought: t.Thought, Observation: t.Observation, Tool: t.Tool,
		ToolLabels: labels, ToolInput: t.ToolInput, MessageFiles: t.Files,
	}})
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
		if o := llm.Find(s.w.agent.Offers, c.Name); o != nil {
			l = o.Labels
		}
		s.labels[c.Name] = l
		labelsJSON.set(c.Name, l)
	}
	s.t.Tool = strings.Join(names, ";")
	s.t.ToolInput = input.String()
	s.t.ToolLabels = json.RawMessage(labelsJSON.String())
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
		if len(w.files) >= llm.MaxToolFiles {
			fmt.Fprintf(&note, "\n(%d files the tool returned were not kept: an answer keeps at most %d)", len(produced)-i, llm.MaxToolFiles)
			break
		}
		saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
		saved, err := w.r.o.Files.SaveToolFile(saveCtx, files.ToolFile{
			AppID: w.appID, MessageID: w.out.MessageID(), CreatedBy: w.user, Name: f.Name, MIMEType: f.MIMEType, Data: f.Data,
		})
		cancel()
		if err != nil {
			w.r.o.Logger.WarnContext(ctx, "agent: a tool file was not kept", "tool", tool, "message_id", w.out.MessageID(), "error", err)
			fmt.Fprintf(&note, "\n(a file the tool returned was not kept: %s)", fileRefusal(err))
			continue
		}
		mf := saved.Message
		s.t.Files = append(s.t.Files, mf.ID)
		w.out.Emit(run.Event{Kind: run.EventMessageFile, Data: messageFileEvent{
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
