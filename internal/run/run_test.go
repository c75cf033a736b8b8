package run

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tasks"
)

// scripted is a runner whose jobs do what the test tells them, step by step: the engine is what
// these tests exercise, with a real store under it.
type scripted struct {
	// steps feeds every job this runner prepares: an event to emit, or the end of the job.
	steps chan step
	// refuse, if set, is returned by Prepare.
	refuse error
	// prepared and after count the jobs prepared and the After calls.
	prepared, after atomic.Int32
}

type step struct {
	ev      *Event
	deliver bool
	// end ends the job with outcome and err.
	end     bool
	outcome Outcome
	err     error
}

func (s *scripted) Prepare(_ context.Context, t Turn) (Job, error) {
	if s.refuse != nil {
		return Job{}, s.refuse
	}
	s.prepared.Add(1)
	return Job{
		Provider: "openai", Model: "gpt-test",
		Work: WorkFunc(func(ctx context.Context, out *Output) (Outcome, error) {
			for {
				select {
				case <-ctx.Done():
					return Outcome{}, context.Cause(ctx)
				case st := <-s.steps:
					switch {
					case st.end:
						return st.outcome, st.err
					case st.deliver:
						out.Deliver(*st.ev)
					default:
						out.Emit(*st.ev)
					}
				}
			}
		}),
		After: func(context.Context) { s.after.Add(1) },
	}, nil
}

type engineEnv struct {
	engine *Engine
	store  *store.Store
	tasks  *tasks.Local
	chat   *apps.App // mode chat, scripted
	oneOff *apps.App // mode completion, scripted and one-shot
	agent  *apps.App // mode agent-chat: streaming only, no runner
	flow   *apps.App // mode workflow, scripted, Kind.Workflow
	runner *scripted
}

func newEngineEnv(t testing.TB, e storetest.Engine, opts ...func(*Options)) *engineEnv {
	t.Helper()
	ctx := context.Background()
	st := testdb.Open(t, e)
	synced, err := st.SyncApps(ctx, []store.AppSpec{{Name: "bot", Mode: "chat"}, {Name: "writer", Mode: "completion"}, {Name: "agent", Mode: "agent-chat"},
		{Name: "flow", Mode: "workflow"}})
	if err != nil {
		t.Fatal(err)
	}
	form := []config.InputField{{Type: config.InputText, Variable: "topic", Required: true}}
	mk := func(name, mode string) *apps.App {
		a := apps.FromConfig(config.App{Name: name, Mode: mode, Enabled: true, UserInputForm: form, OpeningStatement: "Hi"})
		a.ID, a.MaxActiveRequests = synced[name].ID, 1
		return a
	}
	tr := tasks.NewLocal()
	r := &scripted{steps: make(chan step)}
	o := Options{
		Store: st, Limiter: limiter.NewLocal(), Tasks: tr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Kinds: map[string]Kind{config.AppModeChat: {Runner: r}, config.AppModeCompletion: {Runner: r, OneShot: true},
			apps.ModeWorkflow: {Runner: r, Workflow: true}},
	}
	for _, opt := range opts {
		opt(&o)
	}
	eng := New(o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := eng.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return &engineEnv{engine: eng, store: st, tasks: tr, chat: mk("bot", "chat"), oneOff: mk("writer", "completion"),
		agent: mk("agent", "agent-chat"), flow: mk("flow", apps.ModeWorkflow), runner: r}
}

func (env *engineEnv) start(t *testing.T, req Request) *Run {
	t.Helper()
	if req.User == "" {
		req.User = "u1"
	}
	if req.Inputs == nil {
		req.Inputs = map[string]any{"topic": "tides"}
	}
	r, err := env.engine.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// feed hands the job its next step, failing if the job does not take it within 20 s.
func (env *engineEnv) feed(t *testing.T, st step) {
	t.Helper()
	if !env.give(st) {
		t.Fatal("the job did not take its next step")
	}
}

// feedLater hands the job its steps from another goroutine, while the test reads events.
func (env *engineEnv) feedLater(t *testing.T, steps ...step) {
	go func() {
		for _, st := range steps {
			if !env.give(st) {
				t.Error("the job did not take its next step")
				return
			}
		}
	}()
}

func (env *engineEnv) give(st step) bool {
	select {
	case env.runner.steps <- st:
		return true
	case <-time.After(20 * time.Second):
		return false
	}
}

func emit(ev Event) step    { return step{ev: &ev} }
func deliver(ev Event) step { return step{ev: &ev, deliver: true} }

func collectEvents(t *testing.T, r *Run) []Event {
	t.Helper()
	var evs []Event
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-r.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("run did not end; events so far: %+v", evs)
		}
	}
}

func waitDone(t *testing.T, r *Run) {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("run did not finish")
	}
}

func (env *engineEnv) stored(t *testing.T, app *apps.App, r *Run, user string) store.Message {
	t.Helper()
	u, err := env.engine.EndUser(context.Background(), app.ID, user)
	if err != nil {
		t.Fatal(err)
	}
	m, err := env.store.Message(context.Background(), app.ID, u.ID, r.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEventsAndStoredAnswer: events reach the client in order; the stored answer is the text of
// message and agent_message events as message_replace last left it, without delivered-only
// text; message_end closes the stream with the job's usage, and the resources are stored with
// ids of their own.
func TestEventsAndStoredAnswer(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e)
		r := env.start(t, Request{App: env.chat, Query: "q", Streaming: true})
		thought := map[string]any{"id": "t1", "position": 1}
		usage := models.ComputeUsage(nil, 10, 5, time.Second)
		res := []store.RetrieverResource{{Position: 1, DatasetID: store.NewID(), DatasetName: "kb", DocumentID: store.NewID(),
			DocumentName: "d", SegmentID: store.NewID(), Content: "c", Score: 0.5}}
		env.feedLater(t,
			emit(Event{Kind: EventMessage, Answer: "Draft"}),
			emit(Event{Kind: EventMessageReplace, Answer: "Clean", Data: map[string]any{"reason": "moderation"}}),
			emit(Event{Kind: EventAgentThought, Data: thought}),
			emit(Event{Kind: EventAgentMessage, Answer: " text"}),
			deliver(Event{Kind: EventMessage, Answer: "Clean text"}),
			step{end: true, outcome: Outcome{Usage: usage, Resources: res, Metadata: map[string]any{"extra": 1}}},
		)
		evs := collectEvents(t, r)
		var kinds []EventKind
		for _, ev := range evs {
			kinds = append(kinds, ev.Kind)
		}
		want := []EventKind{EventMessage, EventMessageReplace, EventAgentThought, EventAgentMessage, EventMessage, EventMessageEnd}
		if len(kinds) != len(want) {
			t.Fatalf("events %v", kinds)
		}
		for i := range want {
			if kinds[i] != want[i] {
				t.Fatalf("events %v, want %v", kinds, want)
			}
		}
		end := evs[len(evs)-1].End
		if end == nil || end.Usage.TotalTokens != 15 || len(end.Resources) != 1 || end.Resources[0].ID == "" || end.Resources[0].MessageID != r.MessageID {
			t.Fatalf("message_end %+v", end)
		}
		waitDone(t, r)
		if env.runner.after.Load() != 1 {
			t.Fatalf("After ran %d times", env.runner.after.Load())
		}
		m := env.stored(t, env.chat, r, "u1")
		if m.Status != store.MessageStatusNormal || m.Answer != "Clean text" || m.TotalTokens != 15 || m.ModelID != "gpt-test" {
			t.Fatalf("stored %+v", m)
		}
		var meta map[string]any
		if err := json.Unmarshal(m.Metadata, &meta); err != nil {
			t.Fatal(err)
		}
		if meta["extra"] != float64(1) || meta["usage"] == nil || len(meta["retriever_resources"].([]any)) != 1 {
			t.Fatalf("metadata %s", m.Metadata)
		}
	})
}

// TestOneShotKind: a one-shot app's every message gets a conversation of its own, which the run
// does not reveal; inputs are validated each time and a conversation id is ignored.
func TestOneShotKind(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e, func(o *Options) { o.Limiter = limiter.NewLocal() })
		ctx := context.Background()
		if _, err := env.engine.Start(ctx, Request{App: env.oneOff, User: "u1", Inputs: map[string]any{}}); err == nil {
			t.Fatal("missing required input accepted")
		}
		var convs []string
		for range 2 {
			r := env.start(t, Request{App: env.oneOff, Query: "", ConversationID: "7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"})
			if r.ConversationID != "" {
				t.Fatalf("one-shot run shows conversation %q", r.ConversationID)
			}
			env.feedLater(t, step{end: true})
			collectEvents(t, r)
			waitDone(t, r)
			m := env.stored(t, env.oneOff, r, "u1")
			convs = append(convs, m.ConversationID)
			if m.Status != store.MessageStatusNormal || string(m.Inputs) != `{"topic":"tides"}` {
				t.Fatalf("stored %+v", m)
			}
		}
		if convs[0] == convs[1] {
			t.Fatal("two one-shot messages share a conversation")
		}
		u, _ := env.engine.EndUser(ctx, env.oneOff.ID, "u1")
		c, err := env.store.Conversation(ctx, env.oneOff.ID, u.ID, convs[0])
		if err != nil || c.Introduction != "" || c.Name != DefaultConversationName {
			t.Fatalf("conversation %+v, %v", c, err)
		}
	})
}

// TestAdmission: refusals before anything is stored, and the slot each refusal leaves free.
func TestAdmission(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e)
		ctx := context.Background()
		req := func(app *apps.App, streaming bool) Request {
			return Request{App: app, User: "u1", Query: "q", Inputs: map[string]any{"topic": "x"}, Streaming: streaming}
		}
		if _, err := env.engine.Start(ctx, req(env.agent, false)); !errors.Is(err, ErrStreamingOnly) {
			t.Fatalf("blocking on a streaming-only app: %v", err)
		}
		if _, err := env.engine.Start(ctx, req(env.agent, true)); !errors.Is(err, ErrModeNotSupported) {
			t.Fatalf("mode without a runner: %v", err)
		}
		refusal := &providers.Error{Kind: providers.KindCredentials, Message: "no key"}
		env.runner.refuse = refusal
		if _, err := env.engine.Start(ctx, req(env.chat, true)); !errors.Is(err, refusal) {
			t.Fatalf("runner refusal: %v", err)
		}
		env.runner.refuse = nil
		// None of the refusals kept the app's only slot or stored a conversation.
		u, _ := env.engine.EndUser(ctx, env.chat.ID, "u1")
		if cs, _, err := env.store.ListConversations(ctx, store.ConversationQuery{AppID: env.chat.ID, EndUserID: u.ID, Limit: 10}); err != nil || len(cs) != 0 {
			t.Fatalf("conversations after refusals: %v, %v", cs, err)
		}
		r := env.start(t, req(env.chat, true))
		if _, err := env.engine.Start(ctx, req(env.chat, true)); !errors.As(err, new(*LimitError)) {
			t.Fatalf("second run over the cap: %v", err)
		}
		env.feedLater(t, step{end: true})
		collectEvents(t, r)
		waitDone(t, r)
		// The anonymous end user is the one an empty user names.
		a, err := env.engine.EndUser(ctx, env.chat.ID, "")
		if err != nil || a.SessionID != AnonymousUser {
			t.Fatalf("anonymous end user %+v, %v", a, err)
		}
	})
}

// TestFailedAndStoppedRuns: a failing job ends with an error event and its partial answer is
// stored with a client-safe error; a stopped one ends with message_end and status stopped;
// neither runs the follow-up work.
func TestFailedAndStoppedRuns(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e)
		failed := env.start(t, Request{App: env.chat, Query: "q", Streaming: true})
		env.feedLater(t,
			emit(Event{Kind: EventMessage, Answer: "half"}),
			step{end: true, err: errors.New("dial tcp 10.0.0.7:443: connection refused")},
		)
		evs := collectEvents(t, failed)
		if last := evs[len(evs)-1]; last.Kind != EventError || last.Err == nil {
			t.Fatalf("last event %+v", last)
		}
		waitDone(t, failed)
		if m := env.stored(t, env.chat, failed, "u1"); m.Status != store.MessageStatusError || m.Answer != "half" || m.Error != "Internal Server Error." {
			t.Fatalf("stored %+v", m)
		}

		stopped := env.start(t, Request{App: env.chat, Query: "q", User: "owner", Streaming: true})
		env.feed(t, emit(Event{Kind: EventMessage, Answer: "so far"}))
		if ev := <-stopped.Events(); ev.Answer != "so far" {
			t.Fatalf("event %+v", ev)
		}
		if err := env.engine.Stop(context.Background(), stopped.TaskID, env.chat.ID, "owner"); err != nil {
			t.Fatal(err)
		}
		evs = collectEvents(t, stopped)
		if last := evs[len(evs)-1]; last.Kind != EventMessageEnd {
			t.Fatalf("stopped run ended with %+v", last)
		}
		waitDone(t, stopped)
		if m := env.stored(t, env.chat, stopped, "owner"); m.Status != store.MessageStatusStopped || m.Answer != "so far" {
			t.Fatalf("stored %+v", m)
		}
		if n := env.runner.after.Load(); n != 1 {
			t.Fatalf("After ran %d times, want once (for the failed run, which was not cut)", n)
		}
	})
}

// TestWorkflowKind: a Workflow app's run has no conversation to show; its job ends the stream
// (no message_end after success or a stop, no error event after a failure it reported), while
// the engine still stores the outcome, applies the per-app cap and stops it for any user.
func TestWorkflowKind(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e)
		ctx := context.Background()
		kinds := func(evs []Event) []EventKind {
			var ks []EventKind
			for _, ev := range evs {
				ks = append(ks, ev.Kind)
			}
			return ks
		}
		fin := Event{Kind: EventWorkflowFinished, Data: map[string]any{"status": "succeeded"}}

		ok := env.start(t, Request{App: env.flow, Streaming: true})
		if ok.ConversationID != "" {
			t.Fatalf("a workflow run shows conversation %q", ok.ConversationID)
		}
		env.feedLater(t, emit(Event{Kind: EventTextChunk, Data: map[string]any{"text": "hi"}}), emit(fin), step{end: true})
		if ks := kinds(collectEvents(t, ok)); len(ks) != 2 || ks[1] != EventWorkflowFinished {
			t.Fatalf("events %v", ks)
		}
		waitDone(t, ok)
		if m := env.stored(t, env.flow, ok, "u1"); m.Status != store.MessageStatusNormal {
			t.Fatalf("stored %+v", m)
		}

		failed := env.start(t, Request{App: env.flow, Streaming: true})
		env.feedLater(t, emit(fin), step{end: true, err: &ReportedError{Err: errors.New("Run failed: node x: boom")}})
		if ks := kinds(collectEvents(t, failed)); len(ks) != 1 || ks[0] != EventWorkflowFinished {
			t.Fatalf("a reported failure added events: %v", ks)
		}
		waitDone(t, failed)
		if m := env.stored(t, env.flow, failed, "u1"); m.Status != store.MessageStatusError {
			t.Fatalf("stored %+v", m)
		}

		// The cap (1 here) holds while the run lasts; the stop needs no user.
		running := env.start(t, Request{App: env.flow, User: "owner", Streaming: true})
		if _, err := env.engine.Start(ctx, Request{App: env.flow, User: "u2", Inputs: map[string]any{"topic": "x"}}); !errors.As(err, new(*LimitError)) {
			t.Fatalf("second run: %v", err)
		}
		if err := env.engine.StopWorkflow(ctx, running.TaskID, env.flow.ID); err != nil {
			t.Fatal(err)
		}
		// The scripted job sends nothing on a stop; the engine adds nothing either.
		evs := collectEvents(t, running)
		if len(evs) != 0 {
			t.Fatalf("a stopped run whose job sent nothing got %v", kinds(evs))
		}
		waitDone(t, running)
		if m := env.stored(t, env.flow, running, "owner"); m.Status != store.MessageStatusStopped {
			t.Fatalf("stored %+v", m)
		}
	})
}

// TestReplacedAnswerIsSaved: progress saving follows every change of the answer, also a
// message_replace that leaves its length as it was.
func TestReplacedAnswerIsSaved(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e, func(o *Options) { o.ProgressInterval, o.StaleAfter = 200*time.Millisecond, 4*time.Second })
		r := env.start(t, Request{App: env.chat, Query: "q", Streaming: true})
		for _, st := range []step{emit(Event{Kind: EventMessage, Answer: "abcd"}), emit(Event{Kind: EventMessageReplace, Answer: "wxyz"})} {
			env.feed(t, st)
			<-r.Events()
			want := st.ev.Answer
			deadline := time.Now().Add(20 * time.Second)
			for env.stored(t, env.chat, r, "u1").Answer != want {
				if time.Now().After(deadline) {
					t.Fatalf("answer %q never stored", want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		env.feedLater(t, step{end: true})
		collectEvents(t, r)
		waitDone(t, r)
	})
}

func TestEventKindNames(t *testing.T) {
	kinds := EventKinds()
	// The seed names 27; Workflow apps add text_chunk.
	if len(kinds) != 28 {
		t.Fatalf("%d event kinds, want 28", len(kinds))
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		if k.String() == "" || seen[k.String()] {
			t.Fatalf("kind %d named %q", k, k.String())
		}
		seen[k.String()] = true
	}
	for k, nested := range map[EventKind]bool{EventMessage: false, EventAgentThought: false, EventReasoningChunk: true,
		EventWorkflowStarted: true, EventAgentLog: true, EventHumanInputFormTimeout: true, EventError: false, EventTextChunk: true} {
		if k.Nested() != nested {
			t.Errorf("%s nested = %v", k, k.Nested())
		}
	}
	if EventAgentLog.WorkflowScoped() || !EventNodeFinished.WorkflowScoped() {
		t.Error("agent_log carries no workflow_run_id; node events do")
	}
}
