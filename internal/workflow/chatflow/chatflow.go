// Package chatflow runs Chatflow apps (mode advanced-chat) and Workflow apps (mode workflow) in
// the run engine: it picks the published version to run, builds the variable pool of the turn
// (system, environment and conversation variables, the request's inputs), runs the graph with
// the workflow engine, and streams and persists the workflow run. A Workflow app's run has no
// conversation and ends its stream with workflow_finished whatever its status.
// docs/workflow.md and docs/workflow-apps.md describe it.
package chatflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Errors of the choice of a version (workflow_id of a message), as Dify answers them.
var (
	// ErrWorkflowIDInvalid is a workflow_id that is not a UUID (400 bad_request).
	ErrWorkflowIDInvalid = errors.New("invalid workflow_id format")
	// ErrDraftWorkflow is the draft's id (the app's own id) given as workflow_id (400
	// bad_request): only published versions run through the API.
	ErrDraftWorkflow = errors.New("cannot use draft workflow version; publish the app and use a published version id")
	// ErrVersionExecutionNotAllowed is a workflow_id given to a server that refuses pinned
	// versions (Options.RefusePinnedVersions), as Dify's hosted free plan does (403
	// workflow_version_execution_not_allowed).
	ErrVersionExecutionNotAllowed = errors.New("running a pinned workflow version is not allowed on this server")
	// ErrWorkflowNotFound is a workflow_id that names no version of the app (404 not_found).
	ErrWorkflowNotFound = errors.New("workflow not found")
	// ErrNotPublished is an app without a published version (400 invalid_param, Dify's
	// "Workflow not published").
	ErrNotPublished = errors.New("workflow not published")
	// ErrFilesNotAccepted is a message with files to a runner built without file support.
	ErrFilesNotAccepted = errors.New("this server does not accept files for Chatflow apps")
	// ErrTriggeredOnly is a request to run, through the API, a Workflow app whose graph starts
	// from triggers (webhooks, schedules) rather than a user-input start node (400
	// invalid_param).
	ErrTriggeredOnly = errors.New("this workflow starts from triggers (webhook, schedule), not from a user-input start node; " +
		"it runs when a trigger fires (parley apps triggers NAME lists them)")
	// ErrTriggerGone is a trigger's run of an app whose published graph no longer has the
	// trigger (it was published again meanwhile): the run is not started.
	ErrTriggerGone = errors.New("the trigger is no longer in the app's published workflow")
)

// RunFailedError is the failure of a run: a node failed and no error strategy handled it. The
// stream reports it after workflow_finished, as Dify does, as "Run failed: <error>".
type RunFailedError struct{ Msg string }

func (e *RunFailedError) Error() string { return "Run failed: " + e.Msg }

// InvalidGraphError is a version whose graph cannot run here.
type InvalidGraphError struct{ Problems []workflow.Problem }

func (e *InvalidGraphError) Error() string {
	ps := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		ps[i] = p.String()
	}
	return "the app's workflow cannot run: " + strings.Join(ps, "; ")
}

// Store is what the runner needs from storage; *store.Store implements it.
type Store interface {
	AppVersion(ctx context.Context, id string) (store.AppVersion, error)
	RecentMessages(ctx context.Context, conversationID string, n int) ([]store.Message, error)
	SaveWorkflowRun(ctx context.Context, r store.WorkflowRun) error
	SaveNodeExecutions(ctx context.Context, es []store.NodeExecution) error
	ConversationVariables(ctx context.Context, conversationID string) ([]store.ConversationVariable, error)
	SaveConversationVariables(ctx context.Context, vs []store.ConversationVariable) error
	SaveRunSegment(ctx context.Context, seg store.RunSegment) error
	WorkflowPauseOf(ctx context.Context, runID string) (store.WorkflowPause, error)
	HumanInputForms(ctx context.Context, runID string) ([]store.HumanInputForm, error)
	Message(ctx context.Context, appID, endUserID, id string) (store.Message, error)
}

// Options configure a Runner.
type Options struct {
	Store  Store
	Nodes  workflow.Registry
	Logger *slog.Logger
	// MaxParallel and NodeTimeout are the engine's (workflow.Options).
	MaxParallel int
	NodeTimeout time.Duration
	// Files checks a message's files and returns the rows recording them and the upload behind
	// each (chat.Service.MessageFiles); without it a message with files is refused.
	Files func(ctx context.Context, appID, endUserID string, refs []run.File) ([]store.MessageFile, []store.UploadFile, error)
	// RefusePinnedVersions refuses every message that names a version with workflow_id, before
	// the id is looked at, as Dify's hosted free (Sandbox) plan does; a message without one runs
	// the latest published version.
	RefusePinnedVersions bool
	// HumanInputGlobalTimeout is how long a paused run waits for a form at most before it is
	// stopped (default DefaultHumanInputGlobalTimeout).
	HumanInputGlobalTimeout time.Duration
	// OnPause, if set, is called after a run paused and its forms were stored (the timer
	// scanner looks at the new deadlines).
	OnPause func()
}

// Runner is the run.Runner of Chatflow and Workflow apps.
type Runner struct {
	store  Store
	files  func(ctx context.Context, appID, endUserID string, refs []run.File) ([]store.MessageFile, []store.UploadFile, error)
	engine *workflow.Engine
	log    *slog.Logger
	// versions caches parsed versions by id: a version never changes.
	versions sync.Map
	// refusePinned is Options.RefusePinnedVersions.
	refusePinned bool
	// globalTimeout is Options.HumanInputGlobalTimeout.
	globalTimeout time.Duration
	onPause       func()
}

// New returns a Runner.
func New(o Options) *Runner {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HumanInputGlobalTimeout <= 0 {
		o.HumanInputGlobalTimeout = DefaultHumanInputGlobalTimeout
	}
	r := &Runner{store: o.Store, log: o.Logger, files: o.Files, refusePinned: o.RefusePinnedVersions,
		globalTimeout: o.HumanInputGlobalTimeout, onPause: o.OnPause}
	r.engine = workflow.NewEngine(workflow.Options{Nodes: o.Nodes, MaxParallel: o.MaxParallel, NodeTimeout: o.NodeTimeout,
		Store: executions{o.Store}, Logger: o.Logger})
	return r
}

// Supports reports whether the runner runs a node type; the import refuses graphs with others.
func (r *Runner) Supports(nodeType string) bool { return r.engine.Registry().Supports(nodeType) }

// version is a parsed app version.
type version struct {
	id    string
	app   *apps.App
	graph *workflow.Graph
	// provider and model are the first LLM node's, recorded with the message.
	provider, model string
}

// historyLimit bounds the earlier messages read for a turn (memory and sys.dialogue_count).
const historyLimit = 500

// Prepare implements run.Runner.
func (r *Runner) Prepare(ctx context.Context, t run.Turn) (run.Job, error) {
	v, err := r.version(ctx, t.App, t.WorkflowID)
	if err != nil {
		return run.Job{}, err
	}
	history, err := t.Prior(ctx, historyLimit, r.store.RecentMessages)
	if err != nil {
		return run.Job{}, err
	}
	var convVars []convVar
	if t.App.Mode != apps.ModeWorkflow {
		if convVars, err = r.conversationVariables(ctx, v.app, t); err != nil {
			return run.Job{}, err
		}
	}
	switch tr := t.Trigger; {
	case tr == nil && v.graph.Root == "":
		return run.Job{}, ErrTriggeredOnly
	case tr != nil && (t.App.Mode != apps.ModeWorkflow || !slices.Contains(v.graph.Triggers, tr.NodeID)):
		return run.Job{}, fmt.Errorf("%w: node %s", ErrTriggerGone, tr.NodeID)
	}
	w := &work{r: r, v: v, t: t, history: history, convVars: convVars, runID: cmp.Or(t.WorkflowRunID, uuid.NewString()), files: []any{}}
	if w.t.Inputs, err = r.fileInputs(ctx, v.app, t); err != nil {
		return run.Job{}, err
	}
	var rows []store.MessageFile
	if len(t.Files) > 0 {
		if r.files == nil {
			return run.Job{}, ErrFilesNotAccepted
		}
		var uploads []store.UploadFile
		if rows, uploads, err = r.files(ctx, t.App.ID, t.EndUser.ID, t.Files); err != nil {
			return run.Job{}, err
		}
		for i, f := range t.Files {
			w.files = append(w.files, fileValue(f, uploads[i]))
		}
	}
	return run.Job{Provider: v.provider, Model: v.model, WorkflowRunID: w.runID, Work: w, Files: rows, App: v.app}, nil
}

// version resolves the version a message runs: the one named, or the latest published.
func (r *Runner) version(ctx context.Context, app *apps.App, id string) (*version, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		if app.PublishedVersion == "" {
			return nil, ErrNotPublished
		}
		id = app.PublishedVersion
	} else {
		if r.refusePinned {
			return nil, ErrVersionExecutionNotAllowed
		}
		if _, err := uuid.Parse(id); err != nil {
			return nil, ErrWorkflowIDInvalid
		}
		if id == app.ID {
			return nil, ErrDraftWorkflow
		}
	}
	return r.load(ctx, app, id)
}

// load reads version id of app (cached).
func (r *Runner) load(ctx context.Context, app *apps.App, id string) (*version, error) {
	if v, ok := r.versions.Load(id); ok {
		if v := v.(*version); v.app.ID == app.ID {
			return v, nil
		}
		return nil, ErrWorkflowNotFound
	}
	row, err := r.store.AppVersion(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && row.AppID != app.ID {
		return nil, ErrWorkflowNotFound
	}
	if err != nil {
		return nil, err
	}
	a, err := apps.DecodeVersion(row.Definition)
	if err != nil {
		return nil, fmt.Errorf("chatflow: version %s: %w", id, err)
	}
	a.ID, a.Source, a.PublishedVersion = app.ID, app.Source, app.PublishedVersion
	if a.Workflow == nil {
		return nil, &InvalidGraphError{Problems: []workflow.Problem{{Msg: "the version has no workflow graph"}}}
	}
	g, err := workflow.Parse(a.Workflow.Graph)
	if err != nil {
		return nil, &InvalidGraphError{Problems: []workflow.Problem{{Msg: err.Error()}}}
	}
	if ps := g.Validate(r.Supports); len(ps) > 0 {
		return nil, &InvalidGraphError{Problems: ps}
	}
	v := &version{id: id, app: a, graph: g}
	for _, nid := range g.Order {
		if n := g.Nodes[nid]; n.Type == "llm" {
			m, _ := n.Data["model"].(map[string]any)
			v.provider, _ = m["provider"].(string)
			v.model, _ = m["name"].(string)
			break
		}
	}
	r.versions.Store(id, v)
	return v, nil
}

// convVar is a conversation variable of the app with its value in this conversation.
type convVar struct {
	id, name, valueType string
	value               any
}

// conversationVariables are the conversation's variables: the stored values, and the DSL
// defaults for a new conversation or a variable added since.
func (r *Runner) conversationVariables(ctx context.Context, a *apps.App, t run.Turn) ([]convVar, error) {
	decls := a.Workflow.ConversationVariables
	if len(decls) == 0 {
		return nil, nil
	}
	stored := map[string]store.ConversationVariable{}
	if !t.NewConversation {
		vs, err := r.store.ConversationVariables(ctx, t.Conversation.ID)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			stored[v.ID] = v
		}
	}
	out := make([]convVar, 0, len(decls))
	for _, d := range decls {
		cv := convVar{id: str(d["id"]), name: str(d["name"]), valueType: str(d["value_type"]), value: value.FromGo(d["value"])}
		if cv.id == "" {
			cv.id = cv.name
		}
		if s, ok := stored[cv.id]; ok {
			v, err := value.Decode(s.Value)
			if err != nil {
				return nil, fmt.Errorf("chatflow: conversation variable %s: %w", cv.name, err)
			}
			cv.value = v
		}
		out = append(out, cv)
	}
	return out, nil
}

// work is one turn of a Chatflow.
type work struct {
	r        *Runner
	v        *version
	t        run.Turn
	history  []store.Message
	convVars []convVar
	runID    string
	// files are the message's files as sys.files holds them.
	files []any
	// messageCreated is the message's creation time (epoch seconds), kept for a resumption.
	messageCreated int64
}

// Run implements run.Work: workflow_started, the graph's events and answer, the persisted run
// and conversation variables; workflow_finished comes after message_end on success (the
// outcome's trailer), before the engine's error or message_end otherwise.
func (w *work) Run(ctx context.Context, out *run.Output) (run.Outcome, error) {
	t, a := w.t, w.v.app
	// A Workflow app's run answers no conversation: it has neither query nor conversation
	// variables, and its stream ends with workflow_finished, not message_end.
	isApp := w.isApp()
	created := time.Now()
	pool := workflow.NewPool()
	sys := map[string]any{
		workflow.SysFiles:         w.files,
		workflow.SysUserID:        t.User,
		workflow.SysAppID:         a.ID,
		workflow.SysWorkflowID:    w.v.id,
		workflow.SysWorkflowRunID: w.runID,
	}
	if isApp {
		sys[workflow.SysTimestamp] = created.Unix()
	} else {
		sys[workflow.SysQuery] = t.Query
		sys[workflow.SysConversationID] = t.Conversation.ID
		sys[workflow.SysDialogueCount] = int64(len(w.history) + 1)
	}
	pool.SetAll(workflow.ScopeSys, sys)
	for _, ev := range a.Workflow.EnvironmentVariables {
		if name := str(ev["name"]); name != "" {
			pool.Set(workflow.ScopeEnv, name, value.FromGo(ev["value"]))
		}
	}
	for _, cv := range w.convVars {
		pool.Set(workflow.ScopeConversation, cv.name, value.Clone(cv.value))
	}
	inputs := make(map[string]any, len(t.Inputs)+len(sys))
	for k, v := range t.Inputs {
		inputs[k] = v
	}
	for k, v := range sys {
		inputs["sys."+k] = v
	}
	rawInputs, _ := json.Marshal(inputs)
	persist := context.WithoutCancel(ctx)
	w.messageCreated = out.CreatedAt().Unix()
	rec := store.WorkflowRun{ID: w.runID, AppID: a.ID, WorkflowID: w.v.id, ConversationID: t.Conversation.ID,
		MessageID: out.MessageID(), Status: workflow.StatusRunning, Inputs: rawInputs, CreatedAt: created}
	var root string
	if tr := t.Trigger; tr != nil {
		// A trigger's run starts from the trigger node and says so in the logs.
		root, rec.TriggeredFrom = tr.NodeID, tr.Kind
	}
	if isApp {
		// The run's message is the engine's bookkeeping (stop, heartbeat, the end user); the
		// API shows no conversation for it.
		rec.ConversationID = ""
	}
	if err := w.r.store.SaveWorkflowRun(persist, rec); err != nil {
		return run.Outcome{}, err
	}
	out.Emit(run.Event{Kind: run.EventWorkflowStarted, Data: workflowStarted{ID: w.runID, WorkflowID: w.v.id,
		Inputs: inputs, CreatedAt: created.Unix(), Reason: "initial"}})

	env := &nodes.Env{Inputs: t.Inputs, History: w.historyFunc(), AppID: a.ID, MessageID: out.MessageID(), EndUserID: t.EndUser.ID}
	rep := w.r.engine.Execute(ctx, workflow.Spec{Graph: w.v.graph, Pool: pool, RunID: w.runID, Out: out, Env: env, TextChunks: w.isApp(),
		Root: root})
	return w.finish(ctx, out, pool, rep, rec, nil, true)
}

// finish ends a segment of the run: paused again, or finished (persisted, workflow_finished);
// consumed are the forms whose decisions the segment took; first says the segment is the run's
// first (it did not resume a pause).
func (w *work) finish(ctx context.Context, out *run.Output, pool *workflow.Pool, rep workflow.Report, rec store.WorkflowRun, consumed []string, first bool) (run.Outcome, error) {
	t, a, created := w.t, w.v.app, rec.CreatedAt
	persist := context.WithoutCancel(ctx)
	if rep.Status == workflow.StatusPaused {
		return w.pause(persist, out, pool, rep, rec, consumed)
	}
	w.saveConversationVariables(persist, pool)
	finished := time.Now()
	outputs, _ := json.Marshal(rep.Outputs)
	rec.Status, rec.Outputs, rec.Elapsed = rep.Status, outputs, finished.Sub(created).Seconds()
	rec.TotalTokens, rec.TotalSteps, rec.ExceptionsCount, rec.FinishedAt = int64(rep.Usage.TotalTokens), rep.Steps, rep.Exceptions, &finished
	var errText *string
	if rep.Err != nil && rep.Status != workflow.StatusSucceeded {
		s := rep.Err.Error()
		if rep.Status == workflow.StatusStopped {
			s = "Workflow execution stopped by user."
			if errors.Is(context.Cause(ctx), run.ErrOutputModerated) {
				s = "Stopped by output moderation."
			}
		}
		rec.Error, errText = s, &s
	}
	if err := w.r.store.SaveRunSegment(persist, store.RunSegment{Run: rec, Consumed: consumed, First: first}); err != nil {
		w.r.log.ErrorContext(ctx, "persist workflow run", "workflow_run_id", w.runID, "error", err)
	}
	fin := run.Event{Kind: run.EventWorkflowFinished, Data: workflowFinished{
		ID: w.runID, WorkflowID: w.v.id, Status: rep.Status, Outputs: rep.Outputs, Error: errText,
		ElapsedTime: rec.Elapsed, TotalTokens: rec.TotalTokens, TotalSteps: rep.Steps,
		CreatedBy: map[string]any{"id": t.EndUser.ID, "user": t.User}, CreatedAt: created.Unix(),
		FinishedAt: finished.Unix(), ExceptionsCount: rep.Exceptions, Files: []any{},
	}}
	outcome := run.Outcome{Usage: rep.Usage}
	if a.Features.RetrieverResource.Enabled {
		// The chunks LLM nodes used as their context are the answer's citations, as in Dify.
		outcome.Resources = rep.Resources
		for i := range outcome.Resources {
			outcome.Resources[i].Position = i + 1
		}
	}
	if w.isApp() {
		return w.finishApp(ctx, out, fin, rep, outcome)
	}
	switch rep.Status {
	case workflow.StatusSucceeded, workflow.StatusPartialSucceeded:
		outcome.Trailer = []run.Event{fin}
		return outcome, nil
	case workflow.StatusStopped:
		out.Emit(fin)
		return outcome, context.Cause(ctx)
	default:
		out.Emit(fin)
		if cause := context.Cause(ctx); cause != nil {
			return outcome, cause
		}
		return outcome, &RunFailedError{Msg: rep.Err.Error()}
	}
}

// finishApp ends the run of a Workflow app: workflow_finished whatever the status, as Dify
// ends a Workflow app's stream; the engine adds an error event only when the run was cut by
// shutdown. A failed run is reported to the engine as already told to the client.
func (w *work) finishApp(ctx context.Context, out *run.Output, fin run.Event, rep workflow.Report, outcome run.Outcome) (run.Outcome, error) {
	out.Emit(fin)
	switch rep.Status {
	case workflow.StatusSucceeded, workflow.StatusPartialSucceeded:
		return outcome, nil
	case workflow.StatusStopped:
		return outcome, context.Cause(ctx)
	}
	if cause := context.Cause(ctx); cause != nil {
		return outcome, cause
	}
	return outcome, &run.ReportedError{Err: &RunFailedError{Msg: rep.Err.Error()}}
}

// isApp reports whether the run is a Workflow app's (no conversation, text_chunk events, the
// stream ends with workflow_finished).
func (w *work) isApp() bool { return w.t.App.Mode == apps.ModeWorkflow }

// historyFunc gives memory the conversation's last n exchanges.
func (w *work) historyFunc() func(context.Context, int) ([]store.Message, error) {
	h := w.history
	return func(_ context.Context, n int) ([]store.Message, error) {
		if n < len(h) {
			return h[len(h)-n:], nil
		}
		return h, nil
	}
}

// saveConversationVariables persists the conversation variables as the run left them.
func (w *work) saveConversationVariables(ctx context.Context, pool *workflow.Pool) {
	if len(w.convVars) == 0 {
		return
	}
	vals := pool.Scope(workflow.ScopeConversation)
	vs := make([]store.ConversationVariable, 0, len(w.convVars))
	for _, cv := range w.convVars {
		raw, err := json.Marshal(vals[cv.name])
		if err != nil {
			w.r.log.ErrorContext(ctx, "encode conversation variable", "name", cv.name, "error", err)
			continue
		}
		vs = append(vs, store.ConversationVariable{ID: cv.id, ConversationID: w.t.Conversation.ID, Name: cv.name,
			ValueType: cv.valueType, Value: raw})
	}
	if err := w.r.store.SaveConversationVariables(ctx, vs); err != nil {
		w.r.log.ErrorContext(ctx, "persist conversation variables", "conversation_id", w.t.Conversation.ID, "error", err)
	}
}

// workflowStarted is workflow_started's data.
type workflowStarted struct {
	ID         string         `json:"id"`
	WorkflowID string         `json:"workflow_id"`
	Inputs     map[string]any `json:"inputs"`
	CreatedAt  int64          `json:"created_at"`
	Reason     string         `json:"reason"`
}

// workflowFinished is workflow_finished's data.
type workflowFinished struct {
	ID              string         `json:"id"`
	WorkflowID      string         `json:"workflow_id"`
	Status          string         `json:"status"`
	Outputs         map[string]any `json:"outputs"`
	Error           *string        `json:"error"`
	ElapsedTime     float64        `json:"elapsed_time"`
	TotalTokens     int64          `json:"total_tokens"`
	TotalSteps      int            `json:"total_steps"`
	CreatedBy       map[string]any `json:"created_by"`
	CreatedAt       int64          `json:"created_at"`
	FinishedAt      int64          `json:"finished_at"`
	ExceptionsCount int            `json:"exceptions_count"`
	Files           []any          `json:"files"`
}

// fileValue is a message's file as the variable pool holds it.
// fileInputs are the turn's inputs with the value of each file input of the start node (a file
// object, or a list of them for a file list) checked as a message's files are, and turned into
// the file it names, as Dify's start node hands its file inputs on as files.
func (r *Runner) fileInputs(ctx context.Context, a *apps.App, t run.Turn) (map[string]any, error) {
	var out map[string]any
	for _, f := range a.UserInputForm {
		if f.Type != "file" && f.Type != "file-list" {
			continue
		}
		var objs []any
		switch v := t.Inputs[f.Variable].(type) {
		case map[string]any:
			objs = []any{v}
		case []any:
			objs = v
		default:
			continue
		}
		refs := make([]run.File, 0, len(objs))
		for _, o := range objs {
			m, _ := o.(map[string]any)
			s := func(k string) string { v, _ := m[k].(string); return v }
			refs = append(refs, run.File{Type: s("type"), TransferMethod: s("transfer_method"), URL: s("url"), UploadFileID: s("upload_file_id")})
		}
		if r.files == nil {
			return nil, ErrFilesNotAccepted
		}
		_, uploads, err := r.files(ctx, t.App.ID, t.EndUser.ID, refs)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = maps.Clone(t.Inputs)
		}
		files := make([]any, len(refs))
		for i, ref := range refs {
			files[i] = fileValue(ref, uploads[i])
		}
		if f.Type == "file" {
			out[f.Variable] = files[0]
		} else {
			out[f.Variable] = files
		}
	}
	if out == nil {
		return t.Inputs, nil
	}
	return out, nil
}

func fileValue(ref run.File, up store.UploadFile) *value.File {
	f := &value.File{Type: ref.Type, TransferMethod: ref.TransferMethod, RemoteURL: ref.URL}
	if up.ID != "" {
		f.ID, f.RelatedID, f.Filename, f.MimeType, f.Size = up.ID, up.ID, up.Name, up.MimeType, up.Size
		if up.Extension != "" {
			f.Extension = "." + up.Extension
		}
	}
	return f
}

// executions persists node executions through the store.
type executions struct{ s Store }

func (e executions) SaveNodeExecution(ctx context.Context, rec workflow.NodeExecution) error {
	return e.s.SaveNodeExecutions(ctx, []store.NodeExecution{storedExecution(rec)})
}

// SaveNodeExecutions implements workflow.BatchStore: a run's quick nodes are stored together.
func (e executions) SaveNodeExecutions(ctx context.Context, recs []workflow.NodeExecution) error {
	out := make([]store.NodeExecution, len(recs))
	for i, rec := range recs {
		out[i] = storedExecution(rec)
	}
	return e.s.SaveNodeExecutions(ctx, out)
}

// storedExecution is a node execution as the store keeps it, its maps in JSON.
func storedExecution(rec workflow.NodeExecution) store.NodeExecution {
	enc := func(m map[string]any) json.RawMessage {
		if m == nil {
			return nil
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil
		}
		return raw
	}
	return store.NodeExecution{ID: rec.ID, WorkflowRunID: rec.RunID, NodeID: rec.NodeID,
		NodeType: rec.NodeType, Title: rec.Title, Index: rec.Index, PredecessorNodeID: rec.PredecessorNodeID,
		Inputs: enc(rec.Inputs), ProcessData: enc(rec.ProcessData), Outputs: enc(rec.Outputs), Metadata: enc(rec.Metadata),
		Status: rec.Status, Error: rec.Error, Elapsed: rec.Elapsed, CreatedAt: rec.CreatedAt, FinishedAt: rec.FinishedAt}
}

var _ workflow.BatchStore = executions{}

func str(v any) string {
	s, _ := v.(string)
	return s
}

var _ run.Runner = (*Runner)(nil)
