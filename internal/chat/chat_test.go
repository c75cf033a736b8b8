package chat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tasks"
)

// env is the run engine with the Chatbot runner over a real store, the real OpenAI-compatible
// client and a fake upstream speaking the OpenAI wire protocol over loopback.
type env struct {
	engine   *run.Engine
	svc      *Service
	store    *store.Store
	upstream *openaitest.Server
	tasks    *tasks.Local
	app      *apps.App // a Chatbot
	writer   *apps.App // a Completion app with a knowledge base
}

// envOptions are the options of the env's runner and engine, for newEnv's callers to change.
type envOptions struct {
	chat Options
	run  run.Options
}

const testConfig = `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - name: gpt-4o
        type: llm
        context_size: 4096
        max_output_tokens: 512
        pricing: {input: "2.50", output: "10.00", unit: "0.000001"}
apps:
  - name: bot
    mode: chat
    model: {provider: openai, name: gpt-4o, parameters: {temperature: 0.3}}
    pre_prompt: "You help {{name}}."
    opening_statement: Hi there!
    max_active_requests: 1
    user_input_form:
      - {type: text-input, variable: name, required: true}
  - name: writer
    mode: completion
    model: {provider: openai, name: gpt-4o}
    pre_prompt: "Write about {{topic}} for {{reader}}."
    opening_statement: Never shown for a completion.
    user_input_form:
      - {type: text-input, variable: topic, required: true}
      - {type: text-input, variable: reader}
    dataset_query_variable: topic
    knowledge_bases: [notes]
knowledge_bases:
  - name: notes
`

// newEnv builds the env; opts may change the options of the runner and the engine (store,
// models, providers and tasks are set already).
func newEnv(t *testing.T, e storetest.Engine, opts ...func(*envOptions)) *env {
	t.Helper()
	ctx := context.Background()
	up, file := openaitest.NewConfigured(t, testConfig)
	st := testdb.Open(t, e)
	synced, err := st.SyncApps(ctx, []store.AppSpec{{Name: "bot", Mode: "chat"}, {Name: "writer", Mode: "completion"}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := apps.NewRegistry(file.Apps, map[string]string{"bot": synced["bot"].ID, "writer": synced["writer"].ID}, func(n int) int { return n })
	if err != nil {
		t.Fatal(err)
	}
	app, _ := reg.ByID(synced["bot"].ID)
	writer, _ := reg.ByID(synced["writer"].ID)
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	tr := tasks.NewLocal()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	o := envOptions{
		chat: Options{Store: st, Models: catalog, Providers: registry.New(catalog.APIKey), Logger: log},
		run:  run.Options{Store: st, Limiter: limiter.NewLocal(), Tasks: tr, Logger: log},
	}
	for _, opt := range opts {
		opt(&o)
	}
	svc := New(o.chat)
	o.run.Kinds = map[string]run.Kind{
		config.AppModeChat:       {Runner: svc.Chatbot()},
		config.AppModeCompletion: {Runner: svc.Completion(), OneShot: true},
	}
	engine := run.New(o.run)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := engine.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return &env{engine: engine, svc: svc, store: st, upstream: up, tasks: tr, app: app, writer: writer}
}

// collect reads a run's events to the end, failing if that takes more than 20 s.
func collect(t *testing.T, rn *run.Run) []run.Event {
	t.Helper()
	var evs []run.Event
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-rn.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("run did not end; events so far: %+v", evs)
		}
	}
}

func wait(t *testing.T, rn *run.Run) {
	t.Helper()
	select {
	case <-rn.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("run did not finish")
	}
}

func answerOf(evs []run.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == run.EventMessage {
			b.WriteString(ev.Answer)
		}
	}
	return b.String()
}

func (e *env) send(t *testing.T, req run.Request) *run.Run {
	t.Helper()
	req.App = e.app
	if req.User == "" {
		req.User = "u1"
	}
	if req.Inputs == nil {
		req.Inputs = map[string]any{"name": "Ada"}
	}
	rn, err := e.engine.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

func (e *env) message(t *testing.T, rn *run.Run, user string) store.Message {
	t.Helper()
	app := e.app
	if rn.Mode == config.AppModeCompletion {
		app = e.writer
	}
	u, err := e.store.EndUser(context.Background(), app.ID, user)
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.store.Message(context.Background(), app.ID, u.ID, rn.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStreamPersistAndContinue(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		env.upstream.On("first question", openaitest.Reply{Chunks: []string{"Hello", ", ", "Ada."}, Usage: &providers.Usage{PromptTokens: 1033, CompletionTokens: 135}})
		rn := env.send(t, run.Request{Query: "first question", Streaming: true, AutoGenerateName: false})
		evs := collect(t, rn)
		if got := answerOf(evs); got != "Hello, Ada." {
			t.Fatalf("answer %q", got)
		}
		last := evs[len(evs)-1]
		if last.Kind != run.EventMessageEnd {
			t.Fatalf("last event %+v", last)
		}
		// Dify's worked example: 1033 × 2.50 × 0.000001 and 135 × 10.00 × 0.000001.
		if u := last.End.Usage; u.PromptPrice != "0.0025825" || u.CompletionPrice != "0.0013500" || u.TotalPrice != "0.0039325" || u.TotalTokens != 1168 {
			t.Fatalf("usage %+v", u)
		}
		wait(t, rn)
		m := env.message(t, rn, "u1")
		if m.Status != store.MessageStatusNormal || m.Answer != "Hello, Ada." || m.TotalPrice != "0.0039325" || m.AnswerTokens != 135 {
			t.Fatalf("stored %+v", m)
		}

		// The second message carries the first exchange, the rendered pre-prompt and the
		// opening statement; a conversation keeps its first inputs.
		run2 := env.send(t, run.Request{Query: "second question", ConversationID: rn.ConversationID, Inputs: map[string]any{"name": "Bob"}})
		collect(t, run2)
		reqs := env.upstream.Requests()
		got := reqs[len(reqs)-1].Messages
		want := []providers.Message{
			{Role: "system", Content: "You help Ada."},
			{Role: "assistant", Content: "Hi there!"},
			{Role: "user", Content: "first question"},
			{Role: "assistant", Content: "Hello, Ada."},
			{Role: "user", Content: "second question"},
		}
		if len(got) != len(want) {
			t.Fatalf("prompt %+v", got)
		}
		for i := range want {
			if got[i].Role != want[i].Role || got[i].Text() != want[i].Content {
				t.Fatalf("prompt[%d] = %s %q, want %s %q", i, got[i].Role, got[i].Text(), want[i].Role, want[i].Content)
			}
		}
		if p := reqs[len(reqs)-1]; !p.Stream || !p.IncludeUsage {
			t.Fatalf("upstream request not streamed with usage: %+v", p)
		}
	})
}

func TestRefusals(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		ctx := context.Background()
		for name, tc := range map[string]struct {
			req  run.Request
			want error
		}{
			"unknown conversation": {run.Request{ConversationID: "7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"}, run.ErrConversationNotFound},
			"malformed id":         {run.Request{ConversationID: "abc"}, run.ErrInvalidConversationID},
		} {
			tc.req.App, tc.req.User, tc.req.Query = env.app, "u1", "q"
			if _, err := env.engine.Start(ctx, tc.req); !errors.Is(err, tc.want) {
				t.Errorf("%s: err %v, want %v", name, err, tc.want)
			}
		}
		_, err := env.engine.Start(ctx, run.Request{App: env.app, User: "u1", Query: "q", Inputs: map[string]any{}})
		var ie *apps.InputError
		if !errors.As(err, &ie) || ie.Message != "name is required in input form" {
			t.Fatalf("missing input: %v", err)
		}
		// Another user's conversation does not exist for this one.
		rn := env.send(t, run.Request{Query: "mine"})
		wait(t, rn)
		if _, err := env.engine.Start(ctx, run.Request{App: env.app, User: "u2", Query: "q", ConversationID: rn.ConversationID}); !errors.Is(err, run.ErrConversationNotFound) {
			t.Fatalf("other user's conversation: %v", err)
		}
		// An ended conversation refuses new messages.
		if err := env.store.SetConversationStatus(ctx, env.app.ID, rn.ConversationID, store.ConversationStatusEnded); err != nil {
			t.Fatal(err)
		}
		if _, err := env.engine.Start(ctx, run.Request{App: env.app, User: "u1", Query: "q", ConversationID: rn.ConversationID}); !errors.Is(err, run.ErrConversationEnded) {
			t.Fatalf("ended conversation: %v", err)
		}
	})
}

func TestProviderFailuresArePersisted(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		for _, tc := range []struct {
			marker  string
			reply   openaitest.Reply
			kind    providers.Kind
			partial string
		}{
			{"bad key", openaitest.Reply{Status: 401}, providers.KindCredentials, ""},
			{"no quota", openaitest.Reply{Status: 429, ErrorCode: "insufficient_quota"}, providers.KindQuota, ""},
			{"upstream down", openaitest.Reply{Status: 500}, providers.KindInvocation, ""},
			{"cut mid-way", openaitest.Reply{Chunks: []string{"par", "tial", " answer"}, CutAfterChunks: 2}, providers.KindInvocation, "partial"},
			{"no done", openaitest.Reply{Chunks: []string{"cut", " off"}, NoDone: true}, providers.KindInvocation, "cut off"},
		} {
			t.Run(tc.marker, func(t *testing.T) {
				env.upstream.On(tc.marker, tc.reply)
				rn := env.send(t, run.Request{Query: tc.marker, Streaming: true})
				evs := collect(t, rn)
				last := evs[len(evs)-1]
				if last.Kind != run.EventError || providers.KindOf(last.Err) != tc.kind {
					t.Fatalf("last event %+v (kind %q), want error of kind %q", last, providers.KindOf(last.Err), tc.kind)
				}
				wait(t, rn)
				m := env.message(t, rn, "u1")
				if m.Status != store.MessageStatusError || m.Answer != tc.partial || m.Error == "" || m.Query != tc.marker {
					t.Fatalf("stored %+v", m)
				}
			})
		}
	})
}

func TestStopKeepsPartialAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		env.upstream.On("long story", openaitest.Reply{Chunks: []string{"Once", " upon", " a", " time"}, HangAfterChunks: 2})
		rn := env.send(t, run.Request{Query: "long story", User: "owner", Streaming: true})
		// Both chunks the upstream sends before it hangs have arrived.
		for i := range 2 {
			if ev := <-rn.Events(); ev.Kind != run.EventMessage {
				t.Fatalf("event %d: %+v", i+1, ev)
			}
		}
		// Someone else's stop is ignored, as in Dify; the owner's stops the rn.
		_ = env.tasks.Stop(context.Background(), rn.TaskID, env.app.ID, "intruder")
		_ = env.tasks.Stop(context.Background(), rn.TaskID, env.app.ID, "owner")
		evs := collect(t, rn)
		if last := evs[len(evs)-1]; last.Kind != run.EventMessageEnd {
			t.Fatalf("stopped rn ended with %+v", last)
		}
		wait(t, rn)
		m := env.message(t, rn, "owner")
		if m.Status != store.MessageStatusStopped || m.Answer != "Once upon" {
			t.Fatalf("stored %+v", m)
		}
	})
}

// TestDetachedRunFinishes: a client that goes away leaves the rn to finish and be stored, and
// nothing it started is left behind. The engines rn one after the other here, not in
// parallel, so the goroutine count is this test's own.
func TestDetachedRunFinishes(t *testing.T) {
	for _, name := range []string{storetest.SQLite, storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t, storetest.NewEngine(t, name))
			env.upstream.On("walk away", openaitest.Reply{Chunks: []string{"a", "b", "c", "d"}, ChunkDelay: 5 * time.Millisecond})
			detached := func() {
				rn := env.send(t, run.Request{Query: "walk away", Streaming: true})
				<-rn.Events()
				rn.Detach()
				wait(t, rn)
				if m := env.message(t, rn, "u1"); m.Status != store.MessageStatusNormal || m.Answer != "abcd" {
					t.Fatalf("stored %+v", m)
				}
			}
			detached() // warm up: database pool, upstream keep-alive connection, tokenizer
			baseline := runtime.NumGoroutine()
			for range 5 {
				detached()
			}
			deadline := time.Now().Add(10 * time.Second)
			for runtime.NumGoroutine() > baseline {
				if time.Now().After(deadline) {
					t.Fatalf("goroutines: %d after warm-up, %d after 5 more detached runs", baseline, runtime.NumGoroutine())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestConcurrencyCapAndRelease(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		env.upstream.On("hold the slot", openaitest.Reply{Chunks: []string{"x", "y"}, HangAfterChunks: 1})
		rn := env.send(t, run.Request{Query: "hold the slot", User: "a", Streaming: true})
		<-rn.Events()
		_, err := env.engine.Start(context.Background(), run.Request{App: env.app, User: "b", Query: "q", Inputs: map[string]any{"name": "B"}, Streaming: true})
		var le *run.LimitError
		if !errors.As(err, &le) || le.Limit != 1 {
			t.Fatalf("second rn: %v", err)
		}
		_ = env.tasks.Stop(context.Background(), rn.TaskID, env.app.ID, "a")
		collect(t, rn)
		wait(t, rn)
		// The slot is free again however the rn ended.
		run2 := env.send(t, run.Request{Query: "after", User: "b"})
		collect(t, run2)
	})
}

func TestConversationNamedAfterFirstExchange(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		// The title request carries the naming instruction and then the user's message, so its
		// rule goes first (the fake answers with the first rule that matches).
		env.upstream.On("You name conversations", openaitest.Reply{Text: "\"Tides explained.\"\n"})
		env.upstream.On("how do tides work", openaitest.Reply{Text: "Gravity."})
		rn := env.send(t, run.Request{Query: "how do tides work", AutoGenerateName: true})
		collect(t, rn)
		wait(t, rn)
		u, _ := env.store.EndUser(context.Background(), env.app.ID, "u1")
		c, err := env.store.Conversation(context.Background(), env.app.ID, u.ID, rn.ConversationID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != "Tides explained" {
			t.Fatalf("name %q", c.Name)
		}
		// With auto_generate_name false the default name stays.
		run2 := env.send(t, run.Request{Query: "how do tides work", AutoGenerateName: false})
		collect(t, run2)
		wait(t, run2)
		c2, _ := env.store.Conversation(context.Background(), env.app.ID, u.ID, run2.ConversationID)
		if c2.Name != run.DefaultConversationName {
			t.Fatalf("name %q", c2.Name)
		}
	})
}

func TestShutdownEndsRuns(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e)
		env.upstream.On("never ends", openaitest.Reply{Chunks: []string{"so", " far"}, HangAfterChunks: 1})
		rn := env.send(t, run.Request{Query: "never ends", Streaming: true})
		<-rn.Events()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := env.engine.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		evs := collect(t, rn)
		if last := evs[len(evs)-1]; last.Kind != run.EventError || !errors.Is(last.Err, run.ErrShuttingDown) {
			t.Fatalf("last event %+v", last)
		}
		if m := env.message(t, rn, "u1"); m.Status != store.MessageStatusError || m.Answer != "so" {
			t.Fatalf("stored %+v", m)
		}
		if _, err := env.engine.Start(context.Background(), run.Request{App: env.app, User: "u1", Query: "late", Inputs: map[string]any{"name": "x"}}); !errors.Is(err, run.ErrShuttingDown) {
			t.Fatalf("send after shutdown: %v", err)
		}
	})
}

// TestConversationNamedByDurableJob: with a job queue, naming a new conversation is a durable
// job. Queued by a process whose workers never run (it died after the answer), it is run by
// another pool on the same database, which names the conversation.
func TestConversationNamedByDurableJob(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := context.Background()
		var lookup func(ctx context.Context, id string) (*apps.App, error)
		env := newEnv(t, e, func(o *envOptions) {
			q := jobs.NewDurable(jobs.DurableOptions{Store: o.chat.Store.(*store.Store)})
			q.Handle(NameJobKind, func(context.Context, jobs.Job) error { return errors.New("never runs") })
			o.chat.Jobs = q // never started
			o.chat.App = func(ctx context.Context, id string) (*apps.App, error) { return lookup(ctx, id) }
		})
		lookup = func(_ context.Context, id string) (*apps.App, error) {
			if id == env.app.ID {
				return env.app, nil
			}
			return nil, errors.New("no such app")
		}
		env.upstream.On("You name conversations", openaitest.Reply{Text: "Tides explained"})
		env.upstream.On("how do the tides turn", openaitest.Reply{Text: "Gravity."})
		rn := env.send(t, run.Request{Query: "how do the tides turn", AutoGenerateName: true})
		collect(t, rn)
		wait(t, rn)
		u, _ := env.store.EndUser(ctx, env.app.ID, "u1")
		if c, err := env.store.Conversation(ctx, env.app.ID, u.ID, rn.ConversationID); err != nil || c.Name != run.DefaultConversationName {
			t.Fatalf("named before the job ran: %q %v", c.Name, err)
		}
		other := jobs.NewDurable(jobs.DurableOptions{Store: env.store, Poll: 10 * time.Millisecond})
		done := make(chan error, 1)
		other.Handle(NameJobKind, func(ctx context.Context, j jobs.Job) error {
			err := env.svc.HandleNameJob(ctx, j)
			done <- err
			return err
		})
		if err := other.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Stop(ctx) }()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		c, err := env.store.Conversation(ctx, env.app.ID, u.ID, rn.ConversationID)
		if err != nil || c.Name != "Tides explained" {
			t.Fatalf("name %q %v", c.Name, err)
		}
	})
}
