// Package openaitest is a fake OpenAI-compatible upstream: a real HTTP
// server (httptest) speaking OpenAI's JSON and SSE wire format, with
// scriptable replies and injectable faults. Unit tests, the black-box
// conformance suite (pointing OPENAI_BASE_URL at [Server.URL]) and
// benchmarks all use it.
//
// Endpoints (any path prefix, so Azure-style deployment URLs work too):
// POST …/chat/completions (blocking and streamed), POST …/embeddings,
// POST â¦/rerank (Jina/Cohere shape), POST â¦/moderations, POST â¦/audio/transcriptions and â¦/audio/speech, and GET â¦/models. Every request must carry the API key ("Authorization:
// Bearer <key>" or Azure's "api-key"), and name a known model.
//
// Without rules the chat reply is "Echo: <last user message>", streamed one
// word per chunk, with usage counted by internal/tokens. Rules registered
// with [Server.On] change the reply for requests whose last user message
// contains a substring, those registered with [Server.OnRequest] for
// requests a function accepts; see [Reply] for what can be scripted.
package openaitest

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tokens"
)

// DefaultAPIKey is the key the server accepts unless WithAPIKey says
// otherwise.
const DefaultAPIKey = "sk-test"

// DefaultEmbeddingDim is the embedding size unless WithEmbeddingDim or the
// request's "dimensions" says otherwise (text-embedding-3-small's).
const DefaultEmbeddingDim = 1536

// DefaultModels returns the model ids the server knows unless WithModels
// says otherwise.
func DefaultModels() []string {
	return []string{
		"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-3.5-turbo", "o3-mini",
		"text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002",
		DefaultRerankModel, DefaultModerationModel, DefaultTranscriptionModel, DefaultSpeechModel,
	}
}

// Server is the fake upstream. It is safe for concurrent use: tests
// running in parallel may share one server if their rules use distinct
// substrings.
type Server struct {
	ts         *httptest.Server
	apiKey     string
	models     []string // nil: any model
	dim        int
	chunkWords int
	rejectSO   bool
	record     bool
	closing    chan struct{}
	closeOnce  sync.Once

	mu    sync.RWMutex
	rules []rule

	reqMu    sync.Mutex
	requests []Request

	counts countCache
	active atomic.Int64
	conns  atomic.Int64
	seq    atomic.Uint64
}

type rule struct {
	substr string
	reply  Reply
	// seq, when set, are the replies to the successive matching requests (OnEach); served
	// counts those requests.
	seq    []Reply
	served *atomic.Int64
	// fn, when set, decides from the whole chat request (OnRequest); substr is then unused.
	fn func(*Request) (Reply, bool)
}

// Option configures a Server.
type Option func(*Server)

// WithAPIKey sets the accepted API key; "" accepts requests without a key
// (like a local Ollama or vLLM server).
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// WithModels sets the known model ids (chat and embedding alike); other
// models get 404 model_not_found. No ids means any model is accepted.
func WithModels(ids ...string) Option {
	return func(s *Server) {
		if len(ids) == 0 {
			s.models = nil
		} else {
			s.models = slices.Clone(ids)
		}
	}
}

// WithEmbeddingDim sets the default embedding size.
func WithEmbeddingDim(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.dim = n
		}
	}
}

// WithChunkWords sets how many words the default chunking puts in each
// streamed chunk (default 1).
func WithChunkWords(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.chunkWords = n
		}
	}
}

// WithRejectStreamOptions makes the server behave like older vLLM builds:
// a request carrying stream_options gets a 400 whose message names the
// field, in vLLM's error shape ({"object":"error",…,"code":400}).
func WithRejectStreamOptions() Option { return func(s *Server) { s.rejectSO = true } }

// WithoutRequestLog stops recording requests (for benchmarks: the log is
// the only lock taken on every request besides the rule lookup).
func WithoutRequestLog() Option { return func(s *Server) { s.record = false } }

// NewServer starts a server on a loopback port. Close it when done
// (t.Cleanup(s.Close)). It loads the token counter before returning so
// that no request pays for it.
func NewServer(opts ...Option) *Server {
	s := &Server{
		apiKey:     DefaultAPIKey,
		models:     DefaultModels(),
		dim:        DefaultEmbeddingDim,
		chunkWords: 1,
		record:     true,
		closing:    make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	tokens.Warm()
	s.ts = httptest.NewUnstartedServer(s)
	s.ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.ts.Start()
	return s
}

// URL returns the base URL to configure as the provider's base_url; it ends
// in /v1.
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// RootURL returns the server's root URL (no /v1), for Azure-style paths.
func (s *Server) RootURL() string { return s.ts.URL }

// APIKey returns the accepted key ("" when any request is accepted).
func (s *Server) APIKey() string { return s.apiKey }

// Close stops the server. Requests still in flight, including hanging
// streams, are aborted first, so Close never waits on a client.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
}

// On adds a rule: chat requests whose last user message contains substr
// (embedding requests: any input containing it) get reply instead of the
// default. Rules are tried in the order they were added; the first match
// wins. An empty substr matches every request.
func (s *Server) On(substr string, reply Reply) {
	s.mu.Lock()
	s.rules = append(s.rules, rule{substr: substr, reply: reply})
	s.mu.Unlock()
}

// OnEach adds a rule like On whose matching requests get replies in turn: the first gets
// replies[0], the next replies[1], and so on, the last reply answering every later one. It
// scripts a conversation of several model calls with the same user message, such as the
// rounds of an agent.
func (s *Server) OnEach(substr string, replies ...Reply) {
	if len(replies) == 0 {
		return
	}
	s.mu.Lock()
	s.rules = append(s.rules, rule{substr: substr, seq: slices.Clone(replies), served: new(atomic.Int64)})
	s.mu.Unlock()
}

// OnRequest adds a rule that reads the whole chat request: reply is asked in turn with On's
// rules and answers the request when it returns true. It scripts a model whose answer depends on
// the conversation so far and not on a count of requests, so that it stays right under
// concurrency: an agent's model that calls a tool while the last message is the user's and
// answers once it is the tool's result. reply runs on the request's goroutine, possibly on
// several at once, and must not call the Server's methods. Embedding and rerank requests never
// match it.
func (s *Server) OnRequest(reply func(*Request) (Reply, bool)) {
	s.mu.Lock()
	s.rules = append(s.rules, rule{fn: reply})
	s.mu.Unlock()
}

// Reset removes all rules and recorded requests.
func (s *Server) Reset() {
	s.mu.Lock()
	s.rules = nil
	s.mu.Unlock()
	s.reqMu.Lock()
	s.requests = nil
	s.reqMu.Unlock()
}

// Requests returns a copy of the requests received so far (all endpoints,
// including rejected ones), oldest first.
func (s *Server) Requests() []Request {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	return slices.Clone(s.requests)
}

// ActiveStreams returns the number of streamed chat responses being
// written right now. A client that goes away makes it drop back, so tests
// use it to check that cancellation really closed the connection.
func (s *Server) ActiveStreams() int { return int(s.active.Load()) }

// Connections returns how many TCP connections the server has accepted,
// to check that clients reuse connections.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Reply scripts the answer to a matching request. The zero value is the
// default echo reply.
type Reply struct {
	// Text is the answer; streamed it is split into chunks of the server's
	// chunk size in words. Empty (with no Chunks and no ToolCalls) means the
	// default "Echo: <message>".
	Text string
	// Chunks are the streamed content pieces, exactly; they override Text.
	// A blocking answer is their concatenation.
	Chunks []string
	// Reasoning are reasoning pieces streamed before the content, each as a
	// reasoning_content delta, as reasoning models behind OpenAI-compatible
	// APIs send them. A blocking answer leaves them out.
	Reasoning []string
	// ToolCalls are function calls to make, after any text. Streamed, each
	// call's arguments arrive in several pieces, as OpenAI sends them.
	// Empty IDs are generated ("call_…").
	ToolCalls []providers.ToolCall
	// FinishReason overrides the finish reason ("stop", or "tool_calls"
	// when there are tool calls).
	FinishReason string
	// Usage overrides the counted usage.
	Usage *providers.Usage
	// NoUsage omits usage: no "usage" member in a blocking answer, no usage
	// chunk in a stream even when stream_options.include_usage is set.
	NoUsage bool

	// FirstByteDelay waits before sending the status line and headers.
	FirstByteDelay time.Duration
	// ChunkDelay waits before each streamed chunk.
	ChunkDelay time.Duration

	// Status, when 400 or above, answers with that status and an OpenAI
	// error body built from ErrorMessage, ErrorType and ErrorCode (with
	// defaults per status), or ErrorBody verbatim.
	Status int
	// ErrorBody is sent verbatim as the error body (status 500 when Status
	// is not set).
	ErrorBody string
	// ErrorMessage is error.message.
	ErrorMessage string
	// ErrorType is error.type.
	ErrorType string
	// ErrorCode is error.code.
	ErrorCode string

	// CutAfterChunks, if > 0, drops the connection (panic
	// http.ErrAbortHandler) once that many content or tool-call chunks
	// were sent: before the finish chunk if the answer is shorter. A
	// blocking answer is dropped before its body.
	CutAfterChunks int
	// NoDone ends a stream after its content without a finish_reason,
	// usage chunk or [DONE]: a cleanly closed but truncated stream.
	NoDone bool
	// HangAfterChunks, if > 0, stops sending once that many chunks were
	// sent and keeps the connection open until the client goes away (or
	// the server closes). A blocking answer hangs before its body.
	HangAfterChunks int
	// Flagged makes a moderation request flag every input the rule matches.
	Flagged bool

	// KeepAlive, if > 0, makes a hanging stream send an SSE comment
	// (": keep-alive") at this interval, as some providers do while a
	// model thinks: data keeps arriving, but no content.
	KeepAlive time.Duration
}

// ServeHTTP routes by path suffix so that any prefix (/v1, an Azure
// deployment path) works.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		s.handle(w, r, s.chat)
	case strings.HasSuffix(path, "/embeddings"):
		s.handle(w, r, s.embeddings)
	case strings.HasSuffix(path, "/rerank"):
		s.handle(w, r, s.rerank)
	case strings.HasSuffix(path, "/moderations"):
		s.handle(w, r, s.moderations)
	case strings.HasSuffix(path, "/audio/transcriptions"):
		s.transcribe(w, r)
	case strings.HasSuffix(path, "/audio/speech"):
		s.handle(w, r, s.speech)
	case strings.HasSuffix(path, "/models") && r.Method == http.MethodGet:
		if s.authorize(w, r) {
			s.listModels(w)
		}
	default:
		writeError(w, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "")
	}
}

// handle reads, records and authorizes a POST, then calls h.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, h func(http.ResponseWriter, *http.Request, *Request)) {
	if !postOnly(w, r) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	invalid := ""
	if err := req.decode(); err != nil {
		invalid = err.Error()
	}
	if !s.admit(w, r, req, invalid) {
		return
	}
	h(w, r, req)
}

// postOnly answers 405 to any method but POST; it reports whether the request is a POST.
func postOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed", "invalid_request_error", "")
		return false
	}
	return true
}

// admit records req (when recording), then checks the API key, answers 400 with invalid when the
// request could not be read (invalid is not "") and 404 for a model the server does not know, as
// OpenAI does. It reports whether the handler should answer the request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, req *Request, invalid string) bool {
	if s.record {
		s.reqMu.Lock()
		s.requests = append(s.requests, *req)
		s.reqMu.Unlock()
	}
	if !s.authorize(w, r) {
		return false
	}
	if invalid != "" {
		writeError(w, http.StatusBadRequest, invalid, "invalid_request_error", "")
		return false
	}
	if s.models != nil && !slices.Contains(s.models, req.Model) {
		writeError(w, http.StatusNotFound,
			"The model `"+req.Model+"` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found")
		return false
	}
	return true
}

// fault plays what the rule matching texts asks of an answer that is not streamed: the
// first-byte delay, an error answer, a connection cut before the body (CutAfterChunks) or a hang
// (HangAfterChunks). It returns the rule's reply and whether the handler should go on and answer.
func (s *Server) fault(w http.ResponseWriter, r *http.Request, texts ...string) (Reply, bool) {
	reply, _ := s.match(texts...)
	if !s.wait(r, reply.FirstByteDelay) {
		return reply, false
	}
	if reply.Status >= 400 || reply.ErrorBody != "" {
		writeReplyError(w, reply)
		return reply, false
	}
	if reply.CutAfterChunks > 0 {
		abort()
	}
	if reply.HangAfterChunks > 0 {
		s.hang(r)
		return reply, false
	}
	return reply, true
}

// authorize checks the API key, answering 401 like OpenAI when it is
// missing or wrong.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	if s.apiKey == "" {
		return true
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		key = r.Header.Get("Api-Key")
	}
	key = strings.TrimSpace(key)
	if key == "" {
		writeError(w, http.StatusUnauthorized,
			"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
			"invalid_request_error", "")
		return false
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.apiKey)) != 1 {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided: "+maskKey(key)+".", "invalid_request_error", "invalid_api_key")
		return false
	}
	return true
}

// maskKey shows a key the way OpenAI does in its 401 message.
func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", 8) + k[len(k)-4:]
}

// match returns the first rule reply whose substring is in one of texts.
func (s *Server) match(texts ...string) (Reply, bool) { return s.matchRequest(nil, texts) }

// matchChat returns the reply of the first rule that matches a chat request: its OnRequest
// function says so, or its substring is in the last user message.
func (s *Server) matchChat(req *Request) (Reply, bool) {
	return s.matchRequest(req, []string{req.LastUserMessage()})
}

// matchRequest returns the first rule reply whose substring is in one of texts or, when req is
// set, whose function accepts req.
func (s *Server) matchRequest(req *Request, texts []string) (Reply, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, r := range s.rules {
		if r.fn != nil {
			if req == nil {
				continue
			}
			if reply, ok := r.fn(req); ok {
				return reply, true
			}
			continue
		}
		for _, t := range texts {
			if strings.Contains(t, r.substr) {
				if len(r.seq) > 0 {
					return r.seq[min(int(r.served.Add(1))-1, len(r.seq)-1)], true
				}
				return r.reply, true
			}
		}
	}
	return Reply{}, false
}

// wait sleeps for d unless the request or the server ends first.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closing:
		return false
	}
}

// hang blocks until the client goes away or the server closes.
func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
}

func (s *Server) listModels(w http.ResponseWriter) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range s.models {
		out.Data = append(out.Data, model{ID: id, Object: "model", Created: 1700000000, OwnedBy: "openaitest"})
	}
	writeJSON(w, http.StatusOK, out)
}

// writeReplyError answers with the scripted error of r.
func writeReplyError(w http.ResponseWriter, r Reply) {
	status := r.Status
	if status < 400 {
		status = http.StatusInternalServerError
	}
	if r.ErrorBody != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, r.ErrorBody)
		return
	}
	msg, typ, code := defaultError(status)
	writeError(w, status, cmp.Or(r.ErrorMessage, msg), cmp.Or(r.ErrorType, typ), cmp.Or(r.ErrorCode, code))
}

// defaultError returns OpenAI's usual message, type and code per status.
func defaultError(status int) (msg, typ, code string) {
	switch status {
	case http.StatusUnauthorized:
		return "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
	case http.StatusForbidden:
		return "You are not allowed to sample from this model.", "invalid_request_error", ""
	case http.StatusNotFound:
		return "The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"
	case http.StatusTooManyRequests:
		return "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota", "insufficient_quota"
	case http.StatusServiceUnavailable:
		return "The engine is currently overloaded, please try again later.", "server_error", ""
	}
	if status >= 500 {
		return "The server had an error while processing your request. Sorry about that!", "server_error", ""
	}
	return "Invalid request.", "invalid_request_error", ""
}

// writeError writes an OpenAI error body: code "" is null.
func writeError(w http.ResponseWriter, status int, msg, typ, code string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encode failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// abort drops the connection; net/http recovers http.ErrAbortHandler
// without logging it.
func abort() { panic(http.ErrAbortHandler) }
