// Package chat runs chat apps: it accepts a message, builds the prompt from the app's config and
// the conversation's history, calls the app's model, and delivers the answer as events while
// persisting it. A run outlives its HTTP request: a client that goes away does not stop it; the
// stop operation and server shutdown do.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/tokens"
)

// Errors a request can be refused with before it is accepted.
var (
	// ErrConversationNotFound: no such conversation for this app and end user.
	ErrConversationNotFound = errors.New("conversation not found")
	// ErrConversationEnded: the conversation has ended; a new one must be started.
	ErrConversationEnded = errors.New("conversation has ended")
	// ErrInvalidConversationID: the conversation id is not a UUID.
	ErrInvalidConversationID = errors.New("conversation_id must be a valid UUID")
	// ErrStreamingOnly: the app answers in streaming mode only.
	ErrStreamingOnly = errors.New("app supports streaming mode only")
	// ErrModeNotSupported: the app's mode has no runtime in this server yet.
	ErrModeNotSupported = errors.New("app mode not supported")
	// ErrShuttingDown: the server is stopping and accepts no new runs.
	ErrShuttingDown = errors.New("server is shutting down")
)

// LimitError is the per-app concurrency cap refusing a request.
type LimitError struct {
	AppID string
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("too many concurrent requests for app %s (limit %d)", e.AppID, e.Limit)
}

// ErrStopped ends a run stopped through the stop operation.
var ErrStopped = tasks.ErrStopped

// DefaultConversationName is the name of a conversation until one is generated or set.
const DefaultConversationName = "New conversation"

// Store is what the runtime needs from storage; *store.Store implements it.
type Store interface {
	EndUser(ctx context.Context, appID, sessionID string) (store.EndUser, error)
	Conversation(ctx context.Context, appID, endUserID, id string) (store.Conversation, error)
	StartConversation(ctx context.Context, c store.Conversation, m store.Message, files ...store.MessageFile) (store.Conversation, store.Message, error)
	RenameConversation(ctx context.Context, appID, endUserID, id, name string) (store.Conversation, error)
	CreateMessage(ctx context.Context, m store.Message, files ...store.MessageFile) (store.Message, error)
	FinishMessage(ctx context.Context, id string, r store.MessageResult) error
	RecentMessages(ctx context.Context, conversationID string, n int) ([]store.Message, error)
	SaveMessageProgress(ctx context.Context, at time.Time, ps []store.MessageProgress) error
	EndStaleMessages(ctx context.Context, before time.Time, errText string) (int64, error)
}

// Models finds an app's model; *models.Catalog implements it.
type Models interface {
	Lookup(t models.Type, provider, name string) (models.ModelSpec, error)
}

// Providers gives the client for a model's provider.
type Providers interface {
	ChatModel(spec models.ModelSpec) (providers.ChatModel, error)
}

// Options configure a Service.
type Options struct {
	Store     Store
	Models    Models
	Providers Providers
	Limiter   limiter.Limiter
	Tasks     tasks.Registry
	// Files resolves message files; without it, uploaded files cannot be referenced.
	Files  Files
	Logger *slog.Logger
	// HistoryMessages bounds how many earlier exchanges are considered for the prompt before
	// trimming to the model's context (default 50).
	HistoryMessages int
	// EventBuffer is how many events a run may get ahead of a slow client (default 16).
	EventBuffer int
	// Knowledge retrieves context from the knowledge bases an app names; without it such
	// apps answer without context.
	Knowledge Knowledge
	// ProgressInterval is how often, at most, a run's answer so far is written while it
	// streams (default DefaultProgressInterval).
	ProgressInterval time.Duration
	// StaleAfter is how old the heartbeat of a running message may grow before the message is
	// taken as interrupted by a dead process (default DefaultStaleAfter). This process
	// refreshes the heartbeat of its own runs every StaleAfter/4 and ends stale ones every
	// StaleAfter/2.
	StaleAfter time.Duration
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

// InterruptedError is the error of a message whose run was interrupted by the end of its
// process (a crash, a kill) before the answer was complete; the answer stored so far is kept.
const InterruptedError = "The server stopped before the answer was complete."

// Knowledge retrieves the context of a message from knowledge bases; *knowledge.Service
// implements it.
type Knowledge interface {
	RetrieveForChat(ctx context.Context, names []string, query string) (knowledge.ChatContext, error)
}

// Service runs chat apps.
type Service struct {
	store     Store
	models    Models
	providers Providers
	limiter   limiter.Limiter
	tasks     tasks.Registry
	files     Files
	log       *slog.Logger
	history   int
	buffer    int
	knowledge Knowledge

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

// New returns a Service. Call Shutdown to end it.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HistoryMessages <= 0 {
		o.HistoryMessages = 50
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
	life, stop := context.WithCancelCause(context.Background())
	s := &Service{
		store: o.Store, models: o.Models, providers: o.Providers, limiter: o.Limiter, tasks: o.Tasks, files: o.Files,
		log: o.Logger, history: o.HistoryMessages, buffer: o.EventBuffer, knowledge: o.Knowledge,
		interval: o.ProgressInterval, staleAfter: o.StaleAfter, live: map[string]*Run{},
		life: life, stopLife: func() { stop(ErrShuttingDown) },
	}
	s.wg.Add(1)
	go s.keepRuns()
	return s
}

// Shutdown ends every run still going (each delivers an error event and persists what it has)
// and waits, until ctx ends, for runs and background work such as title generation to finish.
func (s *Service) Shutdown(ctx context.Context) error {
	s.stopLife()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("chat: shutdown: %w", ctx.Err())
	}
}

// File is a file attached to a message.
type File struct {
	Type           string
	TransferMethod string
	URL            string
	UploadFileID   string
}

// Request is one message sent to a chat app.
type Request struct {
	App              *apps.App
	User             string
	Query            string
	Inputs           map[string]any
	ConversationID   string
	Files            []File
	AutoGenerateName bool
	Streaming        bool
}

// EventKind says what an Event carries.
type EventKind int

// Event kinds, in the order a run may produce them.
const (
	// EventMessage is an answer chunk (Answer).
	EventMessage EventKind = iota + 1
	// EventMessageEnd is the end of a successful (or stopped) answer (Usage).
	EventMessageEnd
	// EventError ends a failed run (Err).
	EventError
)

// Event is one step of a run. It is small on purpose: every open stream buffers some.
type Event struct {
	Kind   EventKind
	Answer string
	// Usage is set on EventMessageEnd.
	Usage *models.Usage
	// Resources are the knowledge chunks the answer used, on EventMessageEnd.
	Resources []store.RetrieverResource
	Err       error
}

// Run is an accepted message being answered.
type Run struct {
	TaskID         string
	MessageID      string
	ConversationID string
	CreatedAt      time.Time
	Mode           string

	events   chan Event
	detached chan struct{}
	finished chan struct{}
	once     sync.Once

	// answer is written by the run goroutine only, under mu; keepRuns reads it under mu.
	mu     sync.Mutex
	answer strings.Builder
	// saved (bytes of the answer stored), answerAt (when they were) and beatAt (the last write
	// of the message, its heartbeat) belong to keepRuns.
	saved            int
	answerAt, beatAt time.Time
}

// Events delivers the run's events; it is closed after the last one (message_end or error).
func (r *Run) Events() <-chan Event { return r.events }

// Done is closed when the run has finished all its work: the answer is persisted and, for a new
// conversation, its name generated.
func (r *Run) Done() <-chan struct{} { return r.finished }

// Detach tells the run that nobody reads its events any more (the client went away): it goes on
// to the end and persists its answer, dropping events instead of waiting.
func (r *Run) Detach() { r.once.Do(func() { close(r.detached) }) }

func (r *Run) emit(ev Event) {
	select {
	case r.events <- ev:
	case <-r.detached:
	}
}

// Send accepts a message and starts answering it. Errors returned here refuse the request
// before anything was stored or streamed; failures after acceptance arrive as an EventError.
func (s *Service) Send(ctx context.Context, req Request) (*Run, error) {
	app := req.App
	if s.life.Err() != nil {
		return nil, ErrShuttingDown
	}
	if app.StreamingOnly() && !req.Streaming {
		return nil, ErrStreamingOnly
	}
	if app.Mode != "chat" {
		return nil, fmt.Errorf("%w: %s", ErrModeNotSupported, app.Mode)
	}
	spec, err := s.models.Lookup(models.TypeLLM, app.Model.Provider, app.Model.Name)
	if err != nil {
		return nil, err
	}
	model, err := s.providers.ChatModel(spec)
	if err != nil {
		return nil, err
	}
	release, err := s.limiter.Acquire(ctx, app.ID, app.MaxActiveRequests)
	if err != nil {
		if errors.Is(err, limiter.ErrLimitExceeded) {
			return nil, &LimitError{AppID: app.ID, Limit: app.MaxActiveRequests}
		}
		return nil, err
	}
	accepted := false
	defer func() {
		if !accepted {
			release()
		}
	}()

	user, err := s.store.EndUser(ctx, app.ID, req.User)
	if err != nil {
		return nil, err
	}
	conv, isNew, err := s.conversation(ctx, app, user, req)
	if err != nil {
		return nil, err
	}
	atts, err := s.resolveFiles(ctx, app.ID, user.ID, req.Files)
	if err != nil {
		return nil, err
	}
	var inputs map[string]any
	if err := json.Unmarshal(conv.Inputs, &inputs); err != nil {
		return nil, fmt.Errorf("chat: conversation inputs: %w", err)
	}
	var history []store.Message
	if !isNew {
		if history, err = s.store.RecentMessages(ctx, conv.ID, s.history); err != nil {
			return nil, err
		}
	}
	prompt := buildPrompt(app, spec, inputs, history, req.Query)

	msg := store.Message{
		AppID: app.ID, ConversationID: conv.ID, EndUserID: user.ID,
		Query: req.Query, Inputs: conv.Inputs, Status: store.MessageStatusRunning,
		ModelProvider: spec.Provider, ModelID: spec.Name, TaskID: uuid.NewString(),
	}
	// The message, its files and, for a new conversation, the conversation are stored in one
	// commit: no failure or crash leaves one without the others.
	files := messageFiles(atts)
	if isNew {
		conv, msg, err = s.store.StartConversation(ctx, conv, msg, files...)
	} else {
		msg, err = s.store.CreateMessage(ctx, msg, files...)
	}
	if err != nil {
		return nil, err
	}
	run := &Run{
		TaskID: msg.TaskID, MessageID: msg.ID, ConversationID: conv.ID, CreatedAt: msg.CreatedAt,
		Mode: app.Mode, events: make(chan Event, s.buffer), detached: make(chan struct{}), finished: make(chan struct{}),
	}
	run.answerAt = time.Now()
	run.beatAt = run.answerAt
	s.track(run)
	runCtx, done := s.tasks.Register(s.life, tasks.Task{ID: run.TaskID, AppID: app.ID, User: req.User})
	accepted = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(run.finished)
		completed := false
		func() {
			// The concurrency slot and the stop handle end with the answer, not with the
			// background work after it (done also cancels runCtx).
			defer release()
			defer done()
			var retrieve func(context.Context) (knowledge.ChatContext, error)
			if s.knowledge != nil && len(app.KnowledgeBases) > 0 {
				retrieve = func(ctx context.Context) (knowledge.ChatContext, error) {
					return s.knowledge.RetrieveForChat(ctx, app.KnowledgeBases, req.Query)
				}
			}
			s.answer(runCtx, run, model, spec, completionParams(app, spec), prompt, atts, retrieve)
			completed = runCtx.Err() == nil
		}()
		if isNew && req.AutoGenerateName && completed {
			s.generateName(app, user.ID, conv.ID, spec, model, req.Query)
		}
	}()
	return run, nil
}

// conversation loads the request's conversation or, when it names none, prepares a new one
// (stored later, with the first message).
func (s *Service) conversation(ctx context.Context, app *apps.App, user store.EndUser, req Request) (store.Conversation, bool, error) {
	id := strings.TrimSpace(req.ConversationID)
	if id == "" {
		inputs, err := app.ValidateInputs(req.Inputs)
		if err != nil {
			return store.Conversation{}, false, err
		}
		raw, err := json.Marshal(inputs)
		if err != nil {
			return store.Conversation{}, false, err
		}
		return store.Conversation{
			ID: store.NewID(), AppID: app.ID, EndUserID: user.ID, Name: DefaultConversationName,
			Inputs: raw, Status: store.ConversationStatusNormal, Introduction: app.OpeningStatement,
		}, true, nil
	}
	if _, err := uuid.Parse(id); err != nil {
		return store.Conversation{}, false, ErrInvalidConversationID
	}
	c, err := s.store.Conversation(ctx, app.ID, user.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, false, ErrConversationNotFound
	}
	if err != nil {
		return store.Conversation{}, false, err
	}
	if c.Status != store.ConversationStatusNormal {
		return store.Conversation{}, false, ErrConversationEnded
	}
	// As in Dify, a conversation keeps the inputs it was started with.
	return c, false, nil
}

// answer streams the model's answer to the run's events and persists the outcome, whatever
// it is: completed, stopped, failed, or cut short by shutdown.
func (s *Service) answer(ctx context.Context, run *Run, model providers.ChatModel, spec models.ModelSpec, params map[string]any, prompt []providers.Message, atts []attachment,
	retrieve func(context.Context) (knowledge.ChatContext, error)) {
	defer close(run.events)
	defer s.untrack(run)
	started := time.Now()
	var reported *providers.Usage
	var kctx knowledge.ChatContext
	err := func() error {
		if retrieve != nil {
			var err error
			if kctx, err = retrieve(ctx); err != nil {
				return err
			}
			prompt = withContext(prompt, kctx.Prompt)
		}
		images, err := s.imageParts(ctx, spec, atts)
		if err != nil {
			return err
		}
		if len(images) > 0 {
			last := &prompt[len(prompt)-1]
			last.Parts = append([]providers.Part{{Type: providers.PartText, Text: last.Content}}, images...)
		}
		creq := providers.ChatRequest{Model: spec.Name, Messages: prompt, Parameters: params}
		stream, err := model.ChatStream(ctx, creq)
		if err != nil {
			return err
		}
		defer stream.Close()
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if chunk.Usage != nil {
				reported = chunk.Usage
			}
			if chunk.Delta != "" {
				run.mu.Lock()
				run.answer.WriteString(chunk.Delta)
				run.mu.Unlock()
				run.emit(Event{Kind: EventMessage, Answer: chunk.Delta})
			}
		}
	}()
	answer := run.answer.String()
	u := providers.Usage{}
	if reported != nil {
		u = *reported
	} else {
		u = providers.Usage{PromptTokens: tokens.CountMessages(prompt), CompletionTokens: tokens.Count(answer)}
	}
	usage := models.ComputeUsage(spec.Pricing, u.PromptTokens, u.CompletionTokens, time.Since(started))

	now := time.Now().UTC()
	for i := range kctx.Resources {
		kctx.Resources[i].ID = store.NewID()
		kctx.Resources[i].MessageID = run.MessageID
		kctx.Resources[i].CreatedAt = now
	}
	result := messageResult(answer, usage, kctx.Resources)
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
	if perr := s.store.FinishMessage(persistCtx, run.MessageID, result); perr != nil {
		s.log.Error("persist answer", "message_id", run.MessageID, "task_id", run.TaskID, "error", perr)
		if err == nil {
			err = perr
		}
	}
	if err != nil {
		s.log.Warn("run failed", "message_id", run.MessageID, "task_id", run.TaskID, "error", err)
		run.emit(Event{Kind: EventError, Err: err})
		return
	}
	run.emit(Event{Kind: EventMessageEnd, Usage: &usage, Resources: kctx.Resources})
}

// storedError is the error text kept with a failed answer, which its history shows: what the
// stream's error event told the client, never the internal cause (addresses, SQL), which the
// run's log line keeps.
func storedError(err error) string {
	var perr *providers.Error
	var kerr *knowledge.Error
	switch {
	case errors.As(err, &perr):
		return perr.Message
	case errors.As(err, &kerr):
		return kerr.Message
	}
	if msg, ok := files.RemoteErrorMessage(err); ok {
		return msg
	}
	return "Internal Server Error."
}

// messageResult is a finished answer as stored: Dify's flat cost columns, and the metadata that
// message_end carried (usage and retriever resources).
func messageResult(answer string, u models.Usage, resources []store.RetrieverResource) store.MessageResult {
	rs := make([]ResourceJSON, len(resources))
	for i, r := range resources {
		rs[i] = resourceJSON(r)
	}
	meta, _ := json.Marshal(map[string]any{"usage": u, "retriever_resources": rs})
	return store.MessageResult{
		RetrieverResources:      resources,
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
		Metadata:                meta,
	}
}
