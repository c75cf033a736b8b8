package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/sites"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tasks"
	"github.com/parleyhq/parley/internal/tracing"
)

// chatStack is the whole chat path in one process: Echo and the validators, auth, the run
// engine with the Chatbot runner, SQLite, the OpenAI client and the fake upstream (which answers
// queries containing "hi"), for tests that need a real chat and for profiling. It returns the
// handler, a key of the Chatbot app and the fake.
func chatStack(b testing.TB, mode ValidationMode) (http.Handler, string, *openaitest.Server) {
	b.Helper()
	s := newBenchStack(b, mode)
	return s.h, s.chatKey, s.up
}

// benchStack is chatStack with a Completion app beside the Chatbot (its prompt asks about the
// `topic` input, so a topic containing "hi" gets the fake's answer).
type benchStack struct {
	h                      http.Handler
	chatKey, completionKey string
	// passport is a passport of the chat app's site, without a rate limit; siteCode is the
	// site's code (the app page's path).
	passport, siteCode string
	up                 *openaitest.Server
	st                 *store.Store
}

func newBenchStack(b testing.TB, mode ValidationMode) *benchStack {
	b.Helper()
	return newObservedStack(b, mode, nil)
}

// newObservedStack is newBenchStack recording metrics in m (nil: none) and spans when tracing
// is on.
func newObservedStack(b testing.TB, mode ValidationMode, m *metrics.Metrics) *benchStack {
	b.Helper()
	ctx := context.Background()
	up := openaitest.NewServer(openaitest.WithoutRequestLog())
	b.Cleanup(up.Close)
	up.On("hi", openaitest.Reply{Chunks: []string{"a", " b", " c", " d", " e"}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 5}})
	getenv := func(k string) string { return map[string]string{"U": up.URL(), "K": up.APIKey()}[k] }
	file, err := config.ParseFile([]byte(`
providers:
  - {name: openai, base_url: "${U}", api_key_env: K, models: [{name: gpt-4o, type: llm, context_size: 128000, pricing: {input: "2.5", output: "10", per: 1m}}]}
apps:
  - {name: bench, mode: chat, model: {provider: openai, name: gpt-4o}, pre_prompt: "Be brief."}
  - {name: writer, mode: completion, model: {provider: openai, name: gpt-4o}, pre_prompt: "Write about {{topic}}.", user_input_form: [{type: text-input, variable: topic, required: true}]}
`), getenv)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(ctx, "", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	synced, _ := st.SyncApps(ctx, []store.AppSpec{{Name: "bench", Mode: "chat"}, {Name: "writer", Mode: "completion"}})
	reg, _ := apps.NewRegistry(file.Apps, map[string]string{"bench": synced["bench"].ID, "writer": synced["writer"].ID}, func(n int) int { return n })
	keys := auth.New(st)
	key, _, _ := keys.Create(ctx, auth.KindApp, synced["bench"].ID)
	completionKey, _, _ := keys.Create(ctx, auth.KindApp, synced["writer"].ID)
	catalog := models.NewCatalog(file.Providers, getenv)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := chat.New(chat.Options{Store: st, Models: catalog, Providers: registry.New(catalog.APIKey).WithMetrics(m), Logger: log})
	engine := run.New(run.Options{Store: st, Limiter: limiter.NewLocal(), Tasks: tasks.NewLocal(), Logger: log, Metrics: m,
		Kinds: map[string]run.Kind{
			config.AppModeChat:       {Runner: svc.Chatbot()},
			config.AppModeCompletion: {Runner: svc.Completion(), OneShot: true},
		}})
	b.Cleanup(func() { _ = engine.Shutdown(context.Background()) })
	siteSvc, err := sites.New(ctx, st, reg)
	if err != nil {
		b.Fatal(err)
	}
	benchApp, _ := reg.Get(ctx, synced["bench"].ID)
	none := int64(0)
	site, err := siteSvc.Apply(ctx, benchApp, sites.Change{RequestsPerMinute: &none})
	if err != nil {
		b.Fatal(err)
	}
	pp, err := siteSvc.Issue(ctx, site.Code, "", "")
	if err != nil {
		b.Fatal(err)
	}
	e, _, err := New(Options{Keys: keys, Catalog: catalog, Apps: reg, Runs: engine, Sites: siteSvc,
		Conversations: conversations.New(st, svc, engine), Logger: log, Validation: mode, Metrics: m})
	if err != nil {
		b.Fatal(err)
	}
	return &benchStack{h: e, chatKey: key, completionKey: completionKey, up: up, st: st, passport: pp.Token, siteCode: site.Code}
}

// post sends a JSON body with an app key to the handler and returns the recorded response,
// failing tb on any status but 200.
func post(tb testing.TB, h http.Handler, path, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		tb.Fatalf("%d %s", rec.Code, rec.Body)
	}
	return rec
}

// BenchmarkChatBlocking is one blocking chat (new conversation, no naming) through the whole
// in-process stack; it exists to be profiled (-cpuprofile).
func BenchmarkChatBlocking(b *testing.B) {
	h, key, _ := chatStack(b, ValidationLog)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(b, h, "/v1/chat-messages", key, fmt.Sprintf(`{"query":"hi","inputs":{},"user":"u%d","auto_generate_name":false}`, n.Add(1)))
		}
	})
}

// BenchmarkCompletionBlocking is one blocking Completion (a new hidden conversation each, no
// history) through the same stack as BenchmarkChatBlocking, for the CPU a Completion costs next
// to a chat.
func BenchmarkCompletionBlocking(b *testing.B) {
	s := newBenchStack(b, ValidationLog)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(b, s.h, "/v1/completion-messages", s.completionKey,
				fmt.Sprintf(`{"inputs":{"topic":"hi"},"query":"","user":"u%d","response_mode":"blocking"}`, n.Add(1)))
		}
	})
}

// BenchmarkChatStreaming is one streamed chat (new conversation) through the same stack, read to
// its end: the path every streamed answer takes (the pump, the event encoder, the validator).
func BenchmarkChatStreaming(b *testing.B) {
	h, key, _ := chatStack(b, ValidationLog)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(b, h, "/v1/chat-messages", key, fmt.Sprintf(`{"query":"hi","inputs":{},"user":"u%d","response_mode":"streaming","auto_generate_name":false}`, n.Add(1)))
		}
	})
}

// BenchmarkOpenAIChat is the same answers through the OpenAI-compatible operation, blocking and
// streamed, for what the mapping costs next to BenchmarkChatBlocking and BenchmarkChatStreaming.
func BenchmarkOpenAIChat(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			h, key, _ := chatStack(b, ValidationLog)
			var n atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					post(b, h, "/v1/chat/completions", key, fmt.Sprintf(`{"model":"bench","messages":[{"role":"user","content":"hi"}],"user":"u%d","stream":%v}`, n.Add(1), stream))
				}
			})
		})
	}
}

// BenchmarkChatObserved is BenchmarkChatBlocking and BenchmarkChatStreaming with tracing and
// metrics on: every span is made, batched and handed to an exporter that drops it, and every
// metric is recorded. Next to those benchmarks it is the cost of observing a chat in the
// process, without the network an exporter adds.
func BenchmarkChatObserved(b *testing.B) {
	for _, streaming := range []bool{false, true} {
		b.Run(fmt.Sprintf("streaming=%v", streaming), func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			tracing.Use(tp.Tracer("bench"), false)
			b.Cleanup(func() {
				tracing.Use(nil, false)
				_ = tp.Shutdown(context.Background())
			})
			s := newObservedStack(b, ValidationLog, metrics.New())
			mode := "blocking"
			if streaming {
				mode = "streaming"
			}
			var n atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					post(b, s.h, "/v1/chat-messages", s.chatKey, fmt.Sprintf(`{"query":"hi","inputs":{},"user":"u%d","response_mode":%q,"auto_generate_name":false}`, n.Add(1), mode))
				}
			})
		})
	}
}
