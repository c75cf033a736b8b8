package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/tokens"
)

// recvTimeout caps every wait on a stream so that a hung stream fails the
// test instead of wedging the suite.
const recvTimeout = 20 * time.Second

func newFake(t *testing.T, opts ...openaitest.Option) *openaitest.Server {
	t.Helper()
	s := openaitest.NewServer(opts...)
	t.Cleanup(s.Close)
	return s
}

func newClient(t *testing.T, s *openaitest.Server, mod ...func(*openai.Config)) *openai.Client {
	t.Helper()
	cfg := openai.Config{Name: "openai", BaseURL: s.URL(), APIKey: openaitest.DefaultAPIKey, Timeout: 10 * time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	c := openai.New(cfg)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func userReq(model, text string) providers.ChatRequest {
	return providers.ChatRequest{Model: model, Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "You are terse."},
		{Role: providers.RoleUser, Content: text},
	}}
}

type streamResult struct {
	deltas []string
	final  providers.Chunk
	err    error
}

// collect reads a stream to its end in a goroutine and waits for it with a
// bounded timer.
func collect(t *testing.T, s providers.Stream) streamResult {
	t.Helper()
	done := make(chan streamResult, 1)
	go func() {
		var r streamResult
		for {
			ch, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.err = err
				break
			}
			if ch.FinishReason != "" || ch.Usage != nil || ch.ToolCalls != nil {
				r.final = ch
			}
			if ch.Delta != "" {
				r.deltas = append(r.deltas, ch.Delta)
			}
		}
		done <- r
	}()
	timer := time.NewTimer(recvTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		_ = s.Close()
		return r
	case <-timer.C:
		_ = s.Close()
		t.Fatalf("stream did not end within %s", recvTimeout)
		return streamResult{}
	}
}

func TestChatBlocking(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s)
	req := userReq("gpt-4o", "hello there")
	req.Parameters = map[string]any{"temperature": 0.2, "max_tokens": 64, "stop": []string{"\n\n"}, "model": "ignored", "stream": true}
	req.User = "end-user-1"

	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Echo: hello there" || resp.FinishReason != "stop" || resp.ToolCalls != nil {
		t.Fatalf("response = %+v", resp)
	}
	want := providers.Usage{PromptTokens: tokens.CountMessages(req.Messages), CompletionTokens: tokens.Count("Echo: hello there")}
	if resp.Usage == nil || *resp.Usage != want {
		t.Fatalf("usage = %+v, want %+v", resp.Usage, want)
	}

	got := s.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	if r.Path != "/v1/chat/completions" || r.Model != "gpt-4o" || r.Stream || r.StreamOptions {
		t.Errorf("request = %s %s model=%q stream=%v stream_options=%v", r.Method, r.Path, r.Model, r.Stream, r.StreamOptions)
	}
	if h := r.Header.Get("Authorization"); h != "Bearer "+openaitest.DefaultAPIKey {
		t.Errorf("Authorization = %q", h)
	}
	if r.Header.Get("Api-Key") != "" {
		t.Error("api-key header sent to a non-Azure URL")
	}
	wantParams := map[string]any{"temperature": 0.2, "max_tokens": float64(64), "stop": []any{"\n\n"}, "user": "end-user-1"}
	if !reflect.DeepEqual(r.Params, wantParams) {
		t.Errorf("params = %#v, want %#v", r.Params, wantParams)
	}
	if !reflect.DeepEqual(r.Messages, req.Messages) {
		t.Errorf("messages on the wire = %#v", r.Messages)
	}
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	s := newFake(t, openaitest.WithChunkWords(1))
	c := newClient(t, s)
	req := userReq("gpt-4o-mini", "stream me some words please")

	st, err := c.ChatStream(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, st)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []string{"Echo:", " stream", " me", " some", " words", " please"}
	if !slices.Equal(r.deltas, want) {
		t.Fatalf("deltas = %q, want %q", r.deltas, want)
	}
	if r.final.FinishReason != "stop" || r.final.ToolCalls != nil {
		t.Fatalf("final = %+v", r.final)
	}
	wantUsage := providers.Usage{PromptTokens: tokens.CountMessages(req.Messages), CompletionTokens: tokens.Count(strings.Join(want, ""))}
	if r.final.Usage == nil || *r.final.Usage != wantUsage {
		t.Fatalf("usage = %+v, want %+v", r.final.Usage, wantUsage)
	}
	got := s.Requests()[0]
	if !got.Stream || !got.StreamOptions || !got.IncludeUsage {
		t.Errorf("stream=%v stream_options=%v include_usage=%v", got.Stream, got.StreamOptions, got.IncludeUsage)
	}
	if a := got.Header.Get("Accept"); a != "text/event-stream" {
		t.Errorf("Accept = %q", a)
	}
	// Recv after the end keeps returning io.EOF.
	if _, err := st.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("Recv after end = %v", err)
	}
}

func TestStreamScriptedChunksAndNoUsage(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("scripted", openaitest.Reply{Chunks: []string{"Hel", "lo, ", "wor", "ld\n", "“ünï”"}, NoUsage: true, FinishReason: "length"})
	c := newClient(t, s)
	st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "a scripted reply"))
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, st)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if strings.Join(r.deltas, "|") != "Hel|lo, |wor|ld\n|“ünï”" {
		t.Fatalf("deltas = %q", r.deltas)
	}
	if r.final.FinishReason != "length" || r.final.Usage != nil {
		t.Fatalf("final = %+v (usage %v)", r.final, r.final.Usage)
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	calls := []providers.ToolCall{
		{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		{ID: "call_b", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}
	s.On("weather", openaitest.Reply{ToolCalls: calls})
	s.On("think first", openaitest.Reply{Text: "Let me check.", ToolCalls: calls[:1]})
	c := newClient(t, s)
	tools := []providers.Tool{
		{Name: "get_weather", Description: "Weather for a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		{Name: "get_time"},
	}

	t.Run("stream", func(t *testing.T) {
		req := userReq("gpt-4o", "weather and time in Paris?")
		req.Tools = tools
		st, err := c.ChatStream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		r := collect(t, st)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if len(r.deltas) != 0 || r.final.FinishReason != "tool_calls" || !reflect.DeepEqual(r.final.ToolCalls, calls) {
			t.Fatalf("deltas %q, final %+v", r.deltas, r.final)
		}
	})
	t.Run("stream with text", func(t *testing.T) {
		req := userReq("gpt-4o", "think first, then call")
		req.Tools = tools
		st, err := c.ChatStream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		r := collect(t, st)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if strings.Join(r.deltas, "") != "Let me check." || !reflect.DeepEqual(r.final.ToolCalls, calls[:1]) {
			t.Fatalf("deltas %q, final %+v", r.deltas, r.final)
		}
	})
	t.Run("blocking", func(t *testing.T) {
		req := userReq("gpt-4o", "weather again")
		req.Tools = tools
		resp, err := c.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Content != "" || resp.FinishReason != "tool_calls" || !reflect.DeepEqual(resp.ToolCalls, calls) {
			t.Fatalf("response %+v", resp)
		}
	})
	t.Run("tool results on the wire", func(t *testing.T) {
		req := providers.ChatRequest{Model: "gpt-4o", Tools: tools, Messages: []providers.Message{
			{Role: providers.RoleUser, Content: "weather?"},
			{Role: providers.RoleAssistant, ToolCalls: calls[:1]},
			{Role: providers.RoleTool, ToolCallID: "call_a", Content: `{"temp":21}`},
		}}
		if _, err := c.Chat(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		reqs := s.Requests()
		got := reqs[len(reqs)-1]
		if !reflect.DeepEqual(got.Messages, req.Messages) || !reflect.DeepEqual(got.Tools, tools) {
			t.Fatalf("wire messages %#v tools %#v", got.Messages, got.Tools)
		}
		if !strings.Contains(string(got.Body), `"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function"`) {
			t.Errorf("assistant tool-call message body: %s", got.Body)
		}
	})
}

func TestVisionParts(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s)
	msgs := []providers.Message{{Role: providers.RoleUser, Parts: []providers.Part{
		{Type: providers.PartText, Text: "What is in this image?"},
		{Type: providers.PartImageURL, ImageURL: "https://example.com/cat.png", Detail: providers.DetailHigh},
		{Type: providers.PartImageURL, ImageURL: "data:image/png;base64,iVBORw0KGgo="},
	}}}
	resp, err := c.Chat(t.Context(), providers.ChatRequest{Model: "gpt-4o", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Echo: What is in this image?" {
		t.Errorf("content = %q", resp.Content)
	}
	got := s.Requests()[0]
	if !reflect.DeepEqual(got.Messages, msgs) {
		t.Fatalf("wire messages = %#v", got.Messages)
	}
	body := string(got.Body)
	for _, want := range []string{
		`"content":[{"type":"text","text":"What is in this image?"}`,
		`{"type":"image_url","image_url":{"url":"https://example.com/cat.png","detail":"high"}}`,
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s\nbody: %s", want, body)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("quota", openaitest.Reply{Status: 429})
	s.On("ratelimit", openaitest.Reply{Status: 429, ErrorType: "requests", ErrorCode: "rate_limit_exceeded", ErrorMessage: "Rate limit reached for gpt-4o"})
	s.On("boom", openaitest.Reply{Status: 500})
	s.On("gateway", openaitest.Reply{Status: 502, ErrorBody: "<html>bad gateway sk-test-secret</html>"})
	s.On("gone model", openaitest.Reply{Status: 400, ErrorMessage: "The model `gpt-9` does not exist"})
	s.On("forbidden", openaitest.Reply{Status: 403})
	s.On("billing-400", openaitest.Reply{Status: 400, ErrorCode: "insufficient_quota", ErrorMessage: "quota"})
	s.On("too long", openaitest.Reply{Status: 400, ErrorMessage: strings.Repeat("very long message ", 100), ErrorCode: "context_length_exceeded"})

	tests := []struct {
		name    string
		key     string
		model   string
		text    string
		kind    providers.Kind
		status  int
		message string // substring of Error.Message
	}{
		{"wrong key", "sk-wrong-key-123456", "gpt-4o", "hi", providers.KindCredentials, 401, "Incorrect API key provided"},
		{"no key", "", "gpt-4o", "hi", providers.KindCredentials, 401, "didn't provide an API key"},
		{"forbidden", openaitest.DefaultAPIKey, "gpt-4o", "forbidden", providers.KindCredentials, 403, "not allowed"},
		{"insufficient quota", openaitest.DefaultAPIKey, "gpt-4o", "quota", providers.KindQuota, 429, "exceeded your current quota"},
		{"rate limit", openaitest.DefaultAPIKey, "gpt-4o", "ratelimit", providers.KindQuota, 429, "Rate limit reached"},
		{"quota code on 400", openaitest.DefaultAPIKey, "gpt-4o", "billing-400", providers.KindQuota, 400, "quota"},
		{"unknown model", openaitest.DefaultAPIKey, "gpt-9", "hi", providers.KindModel, 404, "The model `gpt-9` does not exist"},
		{"400 model does not exist", openaitest.DefaultAPIKey, "gpt-4o", "gone model", providers.KindModel, 400, "does not exist"},
		{"server error", openaitest.DefaultAPIKey, "gpt-4o", "boom", providers.KindInvocation, 500, "server had an error"},
		{"non-JSON body", openaitest.DefaultAPIKey, "gpt-4o", "gateway", providers.KindInvocation, 502, "HTTP 502 Bad Gateway"},
		{"long message truncated", openaitest.DefaultAPIKey, "gpt-4o", "too long", providers.KindInvocation, 400, "very long message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, s, func(cfg *openai.Config) { cfg.APIKey = tt.key })
			check := func(mode string, err error) {
				t.Helper()
				e, ok := errors.AsType[*providers.Error](err)
				if !ok {
					t.Fatalf("%s: error %v (%T) is not a *providers.Error", mode, err, err)
				}
				if e.Kind != tt.kind || e.StatusCode != tt.status || providers.KindOf(err) != tt.kind {
					t.Errorf("%s: kind %s status %d, want %s %d (%s)", mode, e.Kind, e.StatusCode, tt.kind, tt.status, e.Message)
				}
				if !strings.HasPrefix(e.Message, "[openai] ") || !strings.Contains(e.Message, tt.message) {
					t.Errorf("%s: message %q, want [openai] …%s…", mode, e.Message, tt.message)
				}
				if len([]rune(e.Message)) > 600 {
					t.Errorf("%s: message not truncated (%d runes)", mode, len([]rune(e.Message)))
				}
				if tt.key != "" && strings.Contains(e.Message, tt.key) || strings.Contains(e.Message, "<html>") {
					t.Errorf("%s: message leaks key or body: %q", mode, e.Message)
				}
			}
			_, err := c.Chat(t.Context(), userReq(tt.model, tt.text))
			check("chat", err)
			st, err := c.ChatStream(t.Context(), userReq(tt.model, tt.text))
			if err == nil {
				st.Close()
			}
			check("stream", err)
		})
	}
}

func TestStreamCutMidway(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("cut", openaitest.Reply{Text: "one two three four five", CutAfterChunks: 2})
	s.On("all but finish", openaitest.Reply{Chunks: []string{"a", "b"}, CutAfterChunks: 2})
	s.On("no done", openaitest.Reply{Text: "one two three", NoDone: true})
	c := newClient(t, s)
	for _, tt := range []struct {
		text   string
		deltas []string
	}{
		{"cut please", []string{"one", " two"}},
		{"all but finish", []string{"a", "b"}},
		{"no done please", []string{"one", " two", " three"}},
	} {
		t.Run(tt.text, func(t *testing.T) {
			st, err := c.ChatStream(t.Context(), userReq("gpt-4o", tt.text))
			if err != nil {
				t.Fatal(err)
			}
			r := collect(t, st)
			if !slices.Equal(r.deltas, tt.deltas) {
				t.Errorf("deltas = %q, want %q", r.deltas, tt.deltas)
			}
			if !errors.Is(r.err, providers.ErrTruncated) || providers.KindOf(r.err) != providers.KindInvocation {
				t.Fatalf("err = %v, want ErrTruncated/KindInvocation", r.err)
			}
			if r.final.FinishReason != "" {
				t.Errorf("truncated stream produced a final chunk %+v", r.final)
			}
		})
	}
}

func TestFirstByteBeyondHeaderTimeout(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("slow", openaitest.Reply{FirstByteDelay: 30 * time.Second})
	s.On("embed-slow", openaitest.Reply{FirstByteDelay: 30 * time.Second})
	c := newClient(t, s, func(cfg *openai.Config) { cfg.Timeout = 150 * time.Millisecond })

	_, err := c.ChatStream(t.Context(), userReq("gpt-4o", "slow start"))
	if !errors.Is(err, providers.ErrTimeout) || providers.KindOf(err) != providers.KindInvocation {
		t.Errorf("stream: err = %v, want ErrTimeout/KindInvocation", err)
	}
	_, err = c.Chat(t.Context(), userReq("gpt-4o", "slow start"))
	if !errors.Is(err, providers.ErrTimeout) || providers.KindOf(err) != providers.KindInvocation {
		t.Errorf("chat: err = %v, want ErrTimeout/KindInvocation", err)
	}
	_, _, err = c.Embed(t.Context(), "text-embedding-3-small", []string{"embed-slow"})
	if !errors.Is(err, providers.ErrTimeout) {
		t.Errorf("embed: err = %v, want ErrTimeout", err)
	}
}

func TestStreamIdleTimeout(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("stall", openaitest.Reply{Text: "one two three", HangAfterChunks: 1})
	s.On("slow but steady", openaitest.Reply{Text: "a b c d", ChunkDelay: 50 * time.Millisecond})
	c := newClient(t, s, func(cfg *openai.Config) {
		cfg.Timeout = 2 * time.Second
		cfg.StreamIdleTimeout = 300 * time.Millisecond
	})

	st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "stall after one"))
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, st)
	if !slices.Equal(r.deltas, []string{"one"}) {
		t.Errorf("deltas = %q", r.deltas)
	}
	if !errors.Is(r.err, providers.ErrTimeout) || !errors.Is(r.err, providers.ErrTruncated) {
		t.Fatalf("err = %v, want ErrTimeout and ErrTruncated", r.err)
	}

	// A stream that keeps making progress is never cut, however long it
	// takes in total.
	st, err = c.ChatStream(t.Context(), userReq("gpt-4o", "slow but steady"))
	if err != nil {
		t.Fatal(err)
	}
	if r := collect(t, st); r.err != nil || len(r.deltas) != 4 {
		t.Fatalf("steady stream: %q, %v", r.deltas, r.err)
	}
}

// TestCallTimeout: the call cap ends every kind of call that outlives it, however steadily
// data arrives, with a timeout of the invocation kind (Dify's completion_request_error).
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("think forever", openaitest.Reply{Text: "one two three", HangAfterChunks: 1, KeepAlive: 20 * time.Millisecond})
	s.On("endless story", openaitest.Reply{Text: strings.Repeat("word ", 2000), ChunkDelay: 20 * time.Millisecond})
	s.On("slow start", openaitest.Reply{FirstByteDelay: time.Hour})
	// The idle and header timeouts are far away: only the cap can end these calls.
	c := newClient(t, s, func(cfg *openai.Config) {
		cfg.Timeout = time.Hour
		// Far above the first chunk's latency even on a loaded machine under -race, so that
		// the streams below deliver something before the cap ends them.
		cfg.CallTimeout = time.Second
	})
	capped := func(what string, err error) {
		t.Helper()
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.Kind != providers.KindInvocation || !errors.Is(err, providers.ErrTimeout) ||
			!strings.Contains(pe.Message, "took longer than its 1s limit") {
			t.Errorf("%s: err = %v, want the call cap's timeout", what, err)
		}
	}

	// Keep-alive comments are data for the idle timeout, not for the cap.
	st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "think forever"))
	if err != nil {
		t.Fatal(err)
	}
	r := collect(t, st)
	if len(r.deltas) > 1 || (len(r.deltas) == 1 && r.deltas[0] != "one") || !errors.Is(r.err, providers.ErrTruncated) {
		t.Errorf("keep-alive stream: deltas %q, err %v", r.deltas, r.err)
	}
	capped("keep-alive stream", r.err)

	// Steady progress does not extend the cap either.
	st, err = c.ChatStream(t.Context(), userReq("gpt-4o", "endless story"))
	if err != nil {
		t.Fatal(err)
	}
	r = collect(t, st)
	if len(r.deltas) == 0 || len(r.deltas) >= 2000 {
		t.Errorf("steady stream: %d deltas", len(r.deltas))
	}
	capped("steady stream", r.err)

	_, err = c.ChatStream(t.Context(), userReq("gpt-4o", "slow start"))
	capped("stream before headers", err)
	_, err = c.Chat(t.Context(), userReq("gpt-4o", "slow start"))
	capped("chat", err)
	_, _, err = c.Embed(t.Context(), "text-embedding-3-small", []string{"slow start"})
	capped("embed", err)
	_, _, err = c.Rerank(t.Context(), openaitest.DefaultRerankModel, "slow start", []string{"a", "b"}, 1)
	capped("rerank", err)
}

// TestStreamCancelNoLeak is not parallel: it counts goroutines.
func TestStreamCancelNoLeak(t *testing.T) {
	s := newFake(t)
	s.On("hang", openaitest.Reply{Text: "first second third", HangAfterChunks: 1})
	// No timeout can come to the rescue: only cancellation and Close may
	// release the connections.
	c := newClient(t, s, func(cfg *openai.Config) { cfg.Timeout = time.Hour })
	// Warm the connection pool and the server so the baseline includes
	// their steady-state goroutines, then drop idle connections.
	if _, err := c.Chat(t.Context(), userReq("gpt-4o", "warm up")); err != nil {
		t.Fatal(err)
	}
	c.CloseIdleConnections()
	baseline := stableGoroutines()

	for range 5 {
		ctx, cancel := context.WithCancel(t.Context())
		st, err := c.ChatStream(ctx, userReq("gpt-4o", "hang after the first chunk"))
		if err != nil {
			t.Fatal(err)
		}
		ch, err := st.Recv()
		if err != nil || ch.Delta != "first" {
			t.Fatalf("first Recv = %+v, %v", ch, err)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := st.Recv() // blocks: the server sends nothing more
			errc <- err
		}()
		cancel()
		timer := time.NewTimer(recvTimeout)
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) || providers.KindOf(err) != providers.KindInvocation {
				t.Errorf("Recv after cancel = %v, want context.Canceled", err)
			}
		case <-timer.C:
			t.Fatal("Recv did not return after cancel")
		}
		timer.Stop()
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	}
	// The server notices every client going away: the connections were
	// really closed.
	waitFor(t, "server streams to end", func() bool { return s.ActiveStreams() == 0 })

	// Close without reading to the end, too.
	for range 3 {
		st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "hang again"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		_ = st.Close()
		_ = st.Close() // idempotent
		if _, err := st.Recv(); err == nil {
			t.Error("Recv after Close succeeded")
		}
	}
	waitFor(t, "server streams to end", func() bool { return s.ActiveStreams() == 0 })
	c.CloseIdleConnections()
	waitFor(t, "goroutines to return to the baseline", func() bool { return runtime.NumGoroutine() <= baseline })
}

func stableGoroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		runtime.Gosched()
		n = min(n, runtime.NumGoroutine())
	}
	return n
}

// waitFor polls cond with a bounded deadline; on timeout it dumps all
// goroutines to help find the leak.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(recvTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			t.Fatalf("timed out waiting for %s (goroutines: %d)", what, runtime.NumGoroutine())
		case <-tick.C:
		}
	}
}

func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s)
	for range 10 {
		st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "reuse"))
		if err != nil {
			t.Fatal(err)
		}
		if r := collect(t, st); r.err != nil {
			t.Fatal(r.err)
		}
		if _, err := c.Chat(t.Context(), userReq("gpt-4o", "reuse")); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Connections(); n != 1 {
		t.Errorf("20 sequential requests used %d connections, want 1", n)
	}
}

func TestAzureBaseURL(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s, func(cfg *openai.Config) {
		cfg.BaseURL = s.RootURL() + "/openai/deployments/gpt-4o/?api-version=2024-10-21"
	})
	if _, err := c.Chat(t.Context(), userReq("gpt-4o", "azure")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Embed(t.Context(), "text-embedding-3-small", []string{"azure"}); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	for i, wantPath := range []string{"/openai/deployments/gpt-4o/chat/completions", "/openai/deployments/gpt-4o/embeddings"} {
		r := reqs[i]
		if r.Path != wantPath || r.RawQuery != "api-version=2024-10-21" {
			t.Errorf("request %d: %s?%s, want %s?api-version=2024-10-21", i, r.Path, r.RawQuery, wantPath)
		}
		if r.Header.Get("Api-Key") != openaitest.DefaultAPIKey {
			t.Errorf("request %d: api-key header = %q", i, r.Header.Get("Api-Key"))
		}
	}
}

func TestKeylessServer(t *testing.T) {
	t.Parallel()
	s := newFake(t, openaitest.WithAPIKey(""), openaitest.WithModels())
	c := newClient(t, s, func(cfg *openai.Config) { cfg.APIKey = "" })
	resp, err := c.Chat(t.Context(), userReq("llama3.2:3b", "local"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Echo: local" {
		t.Errorf("content %q", resp.Content)
	}
	if h := s.Requests()[0].Header; h.Get("Authorization") != "" || h.Get("Api-Key") != "" {
		t.Errorf("auth headers sent without a key: %v", h)
	}
}

func TestStreamOptionsRejected(t *testing.T) {
	t.Parallel()
	s := newFake(t, openaitest.WithRejectStreamOptions())
	c := newClient(t, s)
	for i := range 2 {
		st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "old vllm"))
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		r := collect(t, st)
		if r.err != nil || strings.Join(r.deltas, "") != "Echo: old vllm" {
			t.Fatalf("stream %d: %q, %v", i, r.deltas, r.err)
		}
		if r.final.Usage != nil {
			t.Errorf("stream %d: usage %+v reported without stream_options", i, r.final.Usage)
		}
	}
	reqs := s.Requests()
	var withOpts []bool
	for _, r := range reqs {
		withOpts = append(withOpts, r.StreamOptions)
	}
	// First stream: rejected, then retried without; second: skips it.
	if !slices.Equal(withOpts, []bool{true, false, false}) {
		t.Fatalf("stream_options per request = %v", withOpts)
	}
	// A 400 for another reason is not retried.
	plain := newFake(t)
	plain.On("bad temp", openaitest.Reply{Status: 400, ErrorMessage: "temperature must be <= 2"})
	if _, err := newClient(t, plain).ChatStream(t.Context(), userReq("gpt-4o", "bad temp")); err == nil {
		t.Fatal("expected an error")
	}
	if n := len(plain.Requests()); n != 1 {
		t.Errorf("%d requests for a plain 400, want 1", n)
	}
}

func TestEmbed(t *testing.T) {
	t.Parallel()
	s := newFake(t, openaitest.WithEmbeddingDim(64))
	c := newClient(t, s)
	inputs := []string{"first document", "second document", "日本語"}
	vecs, usage, err := c.Embed(t.Context(), "text-embedding-3-small", inputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(inputs) {
		t.Fatalf("%d vectors", len(vecs))
	}
	for i, in := range inputs {
		want := make([]float32, 64)
		openaitest.Embedding(in, want)
		if !slices.Equal(vecs[i], want) {
			t.Errorf("vector %d differs from openaitest.Embedding(%q)", i, in)
		}
	}
	wantTokens := tokens.Count(inputs[0]) + tokens.Count(inputs[1]) + tokens.Count(inputs[2])
	if usage == nil || usage.PromptTokens != wantTokens || usage.CompletionTokens != 0 {
		t.Errorf("usage = %+v, want %d prompt tokens", usage, wantTokens)
	}
	if r := s.Requests()[0]; r.Path != "/v1/embeddings" || !slices.Equal(r.Input, inputs) {
		t.Errorf("request %s input %q", r.Path, r.Input)
	}
	if v, u, err := c.Embed(t.Context(), "text-embedding-3-small", nil); err != nil || len(v) != 0 || u != nil {
		t.Errorf("empty input: %v %v %v", v, u, err)
	}
	if _, _, err := c.Embed(t.Context(), "no-such-embedder", inputs); providers.KindOf(err) != providers.KindModel {
		t.Errorf("unknown model: %v", err)
	}
}

// TestEmbedOrderAndOddServers uses hand-written upstreams for shapes the
// fake does not produce.
func TestEmbedOrderAndOddServers(t *testing.T) {
	t.Parallel()
	serve := func(body string) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	tests := []struct {
		name  string
		body  string
		want  [][]float32
		usage *providers.Usage
		kind  providers.Kind
	}{
		{
			name:  "out of order",
			body:  `{"data":[{"index":2,"embedding":[3]},{"index":0,"embedding":[1]},{"index":1,"embedding":[2]}],"usage":{"prompt_tokens":5,"total_tokens":5}}`,
			want:  [][]float32{{1}, {2}, {3}},
			usage: &providers.Usage{PromptTokens: 5},
		},
		{
			name: "no index, no usage",
			body: `{"data":[{"embedding":[1]},{"embedding":[2]},{"embedding":[3]}]}`,
			want: [][]float32{{1}, {2}, {3}},
		},
		{
			name:  "total only",
			body:  `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[2]},{"index":2,"embedding":[3]}],"usage":{"total_tokens":9}}`,
			want:  [][]float32{{1}, {2}, {3}},
			usage: &providers.Usage{PromptTokens: 9},
		},
		{name: "too few", body: `{"data":[{"index":0,"embedding":[1]}]}`, kind: providers.KindInvocation},
		{name: "not JSON", body: `<html>`, kind: providers.KindInvocation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := openai.New(openai.Config{BaseURL: serve(tt.body)})
			vecs, usage, err := c.Embed(t.Context(), "m", []string{"a", "b", "c"})
			if tt.kind != "" {
				if providers.KindOf(err) != tt.kind {
					t.Fatalf("err = %v, want kind %s", err, tt.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(vecs, tt.want) || !reflect.DeepEqual(usage, tt.usage) {
				t.Fatalf("got %v %+v", vecs, usage)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := openai.New(openai.Config{BaseURL: "http://" + addr + "/v1", APIKey: "sk-secret-value-1234"})
	_, err = c.Chat(t.Context(), userReq("gpt-4o", "hi"))
	e, ok := errors.AsType[*providers.Error](err)
	if !ok || e.Kind != providers.KindInvocation || e.StatusCode != 0 || e.Message != "[openai] connection error" {
		t.Fatalf("err = %#v", err)
	}
	if _, err := c.ChatStream(t.Context(), userReq("gpt-4o", "hi")); providers.KindOf(err) != providers.KindInvocation {
		t.Fatalf("stream err = %v", err)
	}
}

func TestBadBaseURL(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "api.openai.com/v1", "ftp://x/v1", "http://[::1"} {
		c := openai.New(openai.Config{BaseURL: base})
		if _, err := c.Chat(t.Context(), userReq("m", "x")); providers.KindOf(err) != providers.KindInvocation {
			t.Errorf("%q: err = %v", base, err)
		}
	}
}

func TestMalformedResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ctype  string
		body   string
		stream bool
		check  func(t *testing.T, resp *providers.ChatResponse, r streamResult, err error)
	}{
		{
			name: "blocking garbage", body: `{"choices": [`,
			check: func(t *testing.T, _ *providers.ChatResponse, _ streamResult, err error) {
				if providers.KindOf(err) != providers.KindInvocation {
					t.Fatalf("err = %v", err)
				}
			},
		},
		{
			name: "blocking no choices", body: `{"choices": []}`,
			check: func(t *testing.T, _ *providers.ChatResponse, _ streamResult, err error) {
				if providers.KindOf(err) != providers.KindInvocation {
					t.Fatalf("err = %v", err)
				}
			},
		},
		{
			name: "blocking 200 with error member", body: `{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}`,
			check: func(t *testing.T, _ *providers.ChatResponse, _ streamResult, err error) {
				if providers.KindOf(err) != providers.KindQuota {
					t.Fatalf("err = %v", err)
				}
			},
		},
		{
			name: "blocking content parts and object arguments",
			body: `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],` +
				`"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"x":1}}}]},"finish_reason":"tool_calls"}]}`,
			check: func(t *testing.T, resp *providers.ChatResponse, _ streamResult, err error) {
				if err != nil {
					t.Fatal(err)
				}
				want := &providers.ChatResponse{Content: "ab", FinishReason: "tool_calls",
					ToolCalls: []providers.ToolCall{{ID: "c1", Name: "f", Arguments: `{"x":1}`}}}
				if !reflect.DeepEqual(resp, want) {
					t.Fatalf("resp = %+v", resp)
				}
			},
		},
		{
			name: "stream bad chunk", stream: true, ctype: "text/event-stream",
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json}\n\n",
			check: func(t *testing.T, _ *providers.ChatResponse, r streamResult, err error) {
				if err != nil || providers.KindOf(r.err) != providers.KindInvocation || !slices.Equal(r.deltas, []string{"a"}) {
					t.Fatalf("err = %v, r = %+v", err, r)
				}
			},
		},
		{
			name: "stream error event", stream: true, ctype: "text/event-stream",
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"Rate limit reached\",\"type\":\"rate_limit_error\"}}\n\n",
			check: func(t *testing.T, _ *providers.ChatResponse, r streamResult, err error) {
				if err != nil || providers.KindOf(r.err) != providers.KindQuota || !strings.Contains(r.err.Error(), "Rate limit reached") {
					t.Fatalf("err = %v, r = %+v", err, r)
				}
			},
		},
		{
			name: "stream finish without [DONE] is complete", stream: true, ctype: "text/event-stream",
			body: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n",
			check: func(t *testing.T, _ *providers.ChatResponse, r streamResult, err error) {
				if err != nil || r.err != nil || r.final.FinishReason != "stop" || !slices.Equal(r.deltas, []string{"a"}) {
					t.Fatalf("err = %v, r = %+v", err, r)
				}
			},
		},
		{
			name: "stream empty body", stream: true, ctype: "text/event-stream", body: "",
			check: func(t *testing.T, _ *providers.ChatResponse, r streamResult, err error) {
				if err != nil || !errors.Is(r.err, providers.ErrTruncated) {
					t.Fatalf("err = %v, r = %+v", err, r)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", cmpOr(tt.ctype, "application/json"))
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(ts.Close)
			c := openai.New(openai.Config{BaseURL: ts.URL})
			if !tt.stream {
				resp, err := c.Chat(t.Context(), userReq("m", "x"))
				tt.check(t, resp, streamResult{}, err)
				return
			}
			st, err := c.ChatStream(t.Context(), userReq("m", "x"))
			var r streamResult
			if err == nil {
				r = collect(t, st)
			}
			tt.check(t, nil, r, err)
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestManyConcurrentStreams(t *testing.T) {
	t.Parallel()
	s := newFake(t, openaitest.WithoutRequestLog())
	c := newClient(t, s)
	const n = 200
	errs := make(chan error, n)
	for i := range n {
		go func() {
			st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "concurrent stream number "+string(rune('a'+i%26))))
			if err != nil {
				errs <- err
				return
			}
			defer st.Close()
			var sb strings.Builder
			for {
				ch, err := st.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					errs <- err
					return
				}
				sb.WriteString(ch.Delta)
			}
			if !strings.HasPrefix(sb.String(), "Echo: concurrent stream number") {
				errs <- errors.New("bad content " + sb.String())
				return
			}
			errs <- nil
		}()
	}
	timer := time.NewTimer(recvTimeout)
	defer timer.Stop()
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-timer.C:
			t.Fatal("concurrent streams did not finish")
		}
	}
}

// TestSlowConsumerIsNotIdle: the idle timeout measures upstream silence
// while waiting for data, not time spent by the caller between Recv calls.
func TestSlowConsumerIsNotIdle(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s, func(cfg *openai.Config) {
		cfg.Timeout = 5 * time.Second
		cfg.StreamIdleTimeout = 100 * time.Millisecond
	})
	st, err := c.ChatStream(t.Context(), userReq("gpt-4o", "a b c"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text string
	for {
		// Simulate a slow downstream client.
		pause := time.NewTimer(300 * time.Millisecond)
		<-pause.C
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv after a pause: %v", err)
		}
		text += ch.Delta
	}
	if text != "Echo: a b c" {
		t.Fatalf("text %q", text)
	}
}

func TestCallerDeadline(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("slow", openaitest.Reply{FirstByteDelay: 30 * time.Second})
	c := newClient(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Chat(ctx, userReq("gpt-4o", "slow"))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, providers.ErrTimeout) || providers.KindOf(err) != providers.KindInvocation {
		t.Fatalf("err = %v, want the caller's DeadlineExceeded", err)
	}
}
