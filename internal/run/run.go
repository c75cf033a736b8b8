// Package run owns the life of a run — one message being answered — for every app kind:
// admission (shutdown, response mode, a runner for the app's mode, the per-app concurrency cap),
// the end user, the conversation and message records, the stop handle, the event pump that
// outlives a client who goes away, the stored outcome, shutdown, and the reconciliation of runs
// a dead process left behind. App kinds plug in as a Runner per mode (internal/chat runs
// Chatbot and Completion apps); see docs/runs.md.
package run

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/logctx"
	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/tracing"
)

// DefaultConversationName is the name of a conversation until one is generated or set.
const DefaultConversationName = "New conversation"

// Store is what the engine needs from storage; *store.Store implements it.
type Store interface {
	EndUser(ctx context.Context, appID, sessionID string) (store.EndUser, error)
	EndUserByID(ctx context.Context, appID, id string) (store.EndUser, error)
	Conversation(ctx context.Context, appID, endUserID, id string) (store.Conversation, error)
	StartConversation(ctx context.Context, c store.Conversation, m store.Message, files ...store.MessageFile) (store.Conversation, store.Message, error)
	CreateMessage(ctx context.Context, m store.Message, files ...store.MessageFile) (store.Message, error)
	FinishMessage(ctx context.Context, id string, r store.MessageResult) error
	SaveMessageProgress(ctx context.Context, at time.Time, ps []store.MessageProgress) error
	EndStaleMessages(ctx context.Context, before time.Time, errText string) (int64, error)
	EndRunningMessages(ctx context.Context, errText string) (int64, error)
}

// Kind is how the engine runs the apps of one mode.
type Kind struct {
	Runner Runner
	// OneShot apps (Completion) answer messages one at a time: a request cannot name a
	// conversation, and each message is stored under a conversation of its own that the API
	// never shows.
	OneShot bool
	// Workflow apps answer no message: each request is one run of a graph, stored as a workflow
	// run, whose stream ends with the job's own workflow_finished instead of message_end. The
	// engine still keeps a one-shot message for each run, never shown by the API, so that
	// admission, stop, progress heartbeats and crash reconciliation work as for every kind.
	Workflow bool
}

// Options configure an Engine.
type Options struct {
	Store   Store
	Limiter limiter.Limiter
	Tasks   tasks.Registry
	// Kinds maps an app mode to the way its apps run; a mode without one is refused with
	// ErrModeNotSupported.
	Kinds  map[string]Kind
	Logger *slog.Logger
	// EventBuffer is how many events a run may get ahead of a slow client (default 16).
	EventBuffer int
	// ProgressInterval is how often, at most, a run's answer so far is written while it
	// streams (default DefaultProgressInterval).
	ProgressInterval time.Duration
	// Moderation checks the apps' content moderation (nil: no app is moderated).
	Moderation Moderation
	// ModerationBuffer is how many characters an answer grows by between two output
	// moderation checks while it streams (default DefaultModerationBuffer).
	ModerationBuffer int
	// StaleAfter is how old the heartbeat of a running message may grow before the message is
	// taken as interrupted by a dead process (default DefaultStaleAfter). This process
	// refreshes the heartbeat of its own runs every StaleAfter/4 and ends stale ones every
	// StaleAfter/2.
	StaleAfter time.Duration
	// Annotations, if set, answers the chat kinds' questions that match an annotation.
	Annotations Annotations
	// Speech, if set, reads streamed answers aloud for apps with text-to-speech auto-play.
	Speech Speech
	// Metrics records runs, their first tokens and the apps' concurrency slots; nil: none.
	Metrics *metrics.Metrics
	// Quota, if set, admits runs against daily limits and counts what they spend.
	Quota Quota
}

// Quota admits runs against the daily limits of whoever asks (tokens, workflow runs) and counts
// what they spend.
type Quota interface {
	// Admit is asked once a request is ready to run, before anything is stored; an error
	// refuses it as is. The function it returns is told the tokens the run used, when it ends
	// (also when it failed, was stopped or paused).
	Admit(ctx context.Context, app *apps.App) (spent func(tokens int64), err error)
	// Charge is asked when a paused run resumes: the segment is not admitted again, but the
	// function it returns (nil: nothing to count) is told the tokens the segment used.
	Charge(ctx context.Context, app *apps.App) (spent func(tokens int64))
}

// Defaults of the run bookkeeping (Options.ProgressInterval, Options.StaleAfter).
const (
	// DefaultProgressInterval bounds what a crash can lose of an answer to about a second of
	// text, at one write per streaming run per second: far below the writes a chat already
	// costs, and none at all for answers shorter than that.
	DefaultProgressInterval = time.Second
	// DefaultStaleAfter leaves four heartbeats (every 15 s) to be missed before another
	// process, or this one after a restart, ends a run as interrupted: a busy database or a
	// paused process does not lose its runs, and a crashed one's are ended within about a
	// minute and a half.
	DefaultStaleAfter = time.Minute
)

// Engine runs the messages of every app kind.
type Engine struct {
	store Store
	// tap sees the events of workflow runs (tap.go).
	tap     atomic.Pointer[tapHolder]
	limiter limiter.Limiter
	tasks   tasks.Registry
	kinds   map[string]Kind
	log     *slog.Logger
	buffer  int
	// moderation checks apps' content moderation, nil when none is; modBuffer is
	// Options.ModerationBuffer.
	moderation Moderation
	quota      Quota
	modBuffer  int

	annotations Annotations
	speech      Speech
	metrics     *metrics.Metrics

	// Run bookkeeping (see keepRuns): live holds this process's runs by message id.
	interval   time.Duration
	staleAfter time.Duration
	liveMu     sync.Mutex
	live       map[string]*Run

	// life is cancelled by Shutdown; runs and background work derive from it, not from the
	// request that started them.
	life     context.Context
	stopLife context.CancelFunc
	wg       sync.WaitGroup
}

// New returns an Engine. Call Shutdown to end it.
func New(o Options) *Engine {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = 16
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.ModerationBuffer <= 0 {
		o.ModerationBuffer = DefaultModerationBuffer
	}
	life, stop := context.WithCancelCause(context.Background())
	e := &Engine{
		store: o.Store, limiter: o.Limiter, tasks: o.Tasks, kinds: o.Kinds, log: o.Logger, buffer: o.EventBuffer,
		interval: o.ProgressInterval, staleAfter: o.StaleAfter, live: map[string]*Run{}, moderation: o.Moderation, modBuffer: o.ModerationBuffer,
		annotations: o.Annotations, speech: o.Speech, metrics: o.Metrics, quota: o.Quota,
		life: life, stopLife: func() { stop(ErrShuttingDown) },
	}
	e.wg.Add(1)
	go e.keepRuns()
	return e
}

// Shutdown ends every run still going (each delivers an error event and persists what it has)
// and waits, until ctx ends, for runs and their follow-up work such as naming a conversation
// to finish.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.stopLife()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("run: shutdown: %w", ctx.Err())
	}
}

// Stop stops the run of task taskID if it belongs to appID and user; otherwise it does
// nothing. As in Dify it reports no error for an unknown, finished or foreign task.
func (e *Engine) Stop(ctx context.Context, taskID, appID, user string) error {
	return e.tasks.Stop(ctx, taskID, appID, user)
}

// StopWorkflow stops the run of a Workflow app's task taskID if it belongs to appID. Dify's
// stop operation of Workflow apps takes a `user` but does not check it, so neither does this;
// an unknown or finished task is no error either.
func (e *Engine) StopWorkflow(ctx context.Context, taskID, appID string) error {
	return e.tasks.Stop(ctx, taskID, appID, "")
}

// Run is an accepted message being answered.
type Run struct {
	TaskID    string
	MessageID string
	// ConversationID is the conversation the message belongs to; empty for one-shot kinds,
	// whose conversation the API never shows.
	ConversationID string
	// WorkflowRunID is the workflow run of kinds that run a graph, else empty.
	WorkflowRunID string
	CreatedAt     time.Time
	Mode          string
	// EndUserID is the end user the run belongs to.
	EndUserID string
	// Resumed says the run is a later segment of a paused one (Engine.Resume).
	Resumed bool

	// workflow is Kind.Workflow: the job ends the stream itself.
	workflow bool
	events   chan Event
	out      Output
	detached chan struct{}
	finished chan struct{}
	once     sync.Once
	tts      *speaker // reads the answer aloud as it streams (auto-play); nil when off
	// spent is told the tokens the run used (Quota), nil without a quota.
	spent func(tokens int64)

	// answer is written by the job's goroutine (Output) under mu; keepRuns reads it under mu.
	// version counts the changes of answer.
	mu      sync.Mutex
	answer  strings.Builder
	version uint64
	// savedVersion (the version of the answer stored), answerAt (when it was) and beatAt (the
	// last write of the message, its heartbeat) belong to keepRuns.
	savedVersion     uint64
	answerAt, beatAt time.Time

	// guard is the output moderation of the answer, nil when it has none.
	guard *guard

	// tapEvent and tapEnd are the run's tap (tap.go), nil without one.
	tapEvent func(Event)
	tapEnd   func()

	// What observes the run (observe.go): its span, ended with the run (a span that records
	// nothing when tracing is off), and its metrics (nil when off) with its app's name, when it
	// started and whether its answer's first text came.
	span     trace.Span
	metrics  *metrics.Metrics
	app      string
	started  time.Time
	answered atomic.Bool
}

// Events delivers the run's events; it is closed after the last one (message_end or error).
func (r *Run) Events() <-chan Event { return r.events }

// Done is closed when the run has finished all its work: the answer is persisted and its
// follow-up work (Job.After) is over.
func (r *Run) Done() <-chan struct{} { return r.finished }

// Detach tells the run that nobody reads its events any more (the client went away): it goes on
// to the end and persists its answer, dropping events instead of waiting.
func (r *Run) Detach() { r.once.Do(func() { close(r.detached) }) }

func (r *Run) emit(ev Event) {
	if r.tapEvent != nil {
		r.tapEvent(ev)
	}
	select {
	case r.events <- ev:
	case <-r.detached:
	}
}

// Start admits a message and starts answering it. Errors returned here refuse the request
// before anything was stored or streamed; failures after acceptance arrive as an error event.
func (e *Engine) Start(ctx context.Context, req Request) (_ *Run, err error) {
	app := req.App
	// The run's span covers admission, which a refusal ends; an accepted run ends it with its
	// answer (observe.go).
	ctx, span := tracing.Start(ctx, "run", trace.SpanKindInternal)
	nameRun(span, app, false)
	defer func() {
		if err != nil {
			tracing.Fail(span, err)
			span.End()
		}
	}()
	if e.life.Err() != nil {
		return nil, ErrShuttingDown
	}
	if app.StreamingOnly() && !req.Streaming {
		return nil, ErrStreamingOnly
	}
	kind, ok := e.kinds[app.Mode]
	if !ok || kind.Runner == nil {
		return nil, fmt.Errorf("%w: %s", ErrModeNotSupported, app.Mode)
	}
	release, err := e.limiter.Acquire(ctx, app.ID, app.MaxActiveRequests)
	if err != nil {
		if errors.Is(err, limiter.ErrLimitExceeded) {
			e.metrics.RunRejected(app.Name)
			return nil, &LimitError{AppID: app.ID, Limit: app.MaxActiveRequests}
		}
		return nil, err
	}
	release = e.countSlot(app, release)
	accepted := false
	defer func() {
		if !accepted {
			release()
		}
	}()

	user, err := e.EndUser(ctx, app.ID, req.User)
	if err != nil {
		return nil, err
	}
	turn := Turn{Request: req, EndUser: user}
	if err := e.conversation(ctx, app, kind, &turn); err != nil {
		return nil, err
	}
	job, annotated := e.annotationJob(ctx, kind, turn)
	if !annotated {
		if job, err = kind.Runner.Prepare(ctx, turn); err != nil {
			return nil, err
		}
	}
	mod, err := e.checker(cmp.Or(job.App, app))
	if err != nil {
		return nil, err
	}
	var spent func(int64)
	if e.quota != nil {
		if spent, err = e.quota.Admit(ctx, app); err != nil {
			return nil, err
		}
	}

	conv := turn.Conversation
	msg := store.Message{
		AppID: app.ID, ConversationID: conv.ID, EndUserID: user.ID,
		Query: req.Query, Inputs: conv.Inputs, Status: store.MessageStatusRunning,
		ModelProvider: job.Provider, ModelID: job.Model, TaskID: uuid.NewString(),
	}
	// The message, its files and, for a new conversation, the conversation are stored in one
	// commit: no failure or crash leaves one without the others.
	if turn.NewConversation {
		_, msg, err = e.store.StartConversation(ctx, conv, msg, job.Files...)
	} else {
		msg, err = e.store.CreateMessage(ctx, msg, job.Files...)
	}
	if err != nil {
		return nil, err
	}
	run := &Run{
		TaskID: msg.TaskID, MessageID: msg.ID, WorkflowRunID: job.WorkflowRunID, CreatedAt: msg.CreatedAt,
		Mode: app.Mode, EndUserID: user.ID, workflow: kind.Workflow,
		events: make(chan Event, e.buffer), detached: make(chan struct{}), finished: make(chan struct{}),
		span: span, metrics: e.metrics, app: app.Name,
	}
	if !kind.OneShot && !kind.Workflow {
		run.ConversationID = conv.ID
	}
	run.out.r = run
	run.spent = spent
	job.Work = e.moderated(mod, turn, run, job.Work)
	run.tts = e.speaker(app, req.Streaming, run)
	run.answerAt = time.Now()
	run.beatAt, run.started = run.answerAt, run.answerAt
	run.describe()
	e.track(run)
	task := tasks.Task{ID: run.TaskID, AppID: app.ID, User: req.User}
	if kind.Workflow {
		// A Workflow app's run is stopped by whoever names its task (StopWorkflow).
		task.User = ""
	}
	// The run outlives its request, so it lives in the engine's context, but its log lines
	// keep the id of the request that started it, and its spans and metrics its own.
	life := e.observed(e.life, run)
	if id := logctx.RequestID(ctx); id != "" {
		life = logctx.WithRequestID(life, id)
	}
	runCtx, done := e.tasks.Register(life, task)
	accepted = true
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(run.finished)
		completed := false
		func() {
			// The concurrency slot and the stop handle end with the answer, not with the
			// follow-up work (done also cancels runCtx).
			defer release()
			defer done()
			e.execute(runCtx, run, job.Work)
			completed = runCtx.Err() == nil
		}()
		if completed && job.After != nil {
			job.After(life)
		}
	}()
	return run, nil
}

// conversation resolves the turn's conversation: the one the request continues, or a new one
// (stored later, with the first message) whose inputs are validated against the app's form.
func (e *Engine) conversation(ctx context.Context, app *apps.App, kind Kind, t *Turn) error {
	id := strings.TrimSpace(t.ConversationID)
	if kind.OneShot || kind.Workflow || id == "" {
		inputs := t.Request.Inputs
		if t.Trigger == nil {
			// A trigger's variables are the run's inputs as they are: the app has no form.
			var err error
			if inputs, err = app.ValidateInputs(t.Request.Inputs); err != nil {
				return err
			}
		} else if inputs == nil {
			inputs = map[string]any{}
		}
		raw, err := json.Marshal(inputs)
		if err != nil {
			return err
		}
		c := store.Conversation{
			ID: store.NewID(), AppID: app.ID, EndUserID: t.EndUser.ID, Name: DefaultConversationName,
			Inputs: raw, Status: store.ConversationStatusNormal,
		}
		if !kind.OneShot && !kind.Workflow {
			c.Introduction = app.OpeningStatement
		}
		t.Conversation, t.NewConversation, t.Inputs = c, true, inputs
		return nil
	}
	if _, err := uuid.Parse(id); err != nil {
		return ErrInvalidConversationID
	}
	c, err := e.store.Conversation(ctx, app.ID, t.EndUser.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrConversationNotFound
	}
	if err != nil {
		return err
	}
	if c.Status != store.ConversationStatusNormal {
		return ErrConversationEnded
	}
	// As in Dify, a conversation keeps the inputs it was started with.
	var inputs map[string]any
	if err := json.Unmarshal(c.Inputs, &inputs); err != nil {
		return fmt.Errorf("run: conversation inputs: %w", err)
	}
	t.Conversation, t.Inputs = c, inputs
	return nil
}

// execute runs the job's work and persists the outcome, whatever it is: completed, stopped, failed,
// or cut short by shutdown. It ends the stream with message_end or error.
func (e *Engine) execute(ctx context.Context, run *Run, work Work) {
	defer close(run.events)
	defer run.endTap()
	defer e.untrack(run)
	// status is how the run ended for its span and metrics, failure why it failed.
	status, failure := store.MessageStatusNormal, error(nil)
	defer func() { run.ended(status, failure) }()
	outcome, err := work.Run(ctx, &run.out)
	if run.spent != nil {
		run.spent(int64(outcome.Usage.TotalTokens))
	}
	if err == nil && outcome.Paused {
		// The run waits for human input: the stream ends after the job's pause events.
		e.savePaused(ctx, run)
		status = statusPaused
		return
	}
	answer := run.out.Answer()

	now := time.Now().UTC()
	for i := range outcome.Resources {
		outcome.Resources[i].ID = store.NewID()
		outcome.Resources[i].MessageID = run.MessageID
		outcome.Resources[i].CreatedAt = now
	}
	result := messageResult(answer, outcome)
	cause := context.Cause(ctx)
	switch {
	case err == nil:
	case errors.Is(cause, ErrStopped):
		// Stopped by the user: keep what was generated and end like a normal answer.
		result.Status, err = store.MessageStatusStopped, nil
	case errors.Is(cause, ErrShuttingDown):
		result.Status, result.Error = store.MessageStatusError, ErrShuttingDown.Error()
		err = ErrShuttingDown
	default:
		result.Status, result.Error = store.MessageStatusError, storedError(err)
	}
	// The write must happen even though the run's context may be cancelled.
	persistCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if perr := e.store.FinishMessage(persistCtx, run.MessageID, result); perr != nil {
		e.log.ErrorContext(ctx, "persist answer", "message_id", run.MessageID, "task_id", run.TaskID, "error", perr)
		if err == nil {
			err = perr
		}
	}
	status, failure = result.Status, err
	var reported *ReportedError
	if err != nil {
		e.log.WarnContext(ctx, "run failed", "message_id", run.MessageID, "task_id", run.TaskID, "error", err)
		run.tts.abort()
		if !errors.As(err, &reported) {
			run.emit(Event{Kind: EventError, Err: err})
		}
		return
	}
	if run.workflow {
		// A Workflow app's job sent its own closing workflow_finished.
		return
	}
	run.emit(Event{Kind: EventMessageEnd, End: &End{Usage: outcome.Usage, Resources: outcome.Resources, Files: outcome.Files,
		Uncited: outcome.Uncited, Annotation: outcome.Annotation, FinishReason: outcome.FinishReason}})
	for _, ev := range outcome.Trailer {
		run.emit(ev)
	}
	run.tts.finish(run)
}

// messageResult is a finished answer as stored: Dify's flat cost columns, and the metadata that
// message_end carried (usage and retriever resources) with the job's own members.
func messageResult(answer string, o Outcome) store.MessageResult {
	u := o.Usage
	rs := make([]ResourceJSON, len(o.Resources))
	for i, r := range o.Resources {
		rs[i] = resourceJSON(r)
	}
	meta := make(map[string]any, 2+len(o.Metadata))
	for k, v := range o.Metadata {
		meta[k] = v
	}
	meta["usage"] = u
	if !o.Uncited {
		meta["retriever_resources"] = rs
	}
	raw, _ := json.Marshal(meta)
	return store.MessageResult{
		RetrieverResources:      o.Resources,
		Answer:                  answer,
		Status:                  store.MessageStatusNormal,
		MessageTokens:           int64(u.PromptTokens),
		AnswerTokens:            int64(u.CompletionTokens),
		TotalTokens:             int64(u.TotalTokens),
		MessageUnitPrice:        u.PromptUnitPrice,
		AnswerUnitPrice:         u.CompletionUnitPrice,
		PriceUnit:               u.PromptPriceUnit,
		TotalPrice:              u.TotalPrice,
		Currency:                u.Currency,
		ProviderResponseLatency: u.Latency,
		Metadata:                raw,
	}
}

// ResourceJSON is a retriever resource as Dify's message metadata stores it.
type ResourceJSON struct {
	ID              string  `json:"id"`
	MessageID       string  `json:"message_id"`
	Position        int     `json:"position"`
	DatasetID       string  `json:"dataset_id"`
	DatasetName     string  `json:"dataset_name"`
	DocumentID      string  `json:"document_id"`
	DocumentName    string  `json:"document_name"`
	DataSourceType  string  `json:"data_source_type"`
	SegmentID       string  `json:"segment_id"`
	SegmentPosition int     `json:"segment_position"`
	IndexNodeHash   string  `json:"index_node_hash"`
	Content         string  `json:"content"`
	Summary         *string `json:"summary"`
	Score           float64 `json:"score"`
	HitCount        int     `json:"hit_count"`
	WordCount       int     `json:"word_count"`
	CreatedAt       int64   `json:"created_at"`
}

func resourceJSON(r store.RetrieverResource) ResourceJSON {
	return ResourceJSON{ID: r.ID, MessageID: r.MessageID, Position: r.Position, DatasetID: r.DatasetID,
		DatasetName: r.DatasetName, DocumentID: r.DocumentID, DocumentName: r.DocumentName,
		DataSourceType: r.DataSourceType, SegmentID: r.SegmentID, SegmentPosition: r.SegmentPosition,
		IndexNodeHash: r.IndexNodeHash, Content: r.Content, Score: r.Score, HitCount: r.HitCount,
		WordCount: r.WordCount, CreatedAt: r.CreatedAt.Unix()}
}

// ErrNoEnd: a run's events ended without the event that ends it.
var ErrNoEnd = errors.New("run: the events ended without the run's end")

// WaitWorkflow reads a workflow kind's run, for a caller that waits for its end (a blocking
// request, a workflow called as a tool): it returns workflow_started and the event that ended
// the run, workflow_finished or workflow_paused (the run detached then: it waits for a form).
// An error event is the error; ctx ending detaches the run and is the error.
func (r *Run) WaitWorkflow(ctx context.Context) (started, end Event, err error) {
	for {
		select {
		case <-ctx.Done():
			r.Detach()
			return started, Event{}, ctx.Err()
		case ev, ok := <-r.Events():
			if !ok {
				return started, Event{}, ErrNoEnd
			}
			switch ev.Kind {
			case EventWorkflowStarted:
				started = ev
			case EventError:
				return started, Event{}, ev.Err
			case EventWorkflowFinished, EventWorkflowPaused:
				r.Detach()
				return started, ev, nil
			}
		}
	}
}
