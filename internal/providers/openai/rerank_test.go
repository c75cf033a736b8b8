package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/tokens"
)

func TestRerank(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s)
	query := "Cat on mat"
	docs := []string{"dogs bark loudly", "the cat sat on the mat", "a cat and a dog", "MAT"}
	// Overlap scores: 0, 1, 1/3, 1/3; the tie keeps document order.
	all := []providers.RerankResult{{Index: 1, Score: 1}, {Index: 2, Score: 1.0 / 3}, {Index: 3, Score: 1.0 / 3}, {Index: 0, Score: 0}}
	tests := []struct {
		name    string
		topN    int
		want    []providers.RerankResult
		wireTop float64
	}{
		{"top 2", 2, all[:2], 2},
		{"all when 0", 0, all, 4},
		{"all when too many", 9, all, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, usage, err := c.Rerank(t.Context(), openaitest.DefaultRerankModel, query, docs, tt.topN)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("results %v, want %v", got, tt.want)
			}
			for _, r := range got {
				if want := openaitest.Overlap(query, docs[r.Index]); r.Score != want {
					t.Errorf("document %d scored %v, want %v", r.Index, r.Score, want)
				}
			}
			wantTokens := len(docs) * tokens.Count(query)
			for _, d := range docs {
				wantTokens += tokens.Count(d)
			}
			if usage == nil || usage.PromptTokens != wantTokens || usage.CompletionTokens != 0 {
				t.Errorf("usage %+v, want %d prompt tokens", usage, wantTokens)
			}
		})
	}
	for _, r := range s.Requests() {
		if r.Path != "/v1/rerank" || r.Model != openaitest.DefaultRerankModel || r.Params["query"] != query ||
			len(r.Params["documents"].([]any)) != len(docs) || r.Header.Get("Authorization") != "Bearer "+openaitest.DefaultAPIKey {
			t.Errorf("request %s %s %v", r.Path, r.Model, r.Params)
		}
	}
	if got := s.Requests(); got[0].Params["top_n"] != 2.0 || got[1].Params["top_n"] != 4.0 || got[2].Params["top_n"] != 4.0 {
		t.Errorf("top_n sent: %v %v %v", got[0].Params["top_n"], got[1].Params["top_n"], got[2].Params["top_n"])
	}

	n := len(s.Requests())
	if res, u, err := c.Rerank(t.Context(), openaitest.DefaultRerankModel, query, nil, 3); err != nil || len(res) != 0 || res == nil || u != nil {
		t.Errorf("no documents: %v %v %v", res, u, err)
	}
	if len(s.Requests()) != n {
		t.Error("no documents still sent a request")
	}
}

func TestRerankErrors(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("quota", openaitest.Reply{Status: http.StatusTooManyRequests})
	s.On("broken", openaitest.Reply{Status: http.StatusInternalServerError})
	s.On("cut", openaitest.Reply{CutAfterChunks: 1})
	s.On("slow", openaitest.Reply{FirstByteDelay: time.Minute})
	docs := []string{"one", "two"}
	tests := []struct {
		name, model, query, key string
		kind                    providers.Kind
		status                  int
	}{
		{"unknown model", "no-such-reranker", "q", openaitest.DefaultAPIKey, providers.KindModel, 404},
		{"wrong key", openaitest.DefaultRerankModel, "q", "sk-wrong-key-1234", providers.KindCredentials, 401},
		{"quota", openaitest.DefaultRerankModel, "quota", openaitest.DefaultAPIKey, providers.KindQuota, 429},
		{"server error", openaitest.DefaultRerankModel, "broken", openaitest.DefaultAPIKey, providers.KindInvocation, 500},
		{"connection cut", openaitest.DefaultRerankModel, "cut", openaitest.DefaultAPIKey, providers.KindInvocation, 0},
		{"timeout", openaitest.DefaultRerankModel, "slow", openaitest.DefaultAPIKey, providers.KindInvocation, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, s, func(cfg *openai.Config) { cfg.APIKey = tt.key; cfg.Timeout = 500 * time.Millisecond })
			res, u, err := c.Rerank(t.Context(), tt.model, tt.query, docs, 1)
			pe, ok := errors.AsType[*providers.Error](err)
			if !ok || pe.Kind != tt.kind || pe.StatusCode != tt.status || res != nil || u != nil {
				t.Fatalf("got %v %v, err %#v; want kind %s status %d", res, u, err, tt.kind, tt.status)
			}
		})
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := newClient(t, s).Rerank(ctx, openaitest.DefaultRerankModel, "q", docs, 1); providers.KindOf(err) != providers.KindInvocation ||
		!errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRerankOddServers uses hand-written upstreams for shapes the fake does
// not produce.
func TestRerankOddServers(t *testing.T) {
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
		topN  int
		want  []providers.RerankResult
		usage *providers.Usage
		ok    bool
	}{
		{
			name:  "unsorted, Jina usage",
			body:  `{"model":"m","results":[{"index":2,"relevance_score":0.1},{"index":0,"relevance_score":0.9},{"index":1,"relevance_score":0.5}],"usage":{"total_tokens":12}}`,
			want:  []providers.RerankResult{{Index: 0, Score: 0.9}, {Index: 1, Score: 0.5}, {Index: 2, Score: 0.1}},
			usage: &providers.Usage{PromptTokens: 12},
			ok:    true,
		},
		{
			name: "top_n ignored by the server, ties by index",
			body: `{"results":[{"index":2,"relevance_score":0.5},{"index":1,"relevance_score":0.5},{"index":0,"relevance_score":0.1}]}`,
			topN: 2,
			want: []providers.RerankResult{{Index: 1, Score: 0.5}, {Index: 2, Score: 0.5}},
			ok:   true,
		},
		{
			name: "TEI score name, fewer results, negative logits",
			body: `{"results":[{"index":1,"score":-2.5},{"index":0,"score":3}]}`,
			want: []providers.RerankResult{{Index: 0, Score: 3}, {Index: 1, Score: -2.5}},
			ok:   true,
		},
		{name: "empty results", body: `{"results":[]}`, want: []providers.RerankResult{}, ok: true},
		{name: "index out of range", body: `{"results":[{"index":3,"relevance_score":1}]}`},
		{name: "negative index", body: `{"results":[{"index":-1,"relevance_score":1}]}`},
		{name: "duplicate index", body: `{"results":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":0.5}]}`},
		{name: "no index", body: `{"results":[{"relevance_score":1}]}`},
		{name: "no score", body: `{"results":[{"index":0}]}`},
		{name: "too many", body: `{"results":[{"index":0,"relevance_score":1},{"index":1,"relevance_score":1},{"index":2,"relevance_score":1},{"index":0,"relevance_score":1}]}`},
		{name: "no results member", body: `{"data":[]}`},
		{name: "not JSON", body: `<html>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := openai.New(openai.Config{BaseURL: serve(tt.body)})
			got, usage, err := c.Rerank(t.Context(), "m", "q", []string{"a", "b", "c"}, tt.topN)
			if !tt.ok {
				pe, isErr := errors.AsType[*providers.Error](err)
				if !isErr || pe.Kind != providers.KindInvocation || pe.StatusCode != http.StatusOK {
					t.Fatalf("err = %#v, want an invocation error on a 200", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(usage, tt.usage) {
				t.Fatalf("got %v %+v, want %v %+v", got, usage, tt.want, tt.usage)
			}
		})
	}
}
