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

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tasks"
)

// chatStack is the whole chat path in one process: Echo and the validators, auth, the chat
// runtime, SQLite, the OpenAI client and the fake upstream (which answers queries containing
// "hi"), for tests that need a real chat and for profiling.
func chatStack(b testing.TB, mode ValidationMode) (http.Handler, string, *openaitest.Server) {
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
	synced, _ := st.SyncApps(ctx, []store.AppSpec{{Name: "bench", Mode: "chat"}})
	reg, _ := apps.NewRegistry(file.Apps, map[string]string{"bench": synced["bench"].ID}, func(n int) int { return n })
	keys := auth.New(st)
	key, _, _ := keys.Create(ctx, auth.KindApp, synced["bench"].ID)
	catalog := models.NewCatalog(file.Providers, getenv)
	tr := tasks.NewLocal()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := chat.New(chat.Options{Store: st, Models: catalog, Providers: registry.New(catalog.APIKey), Limiter: limiter.NewLocal(), Tasks: tr, Logger: log})
	b.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	e, _, err := New(Options{Keys: keys, Catalog: catalog, Apps: reg, Chat: svc, Tasks: tr,
		Conversations: conversations.New(st, svc), EndUsers: st, Logger: log, Validation: mode})
	if err != nil {
		b.Fatal(err)
	}
	return e, key, up
}

// BenchmarkChatBlocking is one blocking chat (new conversation, no naming) through the whole
// in-process stack; it exists to be profiled (-cpuprofile).
func BenchmarkChatBlocking(b *testing.B) {
	h, key, _ := chatStack(b, ValidationLog)
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Sprintf(`{"query":"hi","inputs":{},"user":"u%d","auto_generate_name":false}`, n.Add(1))
			req := httptest.NewRequest("POST", "/v1/chat-messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
	})
}
