// Package chat answers Chatbot and Completion apps: it builds the prompt from the app's config
// (and, for a Chatbot, the conversation's history), calls the app's model, and streams its
// answer. It plugs into the run engine (internal/run) as the runner of those modes; the engine
// admits a message, stores it and its outcome, and delivers the events.
package chat

import (
	"context"
	"log/slog"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
)

// Store is what the Chatbot runner needs from storage; *store.Store implements it.
type Store interface {
	RecentMessages(ctx context.Context, conversationID string, n int) ([]store.Message, error)
	NameConversation(ctx context.Context, appID, endUserID, id, name string) error
}

// Knowledge retrieves the context of a message from knowledge bases; *knowledge.Service
// implements it.
type Knowledge interface {
	RetrieveForChat(ctx context.Context, names []string, query string) (knowledge.ChatContext, error)
}

// Options configure a Service.
type Options struct {
	Store     Store
	Models    llm.Catalog
	Providers llm.Clients
	// Files resolves message files; without it, uploaded files cannot be referenced.
	Files  Files
	Logger *slog.Logger
	// HistoryMessages bounds how many earlier exchanges are considered for the prompt before
	// trimming to the model's context (default 50).
	HistoryMessages int
	// Knowledge retrieves context from the knowledge bases an app names; without it such
	// apps answer without context.
	Knowledge Knowledge
	// Jobs, with App, queues the naming of new conversations as durable jobs (NameJobKind,
	// handled by HandleNameJob), so that a name is generated even if this process dies right
	// after the answer. Without them, the name is generated in this process after the answer.
	Jobs jobs.Queue
	// App returns an app by id (the registry's lookup), for naming jobs.
	App func(ctx context.Context, id string) (*apps.App, error)
}

// Service answers Chatbot and Completion apps (Chatbot and Completion return their runners) and
// does the model work around conversations: titles and follow-up suggestions.
type Service struct {
	store     Store
	models    llm.Catalog
	providers llm.Clients
	files     Files
	log       *slog.Logger
	history   int
	knowledge Knowledge
	jobs      jobs.Queue
	app       func(ctx context.Context, id string) (*apps.App, error)
}

// New returns a Service.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HistoryMessages <= 0 {
		o.HistoryMessages = 50
	}
	return &Service{store: o.Store, models: o.Models, providers: o.Providers, files: o.Files,
		log: o.Logger, history: o.HistoryMessages, knowledge: o.Knowledge, jobs: o.Jobs, app: o.App}
}

// Chatbot is the runner of Chatbot apps (mode chat).
func (s *Service) Chatbot() run.Runner { return chatbot{s} }

type chatbot struct{ s *Service }

// Prepare implements run.Runner: the app's model, the message's files and as much of the
// conversation's history as fits the model's context.
func (c chatbot) Prepare(ctx context.Context, t run.Turn) (run.Job, error) {
	s, app := c.s, t.App
	a, err := s.prepare(ctx, t)
	if err != nil {
		return run.Job{}, err
	}
	spec := a.m.Spec
	history, err := t.Prior(ctx, s.history, s.store.RecentMessages)
	if err != nil {
		return run.Job{}, err
	}
	if app.PromptType == apps.PromptAdvanced {
		if a.advanced, err = advancedChatbot(app, spec, t.Inputs, history, t.NewConversation, t.Query); err != nil {
			return run.Job{}, err
		}
	} else {
		a.prompt = buildPrompt(app, spec, t.Inputs, history, t.Query)
	}
	if s.knowledge != nil && len(app.KnowledgeBases) > 0 {
		a.retrieve = s.retriever(app, t.Query)
	}
	job := a.job()
	if t.NewConversation && t.AutoGenerateName {
		endUser, conv, query, m := t.EndUser.ID, t.Conversation.ID, t.Query, a.m
		job.After = func(ctx context.Context) { s.generateName(ctx, app, endUser, conv, m, query) }
	}
	return job, nil
}

// prepare resolves what every runner of this package needs before its prompt: the app's model,
// its provider's client and the message's files.
func (s *Service) prepare(ctx context.Context, t run.Turn) (*answer, error) {
	m, err := s.model(t.App)
	if err != nil {
		return nil, err
	}
	atts, err := s.resolveFiles(ctx, t.App.ID, t.EndUser.ID, t.Files)
	if err != nil {
		return nil, err
	}
	return &answer{s: s, m: m, params: llm.Params(t.App.Model.Parameters, m.Spec), atts: atts,
		cite: t.App.Features.RetrieverResource.Enabled}, nil
}

// job is the run job that produces a.
func (a *answer) job() run.Job {
	return run.Job{Provider: a.m.Spec.Provider, Model: a.m.Spec.Name, Files: messageFiles(a.atts), Work: a}
}

// model looks up the app's model and its provider's client.
func (s *Service) model(app *apps.App) (llm.Model, error) {
	return llm.Resolve(s.models, s.providers, app.Model.Provider, app.Model.Name)
}

// retriever retrieves the knowledge context of query from the app's knowledge bases.
func (s *Service) retriever(app *apps.App, query string) func(context.Context) (knowledge.ChatContext, error) {
	return func(ctx context.Context) (knowledge.ChatContext, error) {
		return s.knowledge.RetrieveForChat(ctx, app.KnowledgeBases, query)
	}
}

// answer is one call of the app's model whose answer streams as message events; it is the
// run.Work of both kinds.
type answer struct {
	s *Service
	m llm.Model
	// params are the upstream parameters (llm.Params).
	params map[string]any
	atts   []attachment
	// prompt is a Chatbot's simple prompt, to which the knowledge context is added; completion,
	// when its app is set, builds a Completion's simple prompt around the knowledge context
	// instead; advanced, when set, is an advanced prompt of either kind.
	prompt     []providers.Message
	completion completionInput
	advanced   *advancedPrompt
	// retrieve, if set, retrieves the knowledge context first.
	retrieve func(context.Context) (knowledge.ChatContext, error)
	// cite returns the chunks retrieved as the answer's retriever resources (the app's
	// citations feature); without it they are used for the prompt only, as in Dify.
	cite bool
}

// messages are the messages sent to the model, with the knowledge context (if any) put where
// the app kind puts it.
func (a *answer) messages(kctx knowledge.ChatContext) []providers.Message {
	if a.advanced != nil {
		return a.advanced.messages(kctx.Text)
	}
	if c := a.completion; c.app != nil {
		return completionPrompt(c.app, c.inputs, c.query, kctx.Prompt)
	}
	return withContext(a.prompt, kctx.Prompt)
}

// Run implements run.Work: it streams the model's answer to out; the outcome carries the usage
// (also of a partial answer) and the knowledge chunks used.
func (a *answer) Run(ctx context.Context, out *run.Output) (run.Outcome, error) {
	var kctx knowledge.ChatContext
	prompt, err := a.build(ctx, &kctx)
	var res llm.Result
	if err == nil {
		res, err = a.m.Stream(ctx, llm.Request{Messages: prompt, Params: a.params, OnDelta: func(d string) {
			out.Emit(run.Event{Kind: run.EventMessage, Answer: d})
		}})
	} else {
		// The call never started: its usage is the prompt's tokens.
		res.Usage = models.ComputeUsage(a.m.Spec.Pricing, tokens.CountMessages(prompt), 0, 0)
	}
	outcome := run.Outcome{Usage: res.Usage, FinishReason: res.FinishReason}
	if a.cite {
		outcome.Resources = kctx.Resources
	}
	return outcome, err
}

// build retrieves the knowledge context, if the app has one, into kctx and builds the prompt
// with it and the message's images. When retrieval fails, the prompt is built without it.
func (a *answer) build(ctx context.Context, kctx *knowledge.ChatContext) ([]providers.Message, error) {
	if a.retrieve != nil {
		var err error
		if *kctx, err = a.retrieve(ctx); err != nil {
			return a.messages(knowledge.ChatContext{}), err
		}
	}
	prompt := a.messages(*kctx)
	images, err := a.s.imageParts(ctx, a.m.Spec, a.atts)
	if err != nil || len(images) == 0 {
		return prompt, err
	}
	return llm.WithImages(prompt, images), nil
}
