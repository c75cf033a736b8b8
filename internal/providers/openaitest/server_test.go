package openaitest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/providers"
)

func newServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s := NewServer(opts...)
	t.Cleanup(s.Close)
	return s
}

// post sends a raw request the way any OpenAI client would.
func post(t *testing.T, s *Server, path, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.RootURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const chatBody = `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello big world"}]`

func TestBlockingWireFormat(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	resp := post(t, s, "/v1/chat/completions", DefaultAPIKey, chatBody+`}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens, CompletionTokens, TotalTokens int
		} `json:"usage"`
	}
	dec := json.NewDecoder(resp.Body)
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.ID, "chatcmpl-") || got.Object != "chat.completion" || got.Created == 0 || got.Model != "gpt-4o" {
		t.Errorf("envelope %+v", got)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" || *got.Choices[0].Message.Content != "Echo: hello big world" ||
		got.Choices[0].FinishReason != "stop" {
		t.Errorf("choices %+v", got.Choices)
	}
}

// TestStreamWireFormat pins OpenAI's SSE framing byte for byte (modulo
// id/created): role chunk, one chunk per word, finish chunk, usage chunk
// with empty choices and "usage":null on the others, then [DONE].
func TestStreamWireFormat(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, tt := range []struct {
		name, extra string
		usage       bool
	}{
		{"with usage", `,"stream":true,"stream_options":{"include_usage":true}}`, true},
		{"without usage", `,"stream":true}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, s, "/v1/chat/completions", DefaultAPIKey, chatBody+tt.extra)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			body := readAll(t, resp.Body)
			if !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Fatalf("no [DONE]: %q", body)
			}
			events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
			var deltas []string
			var id string
			for i, ev := range events[:len(events)-1] {
				data, ok := strings.CutPrefix(ev, "data: ")
				if !ok || strings.Contains(data, "\n") {
					t.Fatalf("event %d is not one data line: %q", i, ev)
				}
				var c struct {
					ID      string `json:"id"`
					Object  string `json:"object"`
					Created int64  `json:"created"`
					Model   string `json:"model"`
					Choices []struct {
						Index int `json:"index"`
						Delta struct {
							Role    string  `json:"role"`
							Content *string `json:"content"`
						} `json:"delta"`
						FinishReason *string `json:"finish_reason"`
					} `json:"choices"`
					Usage *struct {
						PromptTokens     int `json:"prompt_tokens"`
						CompletionTokens int `json:"completion_tokens"`
						TotalTokens      int `json:"total_tokens"`
					} `json:"usage"`
				}
				if err := json.Unmarshal([]byte(data), &c); err != nil {
					t.Fatalf("event %d: %v: %s", i, err, data)
				}
				if c.Object != "chat.completion.chunk" || c.Model != "gpt-4o" || c.Created == 0 || c.ID == "" || (id != "" && c.ID != id) {
					t.Fatalf("event %d envelope: %s", i, data)
				}
				id = c.ID
				if strings.Contains(data, `"usage":null`) != (tt.usage && len(c.Choices) > 0) {
					t.Errorf("event %d: usage:null presence wrong: %s", i, data)
				}
				switch {
				case i == 0:
					if c.Choices[0].Delta.Role != "assistant" || *c.Choices[0].Delta.Content != "" {
						t.Errorf("first event is not the role chunk: %s", data)
					}
				case len(c.Choices) == 0:
					if !tt.usage || i != len(events)-2 || c.Usage == nil || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens {
						t.Errorf("usage chunk misplaced or wrong: %s", data)
					}
				case c.Choices[0].FinishReason != nil:
					if *c.Choices[0].FinishReason != "stop" || c.Choices[0].Delta.Content != nil {
						t.Errorf("finish chunk: %s", data)
					}
				default:
					deltas = append(deltas, *c.Choices[0].Delta.Content)
				}
			}
			if want := []string{"Echo:", " hello", " big", " world"}; !slices.Equal(deltas, want) {
				t.Errorf("deltas %q, want %q", deltas, want)
			}
			wantEvents := 1 + 4 + 1 + 1 // role, words, finish, [DONE]
			if tt.usage {
				wantEvents++
			}
			if len(events) != wantEvents {
				t.Errorf("%d events, want %d", len(events), wantEvents)
			}
		})
	}
}

func TestStreamToolCallWire(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.On("tools", Reply{ToolCalls: []providers.ToolCall{{Name: "lookup", Arguments: `{"q":"golang"}`}}})
	resp := post(t, s, "/v1/chat/completions", DefaultAPIKey,
		`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"use tools"}]}`)
	body := readAll(t, resp.Body)
	for _, want := range []string{
		`"delta":{"role":"assistant","content":null,"refusal":null}`,
		`"delta":{"tool_calls":[{"index":0,"id":"call_1_0","type":"function","function":{"name":"lookup","arguments":""}}]}`,
		`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}`,
		`"delta":{},"logprobs":null,"finish_reason":"tool_calls"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("stream lacks %s\n%s", want, body)
		}
	}
}

func TestAuthAndModels(t *testing.T) {
	t.Parallel()
	s := newServer(t, WithAPIKey("sk-right-key-000"), WithModels("m1", "e1"))
	tests := []struct {
		name, path, key, body string
		status                int
		code                  any
	}{
		{"no key", "/v1/chat/completions", "", `{"model":"m1","messages":[{"role":"user","content":"x"}]}`, 401, nil},
		{"wrong key", "/v1/chat/completions", "sk-wrong-key-111", `{"model":"m1","messages":[{"role":"user","content":"x"}]}`, 401, "invalid_api_key"},
		{"unknown model", "/v1/chat/completions", "sk-right-key-000", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found"},
		{"ok", "/v1/chat/completions", "sk-right-key-000", `{"model":"m1","messages":[{"role":"user","content":"x"}]}`, 200, nil},
		{"embeddings unknown model", "/v1/embeddings", "sk-right-key-000", `{"model":"m9","input":"x"}`, 404, "model_not_found"},
		{"bad JSON", "/v1/chat/completions", "sk-right-key-000", `{"model":`, 400, nil},
		{"no messages", "/v1/chat/completions", "sk-right-key-000", `{"model":"m1","messages":[]}`, 400, nil},
		{"bad role", "/v1/chat/completions", "sk-right-key-000", `{"model":"m1","messages":[{"role":"robot","content":"x"}]}`, 400, nil},
		{"tool without id", "/v1/chat/completions", "sk-right-key-000", `{"model":"m1","messages":[{"role":"tool","content":"x"}]}`, 400, nil},
		{"stream_options without stream", "/v1/chat/completions", "sk-right-key-000",
			`{"model":"m1","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, 400, nil},
		{"unknown path", "/v1/completions", "sk-right-key-000", `{}`, 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, s, tt.path, tt.key, tt.body)
			body := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.status == 200 {
				return
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    any    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("error body %s (%v)", body, err)
			}
			if e.Error.Code != tt.code {
				t.Errorf("code %v, want %v", e.Error.Code, tt.code)
			}
			if strings.Contains(body, "sk-wrong-key-111") {
				t.Error("401 echoes the full key")
			}
		})
	}
	// Azure's api-key header is accepted too.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+"/models", nil)
	req.Header.Set("api-key", "sk-right-key-000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 || list.Object != "list" ||
		len(list.Data) != 2 || list.Data[0].ID != "m1" || list.Data[1].Object != "model" {
		t.Fatalf("models: %d %+v %v", resp.StatusCode, list, err)
	}
}

func TestScriptedErrors(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.On("raw", Reply{Status: 503, ErrorBody: `upstream overloaded`})
	s.On("custom", Reply{Status: 400, ErrorMessage: "nope", ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded"})
	for _, tt := range []struct{ text, want string }{
		{"raw", "upstream overloaded"},
		{"custom", `{"error":{"code":"context_length_exceeded","message":"nope","param":null,"type":"invalid_request_error"}}`},
	} {
		for _, stream := range []string{"false", "true"} {
			resp := post(t, s, "/v1/chat/completions", DefaultAPIKey,
				`{"model":"gpt-4o","stream":`+stream+`,"messages":[{"role":"user","content":"`+tt.text+`"}]}`)
			if body := readAll(t, resp.Body); resp.StatusCode < 400 || body != tt.want {
				t.Errorf("%s stream=%s: %d %s", tt.text, stream, resp.StatusCode, body)
			}
		}
	}
}

func TestRequestsAndReset(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	post(t, s, "/v1/chat/completions", DefaultAPIKey,
		`{"model":"gpt-4o","temperature":0.5,"user":"u","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]}]}`)
	post(t, s, "/v1/chat/completions", "", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`)
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	wantMsgs := []providers.Message{{Role: "user", Parts: []providers.Part{
		{Type: "text", Text: "look"}, {Type: "image_url", ImageURL: "https://x/y.png", Detail: "low"}}}}
	if r.Model != "gpt-4o" || r.Params["temperature"] != 0.5 || r.Params["user"] != "u" || r.LastUserMessage() != "look" {
		t.Errorf("decoded %+v", r)
	}
	if len(r.Messages) != 1 || !slices.Equal(r.Messages[0].Parts, wantMsgs[0].Parts) {
		t.Errorf("messages %+v", r.Messages)
	}
	if reqs[1].Header.Get("Authorization") != "" {
		t.Error("second request should have no key (and was still recorded)")
	}
	s.On("x", Reply{Text: "scripted"})
	s.Reset()
	if len(s.Requests()) != 0 {
		t.Error("Reset kept requests")
	}
	resp := post(t, s, "/v1/chat/completions", DefaultAPIKey, `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`)
	if body := readAll(t, resp.Body); !strings.Contains(body, `"Echo: x"`) {
		t.Errorf("Reset kept rules: %s", body)
	}
}

func TestEmbeddingsWire(t *testing.T) {
	t.Parallel()
	s := newServer(t, WithEmbeddingDim(8))
	resp := post(t, s, "/v1/embeddings", DefaultAPIKey, `{"model":"text-embedding-3-small","input":["a","b"]}`)
	var got struct {
		Object string `json:"object"`
		Data   []struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "list" || len(got.Data) != 2 || got.Data[1].Index != 1 || got.Data[0].Object != "embedding" ||
		got.Model != "text-embedding-3-small" || got.Usage.PromptTokens != 2 || got.Usage.TotalTokens != 2 {
		t.Fatalf("response %+v", got)
	}
	for i, in := range []string{"a", "b"} {
		want := make([]float32, 8)
		Embedding(in, want)
		if !slices.Equal(got.Data[i].Embedding, want) {
			t.Errorf("vector %d = %v, want %v", i, got.Data[i].Embedding, want)
		}
	}

	// base64 (the OpenAI Python SDK's default) and dimensions.
	resp = post(t, s, "/v1/embeddings", DefaultAPIKey, `{"model":"text-embedding-3-small","input":"a","encoding_format":"base64","dimensions":4}`)
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b64); err != nil || len(b64.Data) != 1 {
		t.Fatalf("base64 response: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	if err != nil || len(raw) != 16 {
		t.Fatalf("base64 payload: %v, %d bytes", err, len(raw))
	}
	want := make([]float32, 4)
	Embedding("a", want)
	for i := range want {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); v != want[i] {
			t.Errorf("base64 component %d = %v, want %v", i, v, want[i])
		}
	}
}

func TestEmbeddingDeterministicUnitLength(t *testing.T) {
	t.Parallel()
	a, b, c := make([]float32, 256), make([]float32, 256), make([]float32, 256)
	Embedding("same text", a)
	Embedding("same text", b)
	Embedding("unrelated words", c)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatal("not deterministic per text")
	}
	var norm, dot float64
	for i := range a {
		norm += float64(a[i]) * float64(a[i])
		dot += float64(a[i]) * float64(c[i])
	}
	if math.Abs(norm-1) > 1e-5 || math.Abs(dot) > 0.3 {
		t.Errorf("norm² %v, cosine with other text %v", norm, dot)
	}
}

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot
}

// TestEmbeddingSemantic pins the bag-of-words behaviour that lets
// retrieval tests expect texts sharing words to be neighbours.
func TestEmbeddingSemantic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b     string
		min, max float64
	}{
		{"The quick brown fox", "the QUICK, brown fox!", 1 - 1e-6, 1 + 1e-6}, // same words, case and punctuation ignored
		{"fox brown quick the", "the quick brown fox", 1 - 1e-6, 1 + 1e-6},   // word order ignored
		{"机器学习", "学习机器", 1 - 1e-6, 1 + 1e-6},                                 // one word per Han character
		{"apple banana cherry", "apple banana durian", 0.45, 0.9},            // 2 of 3 words shared: about 2/3
		{"apple banana cherry", "apple kiwi mango", 0.1, 0.6},                // 1 of 3: about 1/3
		{"Straße café naïve", "straße CAFÉ naïve", 1 - 1e-6, 1 + 1e-6},       // Unicode lower-casing
		{"apple banana cherry", "granite volcano river", -0.2, 0.2},
		{"知识库检索", "apple banana", -0.2, 0.2},
		{"!!!", "???", -0.3, 0.3}, // no words: whole-text hashing
	}
	for _, dim := range []int{256, 1536} {
		for _, tt := range tests {
			a, b := make([]float32, dim), make([]float32, dim)
			Embedding(tt.a, a)
			Embedding(tt.b, b)
			if c := cosine(a, b); c < tt.min || c > tt.max {
				t.Errorf("dim %d: cosine(%q, %q) = %.3f, want in [%.2f, %.2f]", dim, tt.a, tt.b, c, tt.min, tt.max)
			}
			for _, v := range [][]float32{a, b} {
				if n := cosine(v, v); math.Abs(n-1) > 1e-5 {
					t.Errorf("dim %d: |v|² = %v", dim, n)
				}
			}
		}
	}
	// A word repeated weighs more: "apple apple kiwi" leans to "apple".
	q, x, y := make([]float32, 512), make([]float32, 512), make([]float32, 512)
	Embedding("apple apple kiwi", q)
	Embedding("apple", x)
	Embedding("kiwi", y)
	if cosine(q, x) <= cosine(q, y)+0.2 {
		t.Errorf("repeated word not weighted: %.3f vs %.3f", cosine(q, x), cosine(q, y))
	}
	// Tiny dimensions (tests use 4 and 8) still give unit vectors.
	for _, dim := range []int{1, 4, 8} {
		v := make([]float32, dim)
		Embedding("hello world", v)
		if n := cosine(v, v); math.Abs(n-1) > 1e-5 {
			t.Errorf("dim %d: |v|² = %v", dim, n)
		}
	}
	Embedding("anything", nil) // no panic
}

func TestForEachWord(t *testing.T) {
	t.Parallel()
	hash := func(w string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(w))
		return h.Sum64()
	}
	tests := map[string][]string{
		"":                         nil,
		" ,;! ":                    nil,
		"Hello, World":             {"hello", "world"},
		"GPT-4o costs $2.50":       {"gpt", "4o", "costs", "2", "50"},
		"ÉCOLE naïve":              {"école", "naïve"},
		"知识库 search":               {"知", "识", "库", "search"},
		"日本語のテキスト":                 {"日", "本", "語", "の", "テ", "キ", "ス", "ト"},
		"한국어 문장":                   {"한국어", "문장"},
		"x\u0301y":                 {"x\u0301y"}, // a combining mark continues the word
		"e\u0301 is e with accent": {"e\u0301", "is", "e", "with", "accent"},
	}
	for in, words := range tests {
		var got []uint64
		n := forEachWord(in, func(h uint64) { got = append(got, h) })
		var want []uint64
		for _, w := range words {
			want = append(want, hash(w))
		}
		if n != len(want) || !slices.Equal(got, want) {
			t.Errorf("forEachWord(%q) gave %d hashes, want those of %q", in, n, words)
		}
	}
}

func TestOverlap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		q, d string
		want float64
	}{
		{"cat on mat", "the cat sat on the mat", 1},
		{"cat cat on mat", "a cat", 1.0 / 3},
		{"Cat", "CAT CAT", 1},
		{"cat", "dog", 0},
		{"...", "anything", 0},
		{"向量检索", "检索", 0.5},
	}
	for _, tt := range tests {
		if got := Overlap(tt.q, tt.d); got != tt.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", tt.q, tt.d, got, tt.want)
		}
	}
}

func TestRerankWire(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.On("overloaded", Reply{Status: 503})
	type result struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
		Document       *struct {
			Text string `json:"text"`
		} `json:"document"`
	}
	type response struct {
		Model   string   `json:"model"`
		Results []result `json:"results"`
		Usage   *struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	m := `"model":"` + DefaultRerankModel + `"`
	tests := []struct {
		name, key, body string
		status          int
		want            []result
	}{
		{"strings, top_n", DefaultAPIKey, `{` + m + `,"query":"red apple","documents":["green pear","red apple pie","apple"],"top_n":2}`,
			200, []result{{Index: 1, RelevanceScore: 1}, {Index: 2, RelevanceScore: 0.5}}},
		{"objects, no top_n", DefaultAPIKey, `{` + m + `,"query":"red apple","documents":[{"text":"green pear"},{"text":"red"}]}`,
			200, []result{{Index: 1, RelevanceScore: 0.5}, {Index: 0, RelevanceScore: 0}}},
		{"top_n beyond documents", DefaultAPIKey, `{` + m + `,"query":"x","documents":["y"],"top_n":10}`,
			200, []result{{Index: 0, RelevanceScore: 0}}},
		{"no key", "", `{` + m + `,"query":"x","documents":["y"]}`, 401, nil},
		{"unknown model", DefaultAPIKey, `{"model":"nope","query":"x","documents":["y"]}`, 404, nil},
		{"no query", DefaultAPIKey, `{` + m + `,"documents":["y"]}`, 400, nil},
		{"no documents", DefaultAPIKey, `{` + m + `,"query":"x"}`, 400, nil},
		{"empty documents", DefaultAPIKey, `{` + m + `,"query":"x","documents":[]}`, 400, nil},
		{"bad document", DefaultAPIKey, `{` + m + `,"query":"x","documents":[1]}`, 400, nil},
		{"top_n zero", DefaultAPIKey, `{` + m + `,"query":"x","documents":["y"],"top_n":0}`, 400, nil},
		{"scripted error", DefaultAPIKey, `{` + m + `,"query":"x","documents":["overloaded"]}`, 503, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, s, "/v1/rerank", tt.key, tt.body)
			body := readAll(t, resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.status != 200 {
				if !strings.Contains(body, `"error"`) {
					t.Errorf("error body %s", body)
				}
				return
			}
			var got response
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			if got.Model != DefaultRerankModel || got.Usage == nil || got.Usage.TotalTokens == 0 || got.Usage.PromptTokens != got.Usage.TotalTokens {
				t.Errorf("envelope %s", body)
			}
			if !reflect.DeepEqual(got.Results, tt.want) {
				t.Errorf("results %s, want %+v", body, tt.want)
			}
		})
	}

	// return_documents, scripted usage and NoUsage.
	s.On("scripted-usage", Reply{Usage: &providers.Usage{PromptTokens: 7}})
	s.On("no-usage", Reply{NoUsage: true})
	resp := post(t, s, "/v1/rerank", DefaultAPIKey, `{`+m+`,"query":"scripted-usage","documents":["a b"],"return_documents":true}`)
	var got response
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Results) != 1 || got.Results[0].Document == nil ||
		got.Results[0].Document.Text != "a b" || got.Usage == nil || got.Usage.TotalTokens != 7 {
		t.Errorf("return_documents / usage: %+v %v", got, err)
	}
	resp = post(t, s, "/v1/rerank", DefaultAPIKey, `{`+m+`,"query":"no-usage","documents":["a"]}`)
	body := readAll(t, resp.Body)
	if strings.Contains(body, "usage") || strings.Contains(body, "document") {
		t.Errorf("NoUsage: %s", body)
	}
}

func TestSplitWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 1, nil},
		{"one", 1, []string{"one"}},
		{"Echo: hello world", 1, []string{"Echo:", " hello", " world"}},
		{"a b c d e", 2, []string{"a b", " c d", " e"}},
		{"  lead  and\ntrail  ", 1, []string{"  lead", "  and", "\ntrail  "}},
	}
	for _, tt := range tests {
		got := splitWords(tt.in, tt.n)
		if !slices.Equal(got, tt.want) || strings.Join(got, "") != tt.in {
			t.Errorf("splitWords(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "new\nline\r\ttab", "\x00\x01\x1f\x7f", "ünïcødé 日本語 😀",
		"bad utf8 \xff\xfe end", "line sep \u2028 para \u2029", "<html>&amp;</html>",
	} {
		got := jsonenc.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("jsonenc.AppendString(%q) = %s is not JSON: %v", s, got, err)
			continue
		}
		ref, _ := json.Marshal(s)
		var want string
		_ = json.Unmarshal(ref, &want)
		if back != want {
			t.Errorf("round trip of %q = %q", s, back)
		}
		if !utf8.Valid(got) {
			t.Errorf("jsonenc.AppendString(%q) produced invalid UTF-8", s)
		}
	}
}

// TestCloseAbortsHangingStreams: Close must not wait for clients.
func TestCloseAbortsHangingStreams(t *testing.T) {
	t.Parallel()
	s := NewServer()
	s.On("hang", Reply{HangAfterChunks: 1, Text: "a b c"})
	resp := post(t, s, "/v1/chat/completions", DefaultAPIKey, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hang"}]}`)
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the role chunk arrived
		t.Fatal(err)
	}
	if s.ActiveStreams() != 1 {
		t.Errorf("ActiveStreams = %d, want 1", s.ActiveStreams())
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case <-closed:
	case <-timer.C:
		t.Fatal("Close waited for a hanging stream")
	}
	if s.ActiveStreams() != 0 {
		t.Errorf("ActiveStreams after Close = %d", s.ActiveStreams())
	}
	rest, _ := io.ReadAll(br)
	if bytes.Contains(rest, []byte("[DONE]")) {
		t.Error("an aborted stream ended with [DONE]")
	}
}

// BenchmarkEmbedding embeds a typical 200-word chunk: knowledge benchmarks
// embed ~100k of them through the fake.
func BenchmarkEmbedding(b *testing.B) {
	text := strings.Repeat("Parley indexes knowledge base documents into chunks, embeds them and retrieves the nearest ones. ", 15)
	for _, dim := range []int{256, 1536} {
		b.Run(strconv.Itoa(dim), func(b *testing.B) {
			b.ReportAllocs()
			vec := make([]float32, dim)
			for b.Loop() {
				Embedding(text, vec)
			}
		})
	}
}

func TestHangingStreamKeepAlive(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.On("think", Reply{HangAfterChunks: 1, Text: "a b c", KeepAlive: 10 * time.Millisecond})
	resp := post(t, s, "/v1/chat/completions", DefaultAPIKey, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"think"}]}`)
	sc := bufio.NewScanner(resp.Body)
	var contents, comments int
	for sc.Scan() && comments < 3 {
		line := sc.Text()
		switch {
		case line == ": keep-alive":
			comments++
		case strings.Contains(line, `"content":"a"`):
			contents++
		case strings.HasPrefix(line, "data: ") && (strings.Contains(line, `"content":" b"`) || strings.Contains(line, "[DONE]")):
			t.Fatalf("a hanging stream went on: %s", line)
		}
	}
	if contents != 1 || comments != 3 {
		t.Fatalf("content chunks %d, keep-alive comments %d; scan error %v", contents, comments, sc.Err())
	}
}

// TestOnEachRepliesInTurn: the matching requests of an OnEach rule get its replies in order, the
// last one repeating; other requests keep the default.
func TestOnEachRepliesInTurn(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.OnEach("big", Reply{Text: "one"}, Reply{Text: "two"})
	content := func(body string) string {
		t.Helper()
		var got struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(post(t, s, "/v1/chat/completions", DefaultAPIKey, body).Body).Decode(&got); err != nil || len(got.Choices) != 1 {
			t.Fatalf("answer %+v, %v", got, err)
		}
		return got.Choices[0].Message.Content
	}
	other := `{"model":"gpt-4o","messages":[{"role":"user","content":"small"}]}`
	var seq []string
	for _, body := range []string{chatBody + `}`, other, chatBody + `}`, chatBody + `}`} {
		seq = append(seq, content(body))
	}
	if got := strings.Join(seq, "|"); got != "one|Echo: small|two|two" {
		t.Fatalf("replies %s", got)
	}
}

// TestOnRequestReadsTheConversation: a request rule answers from the whole request (here a tool
// call after the user's message, the answer after the tool's result), in turn with substring
// rules, whatever the order of the requests; requests it declines fall through, and embedding
// requests never reach it.
func TestOnRequestReadsTheConversation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.On("first", Reply{Text: "substring rule"})
	var seen atomic.Int64
	s.OnRequest(func(r *Request) (Reply, bool) {
		seen.Add(1)
		if !strings.Contains(r.LastUserMessage(), "agent") {
			return Reply{}, false
		}
		if last := r.Messages[len(r.Messages)-1]; last.Role == providers.RoleTool {
			return Reply{Text: "It is " + last.Content + "."}, true
		}
		return Reply{ToolCalls: []providers.ToolCall{{ID: "c1", Name: "eval", Arguments: `{"x":"6*7"}`}}}, true
	})
	type answer struct {
		Choices []struct {
			Message struct {
				Content   string
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	ask := func(body string) string {
		t.Helper()
		var got answer
		if err := json.NewDecoder(post(t, s, "/v1/chat/completions", DefaultAPIKey, body).Body).Decode(&got); err != nil || len(got.Choices) != 1 {
			t.Fatalf("answer %+v, %v", got, err)
		}
		m := got.Choices[0].Message
		if len(m.ToolCalls) > 0 {
			return "call " + m.ToolCalls[0].Function.Name + " " + m.ToolCalls[0].Function.Arguments
		}
		return m.Content
	}
	user := `{"model":"gpt-4o","messages":[{"role":"user","content":"agent: six times seven"}]}`
	tool := `{"model":"gpt-4o","messages":[{"role":"user","content":"agent: six times seven"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"eval","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"42"}]}`
	var got []string
	for _, body := range []string{tool, user, tool, user,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"first"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"other"}]}`} {
		got = append(got, ask(body))
	}
	want := `It is 42.|call eval {"x":"6*7"}|It is 42.|call eval {"x":"6*7"}|substring rule|Echo: other`
	if strings.Join(got, "|") != want {
		t.Fatalf("replies %s, want %s", strings.Join(got, "|"), want)
	}
	before := seen.Load()
	post(t, s, "/v1/embeddings", DefaultAPIKey, `{"model":"text-embedding-3-small","input":"agent"}`)
	if seen.Load() != before || before != 5 {
		t.Fatalf("the rule saw %d chat requests (want 5) and %d embedding requests", before, seen.Load()-before)
	}
}
