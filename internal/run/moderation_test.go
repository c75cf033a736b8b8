package run

import (
	"context"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/moderation"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// moderated is the app a with a rule: a keywords rule, or an openai_moderation one that cannot
// reach a model (no moderation model configured), to see how failures are handled.
func moderatedApp(a *apps.App, typ string, in, out bool) *apps.App {
	c := *a
	c.Features.SensitiveWordAvoidance = apps.SensitiveWordAvoidance{Enabled: true, Type: typ, Config: map[string]any{
		"keywords":       "bad\nworse",
		"inputs_config":  map[string]any{"enabled": in, "preset_response": "No, ça."},
		"outputs_config": map[string]any{"enabled": out, "preset_response": "Replaced."},
	}}
	return &c
}

func withModeration(o *Options) {
	cat := models.NewCatalog(nil, nil)
	o.Moderation = moderation.New(cat, registry.New(cat.APIKey))
}

func kindsOf(evs []Event) string {
	var b []string
	for _, ev := range evs {
		s := ev.Kind.String()
		if ev.Kind == EventMessage || ev.Kind == EventMessageReplace {
			s += "(" + ev.Answer + ")"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

// TestInputModeration: a flagged query or input is answered with the preset response, one
// character per message event as Dify streams its direct output, without running the job (no
// model call); the stored answer is the preset. A check that cannot run fails the run.
func TestInputModeration(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e, withModeration)
		app := moderatedApp(env.chat, moderation.TypeKeywords, true, false)
		for _, req := range []Request{
			{App: app, Query: "a BAD question", Streaming: true},
			{App: app, Query: "fine", Inputs: map[string]any{"topic": "worse tides"}},
		} {
			r := env.start(t, req)
			evs := collectEvents(t, r)
			if got := kindsOf(evs); got != "message(N) message(o) message(,) message( ) message(ç) message(a) message(.) message_end" {
				t.Fatalf("events %s", got)
			}
			if u := evs[len(evs)-1].End.Usage; u.TotalTokens != 0 || u.TotalPrice != "0.0" {
				t.Fatalf("usage %+v", u)
			}
			waitDone(t, r)
			if m := env.stored(t, app, r, "u1"); m.Answer != "No, ça." || m.Status != store.MessageStatusNormal || m.Query != req.Query {
				t.Fatalf("stored %+v", m)
			}
		}
		if n := env.runner.prepared.Load(); n != 2 {
			t.Fatalf("prepared %d", n)
		}

		// Clean input: the job runs.
		r := env.start(t, Request{App: app, Query: "good", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "bad answer"}), step{end: true})
		if got := kindsOf(collectEvents(t, r)); got != "message(bad answer) message_end" {
			t.Fatalf("outputs not moderated, got %s", got)
		}
		waitDone(t, r)

		failing := moderatedApp(env.chat, moderation.TypeOpenAI, true, false)
		r = env.start(t, Request{App: failing, Query: "good", Streaming: true})
		evs := collectEvents(t, r)
		if len(evs) != 1 || evs[0].Kind != EventError || !strings.Contains(evs[0].Err.Error(), "no moderation model") {
			t.Fatalf("events %+v", evs)
		}
		waitDone(t, r)
		if m := env.stored(t, failing, r, "u1"); m.Status != store.MessageStatusError {
			t.Fatalf("stored %+v", m)
		}
	})
}

// TestOutputModeration: an answer flagged once complete is replaced (message_replace before
// message_end, the stored answer the preset); one flagged while it streams stops the job, and
// chunks after the verdict never reach the client; a check that cannot run lets the answer
// through.
func TestOutputModeration(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e, withModeration)
		app := moderatedApp(env.chat, moderation.TypeKeywords, false, true)

		r := env.start(t, Request{App: app, Query: "a bad question", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "That is W"}), emit(Event{Kind: EventMessage, Answer: "ORSE."}), step{end: true})
		evs := collectEvents(t, r)
		if got := kindsOf(evs); got != "message(That is W) message(ORSE.) message_replace(Replaced.) message_end" {
			t.Fatalf("events %s", got)
		}
		if evs[2].Data != nil {
			t.Fatalf("a Chatbot's message_replace has no reason: %+v", evs[2])
		}
		waitDone(t, r)
		if m := env.stored(t, app, r, "u1"); m.Answer != "Replaced." || m.Status != store.MessageStatusNormal {
			t.Fatalf("stored %+v", m)
		}

		// Past DefaultModerationBuffer characters the answer is checked while it streams: the job,
		// still generating, is stopped.
		r = env.start(t, Request{App: app, Query: "q", Streaming: true})
		long := "bad " + strings.Repeat("x", DefaultModerationBuffer)
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: long}))
		evs = collectEvents(t, r)
		if got := kindsOf(evs); got != "message("+long+") message_replace(Replaced.) message_end" {
			t.Fatalf("events %s", got)
		}
		waitDone(t, r)
		if m := env.stored(t, app, r, "u1"); m.Answer != "Replaced." || m.Status != store.MessageStatusNormal {
			t.Fatalf("stored %+v", m)
		}

		// An answer the user stopped is checked too: a stop in time does not keep flagged text.
		r = env.start(t, Request{App: app, Query: "q", User: "owner", Streaming: true})
		env.feed(t, emit(Event{Kind: EventMessage, Answer: "a bad start"}))
		if ev := <-r.Events(); ev.Answer != "a bad start" {
			t.Fatalf("event %+v", ev)
		}
		if err := env.engine.Stop(context.Background(), r.TaskID, app.ID, "owner"); err != nil {
			t.Fatal(err)
		}
		if got := kindsOf(collectEvents(t, r)); got != "message_replace(Replaced.) message_end" {
			t.Fatalf("events after the stop %s", got)
		}
		waitDone(t, r)
		if m := env.stored(t, app, r, "owner"); m.Answer != "Replaced." || m.Status != store.MessageStatusStopped {
			t.Fatalf("stored %+v", m)
		}

		// A clean answer is left alone.
		r = env.start(t, Request{App: app, Query: "q", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: strings.Repeat("fine ", 100)}), step{end: true})
		if got := kindsOf(collectEvents(t, r)); strings.Contains(got, "message_replace") {
			t.Fatalf("events %s", got)
		}
		waitDone(t, r)

		failing := moderatedApp(env.chat, moderation.TypeOpenAI, false, true)
		r = env.start(t, Request{App: failing, Query: "q", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "bad " + strings.Repeat("y", DefaultModerationBuffer)}), step{end: true})
		if got := kindsOf(collectEvents(t, r)); strings.Contains(got, "message_replace") || !strings.HasSuffix(got, "message_end") {
			t.Fatalf("events %s", got)
		}
		waitDone(t, r)
	})
}

// TestOutputModerationIsBounded: a long answer streamed word by word costs the moderation model
// one call per DefaultModerationBuffer characters at most, plus the final one — never one per chunk.
func TestOutputModerationIsBounded(t *testing.T) {
	srv := openaitest.NewServer()
	t.Cleanup(srv.Close)
	env := map[string]string{"KEY": srv.APIKey()}
	cat := models.NewCatalog([]config.Provider{{Name: "openai", BaseURL: srv.URL(), APIKeyEnv: "KEY", RequiresAPIKey: true,
		Models: []config.Model{{Name: openaitest.DefaultModerationModel, Type: config.ModelTypeModeration, Enabled: true}}}},
		func(k string) string { return env[k] })
	e := newEngineEnv(t, storetest.NewEngine(t, storetest.SQLite), func(o *Options) { o.Moderation = moderation.New(cat, registry.New(cat.APIKey)) })
	app := moderatedApp(e.chat, moderation.TypeOpenAI, false, true)
	r := e.start(t, Request{App: app, Query: "q", Streaming: true})
	const words = 600 // 3000 characters
	steps := make([]step, 0, words+1)
	for range words {
		steps = append(steps, emit(Event{Kind: EventMessage, Answer: "word "}))
	}
	e.feedLater(t, append(steps, step{end: true})...)
	if got := kindsOf(collectEvents(t, r)); strings.Contains(got, "message_replace") || !strings.HasSuffix(got, "message_end") {
		t.Fatalf("events %s", got)
	}
	waitDone(t, r)
	calls := 0
	for _, req := range srv.Requests() {
		if strings.HasSuffix(req.Path, "/moderations") {
			calls++
		}
	}
	// At least the final check; a check still running when the answer ends is cancelled,
	// possibly before its request left.
	if max := words*5/DefaultModerationBuffer + 1; calls < 1 || calls > max {
		t.Fatalf("%d moderation calls for %d chunks, want 1..%d", calls, words, max)
	}
	t.Logf("%d moderation calls for %d chunks (%d characters)", calls, words, words*5)
}
