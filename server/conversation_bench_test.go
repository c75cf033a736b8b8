package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/limiter"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/parleytest"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/tasks"
)

// benchUpstream is the fake upstream of BenchmarkChatConversation, with its scripted replies: a
// title to the conversation-naming prompt, a short answer to queries containing "hi", and a
// long one (longAnswerWords words) to those containing longMarker.
func benchUpstream() *openaitest.Server {
	up := openaitest.NewServer(openaitest.WithoutRequestLog())
	// First: the naming prompt quotes the user's message, markers included.
	up.On("You name conversations", openaitest.Reply{Text: "Bench conversation", Usage: &providers.Usage{PromptTokens: 60, CompletionTokens: 2}})
	up.On(longMarker, openaitest.Reply{Chunks: []string{longAnswer()}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: longAnswerWords}})
	up.On("hi", openaitest.Reply{Chunks: []string{"a", " b", " c", " d", " e"}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 5}})
	return up
}

// conversationStack is chatStack's whole chat path on an upstream that is already running
// (url, apiKey) and on the database db; it returns the handler and a key of the Chatbot app.
func conversationStack(b testing.TB, url, apiKey string, db storetest.Engine) (http.Handler, string) {
	b.Helper()
	ctx := context.Background()
	getenv := func(k string) string { return map[string]string{"U": url, "K": apiKey}[k] }
	file, err := config.ParseFile([]byte(`
providers:
  - {name: openai, base_url: "${U}", api_key_env: K, models: [{name: gpt-4o, type: llm, context_size: 128000, pricing: {input: "2.5", output: "10", per: 1m}}]}
apps:
  - {name: bench, mode: chat, model: {provider: openai, name: gpt-4o}, pre_prompt: "Be brief."}
`), getenv)
	if err != nil {
		b.Fatal(err)
	}
	st := testdb.Open(b, db)
	synced, err := st.SyncApps(ctx, []store.AppSpec{{Name: "bench", Mode: "chat"}})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := apps.NewRegistry(file.Apps, map[string]string{"bench": synced["bench"].ID}, func(n int) int { return n })
	if err != nil {
		b.Fatal(err)
	}
	keys := auth.New(st)
	b.Cleanup(keys.Close)
	key, _, err := keys.Create(ctx, auth.KindApp, synced["bench"].ID)
	if err != nil {
		b.Fatal(err)
	}
	catalog := models.NewCatalog(file.Providers, getenv)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := chat.New(chat.Options{Store: st, Models: catalog, Providers: registry.New(catalog.APIKey), Logger: log})
	engine := run.New(run.Options{Store: st, Limiter: limiter.NewLocal(), Tasks: tasks.NewLocal(), Logger: log,
		Kinds: map[string]run.Kind{config.AppModeChat: {Runner: svc.Chatbot()}}})
	b.Cleanup(func() { _ = engine.Shutdown(context.Background()) })
	e, _, err := New(Options{Keys: keys, Catalog: catalog, Apps: reg, Runs: engine,
		Conversations: conversations.New(st, svc, engine), Logger: log, Validation: ValidationLog})
	if err != nil {
		b.Fatal(err)
	}
	return e, key
}

// longMarker in a query makes the benchmarks' fake upstream answer with longAnswer.
const longMarker = "[long]"

// longAnswerWords is about how many words longAnswer has (its usage says this many tokens).
const longAnswerWords = 700

// longAnswer is about 4 KB of prose: fifty of them are more bytes than the benchmark model's
// context (128,000 tokens) leaves for history, though far fewer tokens, so the prompt of a
// conversation of such answers cannot be sized by its bytes alone.
func longAnswer() string {
	const sentence = "The quick brown fox jumps over the lazy dog while the bench measures the server. "
	return strings.Repeat(sentence, longAnswerWords/14)
}

// historyWindow is how many earlier exchanges the chat runtime replays into a prompt (its
// default); a conversation this long or longer costs the most per turn.
const historyWindow = 50

// upstreamChildEnv makes the test binary, run again by childUpstream, serve benchUpstream.
const upstreamChildEnv = "PARLEY_BENCH_UPSTREAM_CHILD"

// TestBenchUpstreamChild is the child side of childUpstream: it serves benchUpstream, prints its
// address and key, and exits when its standard input closes.
func TestBenchUpstreamChild(t *testing.T) {
	if os.Getenv(upstreamChildEnv) == "" {
		t.Skip("run by the chat benchmarks in a child process")
	}
	up := benchUpstream()
	defer up.Close()
	fmt.Printf("bench-upstream %s %s\n", up.URL(), up.APIKey())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// childUpstream runs benchUpstream in a child process (this test binary) and returns its URL and
// key: the CPU this process spends is then the server's alone, not the fake's too (which
// decodes every prompt, so a longer prompt would cost it more).
func childUpstream(b *testing.B) (url, key string) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchUpstreamChild$", "-test.bench=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), upstreamChildEnv+"=1")
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("bench upstream: %v", err)
		}
	})
	addr := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "bench-upstream" {
				addr <- f[1:]
				break
			}
		}
		close(addr)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case f, ok := <-addr:
		if !ok {
			b.Fatal("bench upstream exited without its address")
		}
		return f[0], f[1]
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		b.Fatal("bench upstream did not start within a minute")
	}
	return "", ""
}

// BenchmarkChatConversation compares, in one run, the server's CPU per blocking chat that
// continues a conversation of historyWindow earlier exchanges with one that starts a
// conversation, named as the API's defaults ask (a second model call) or not; with short answers
// (as bench/load's) and with long ones (whose history is more bytes than the context leaves, so
// the prompt must be sized in tokens); on each storage engine.
//
// As in bench/load, 8×GOMAXPROCS clients send chats back to back, each in its own conversation
// (continued) or as its own end user (new). Every chat goes through the whole in-process stack
// (Echo, validation, auth, the chat runtime, the store, the OpenAI client) to the fake upstream,
// which runs in a child process: cpu-ns/op is this process's CPU per chat, the figure to
// compare. ns/op is wall time, which includes waiting for the upstream; on PostgreSQL the
// database server's CPU is not counted either.
func BenchmarkChatConversation(b *testing.B) {
	url, apiKey := childUpstream(b)
	for _, engine := range []string{storetest.SQLite, storetest.Postgres} {
		b.Run("engine="+engine, func(b *testing.B) {
			h, key := conversationStack(b, url, apiKey, storetest.NewEngine(b, engine))
			benchConversations(b, h, key)
		})
	}
}

// benchConversations runs BenchmarkChatConversation's variants on one stack.
func benchConversations(b *testing.B, h http.Handler, key string) {
	do := func(body string) (conversationID string, err error) {
		req := httptest.NewRequest("POST", "/v1/chat-messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var got struct {
			ConversationID string `json:"conversation_id"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != http.StatusOK || err != nil || got.ConversationID == "" {
			return "", fmt.Errorf("chat: %d %s", rec.Code, rec.Body)
		}
		return got.ConversationID, nil
	}
	body := func(query, user, conversationID string, autoName bool) string {
		return fmt.Sprintf(`{"query":%q,"inputs":{},"user":%q,"response_mode":"blocking","conversation_id":%q,"auto_generate_name":%t}`,
			query, user, conversationID, autoName)
	}
	const parallelism = 8
	clients := parallelism * runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		name, query         string
		continued, autoName bool
	}{
		{"answers=short/new", "hi", false, true},
		{"answers=short/new_unnamed", "hi", false, false},
		{"answers=short/continued", "hi again", true, false},
		{"answers=long/new", longMarker + " hi", false, true},
		{"answers=long/new_unnamed", longMarker + " hi", false, false},
		{"answers=long/continued", longMarker + " hi again", true, false},
	} {
		// Seeded by the variant's first run; later runs (the probes for b.N, -count) reuse them.
		var bodies []string
		b.Run(c.name, func(b *testing.B) {
			if bodies == nil {
				seeded := make([]string, clients)
				var wg sync.WaitGroup
				for i := range clients {
					// The new variants start conversations as a returning user, the continued
					// one continues a conversation of its own.
					user := fmt.Sprintf("bench-%d-%s", i, uuid.NewString())
					seeded[i] = body(c.query, user, "", c.autoName)
					wg.Go(func() {
						conv, err := do(seeded[i])
						if err != nil {
							b.Error(err)
							return
						}
						if !c.continued {
							return
						}
						seeded[i] = body(c.query, user, conv, c.autoName)
						for range historyWindow {
							if _, err := do(seeded[i]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if b.Failed() {
					return
				}
				bodies = seeded
			}
			var next atomic.Int64
			b.SetParallelism(parallelism)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := parleytest.ProcessCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				mine := bodies[int(next.Add(1)-1)%clients]
				for pb.Next() {
					if _, err := do(mine); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(parleytest.ProcessCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
