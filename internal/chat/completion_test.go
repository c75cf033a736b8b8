package chat

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

func TestCompletionPrompt(t *testing.T) {
	app := &apps.App{PrePrompt: "Write about {{topic}}."}
	bare := &apps.App{}
	sys := func(s string) providers.Message { return providers.Message{Role: providers.RoleSystem, Content: s} }
	user := func(s string) providers.Message { return providers.Message{Role: providers.RoleUser, Content: s} }
	in := map[string]any{"topic": "tides"}
	for name, tc := range map[string]struct {
		app          *apps.App
		query, kbctx string
		want         []providers.Message
	}{
		"inputs only":            {app, "", "", []providers.Message{user("Write about tides.")}},
		"inputs and query":       {app, "Make it rhyme.", "", []providers.Message{sys("Write about tides."), user("Make it rhyme.")}},
		"context, no query":      {app, "", "CTX", []providers.Message{user("CTX\nWrite about tides.")}},
		"context and query":      {app, "Why?", "CTX", []providers.Message{sys("CTX\nWrite about tides."), user("Why?")}},
		"no pre-prompt, query":   {bare, "Hello", "", []providers.Message{user("Hello")}},
		"no pre-prompt, context": {bare, "Hello", "CTX", []providers.Message{sys("CTX"), user("Hello")}},
	} {
		if got := completionPrompt(tc.app, in, tc.query, tc.kbctx); !slices.EqualFunc(got, tc.want, func(a, b providers.Message) bool {
			return a.Role == b.Role && a.Content == b.Content
		}) {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

// recordingKnowledge answers every retrieval with a context naming the query, and records the
// queries: the Completion runner must search with its app's dataset query variable.
type recordingKnowledge struct {
	mu      sync.Mutex
	queries []string
}

func (k *recordingKnowledge) RetrieveForChat(_ context.Context, names []string, query string) (knowledge.ChatContext, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.queries = append(k.queries, query)
	return knowledge.ChatContext{Prompt: "Context about " + query + " from " + names[0] + "."}, nil
}

// TestCompletionRun: a Completion is answered from the app's prompt filled in from the inputs,
// searched with the dataset query variable, stored under a conversation of its own that the run
// does not reveal, never named, and never continued. As in Dify, an app with knowledge bases
// puts the value of its dataset query variable in the prompt as the query, in place of the
// request's.
func TestCompletionRun(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		kb := &recordingKnowledge{}
		env := newEnv(t, e, func(o *envOptions) { o.chat.Knowledge = kb })
		env.upstream.On("tides", openaitest.Reply{Chunks: []string{"Waves", " rise."}})
		ctx := context.Background()
		start := func(query string) *run.Run {
			t.Helper()
			r, err := env.engine.Start(ctx, run.Request{App: env.writer, User: "u1", Query: query, AutoGenerateName: true,
				Inputs: map[string]any{"topic": "tides", "reader": "kids"}, Streaming: true})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		wantPrompt := func(what string, got []providers.Message) {
			t.Helper()
			if len(got) != 2 || got[0].Role != "system" || got[0].Text() != "Context about tides from notes.\nWrite about tides for kids." ||
				got[1].Role != "user" || got[1].Text() != "tides" {
				t.Fatalf("%s: prompt %+v", what, got)
			}
		}
		r := start("")
		evs := collect(t, r)
		if answerOf(evs) != "Waves rise." || evs[len(evs)-1].Kind != run.EventMessageEnd || r.ConversationID != "" {
			t.Fatalf("events %+v, conversation %q", evs, r.ConversationID)
		}
		wait(t, r)
		reqs := env.upstream.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d upstream requests, want 1 (no naming)", len(reqs))
		}
		wantPrompt("no query", reqs[0].Messages)
		first := env.message(t, r, "u1")
		if first.Status != store.MessageStatusNormal || first.Answer != "Waves rise." || first.Query != "" {
			t.Fatalf("stored %+v", first)
		}

		r2 := start("Make it rhyme.")
		collect(t, r2)
		wait(t, r2)
		wantPrompt("a query", env.upstream.Requests()[1].Messages)
		second := env.message(t, r2, "u1")
		if second.ConversationID == first.ConversationID || second.Query != "Make it rhyme." {
			t.Fatalf("stored %+v; first in conversation %s", second, first.ConversationID)
		}
		if slices.Compare(kb.queries, []string{"tides", "tides"}) != 0 {
			t.Fatalf("knowledge searched with %q", kb.queries)
		}
	})
}
