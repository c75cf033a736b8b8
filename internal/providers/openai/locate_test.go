package openai_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/logctx"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
)

// TestFailedRequestNamesItsURL: a request that fails names, for the log only, the URL it went to,
// with a hint when the base URL looks wrong: a 404 from a base URL without /v1, or a refused
// connection. The message API clients see names neither.
func TestFailedRequestNamesItsURL(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	// A server that answers its API under /v1 only, as Ollama, vLLM and llama.cpp do: Go's
	// "404 page not found" anywhere else.
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	root := httptest.NewServer(mux)
	t.Cleanup(root.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name, base, model string
		status            int
		url, hint         string
	}{
		{"base URL without /v1", root.URL, "gpt-4o", 404, root.URL + "/chat/completions",
			"has no /v1; OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LM Studio) serve the API under /v1: try " + root.URL + "/v1"},
		{"nothing listening", "http://" + closed + "/v1", "gpt-4o", 0, "http://" + closed + "/v1/chat/completions",
			"nothing listens at " + closed},
		{"an unknown model under /v1", s.URL(), "gpt-9", 404, s.URL() + "/chat/completions", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, s, func(cfg *openai.Config) { cfg.BaseURL = tt.base })
			_, err := c.Chat(t.Context(), userReq(tt.model, "hi"))
			e, ok := errors.AsType[*providers.Error](err)
			if !ok {
				t.Fatalf("%v (%T)", err, err)
			}
			if e.StatusCode != tt.status || e.URL != tt.url || (tt.hint == "") != (e.Hint == "") || !strings.Contains(e.Hint, tt.hint) {
				t.Errorf("status %d, url %q, hint %q; want %d %q %q", e.StatusCode, e.URL, e.Hint, tt.status, tt.url, tt.hint)
			}
			if strings.Contains(e.Message, tt.url) || strings.Contains(e.Message, "127.0.0.1") {
				t.Errorf("the client's message names the provider's address: %q", e.Message)
			}

			// Logged through the server's handler, even wrapped, the line carries them.
			var buf bytes.Buffer
			log := slog.New(logctx.NewHandler(slog.NewTextHandler(&buf, nil)))
			log.Warn("run failed", "error", fmt.Errorf("chat: %w", err))
			line := buf.String()
			if !strings.Contains(line, "provider_url="+tt.url) || !strings.Contains(line, "provider_cause=") ||
				(tt.hint != "" && !strings.Contains(line, "hint=")) {
				t.Errorf("log line: %s", line)
			}
		})
	}
}
