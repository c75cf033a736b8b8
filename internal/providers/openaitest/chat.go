package openaitest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tokens"
)

// answer is a resolved reply for one chat request.
type answer struct {
	Reply
	id      string
	model   string
	created int64
	chunks  []string
	calls   []providers.ToolCall
	finish  string
	usage   providers.Usage
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, req *Request) {
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "Missing required parameter: 'messages'.", "invalid_request_error", "missing_required_parameter")
		return
	}
	if req.StreamOptions && s.rejectSO {
		// vLLM's pydantic rejection, with its numeric code.
		writeJSON(w, http.StatusBadRequest, map[string]any{
			"object": "error", "type": "BadRequestError", "param": nil, "code": 400,
			"message": "[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted'}]",
		})
		return
	}
	if req.StreamOptions && !req.Stream {
		writeError(w, http.StatusBadRequest, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "invalid_request_error", "")
		return
	}
	reply, _ := s.matchChat(req)
	if !s.wait(r, reply.FirstByteDelay) {
		return
	}
	if reply.Status >= 400 || reply.ErrorBody != "" {
		writeReplyError(w, reply)
		return
	}
	a := s.resolve(req, reply)
	if req.Stream {
		s.stream(w, r, req, a)
	} else {
		s.blocking(w, r, a)
	}
}

// resolve fills in the reply's defaults: text, chunking, tool call ids,
// finish reason, usage.
func (s *Server) resolve(req *Request, reply Reply) *answer {
	n := s.seq.Add(1)
	a := &answer{Reply: reply, id: "chatcmpl-openaitest" + strconv.FormatUint(n, 10), model: req.Model, created: time.Now().Unix()}
	switch {
	case len(reply.Chunks) > 0:
		a.chunks = reply.Chunks
	case reply.Text != "":
		a.chunks = splitWords(reply.Text, s.chunkWords)
	case len(reply.ToolCalls) == 0:
		a.chunks = splitWords("Echo: "+req.LastUserMessage(), s.chunkWords)
	}
	a.calls = make([]providers.ToolCall, len(reply.ToolCalls))
	for i, tc := range reply.ToolCalls {
		if tc.ID == "" {
			tc.ID = "call_" + strconv.FormatUint(n, 10) + "_" + strconv.Itoa(i)
		}
		a.calls[i] = tc
	}
	a.finish = reply.FinishReason
	if a.finish == "" {
		a.finish = "stop"
		if len(a.calls) > 0 {
			a.finish = "tool_calls"
		}
	}
	if reply.Usage != nil {
		a.usage = *reply.Usage
	} else if !reply.NoUsage {
		a.usage.PromptTokens = s.counts.get(req.promptKey, func() int {
			n := tokens.CountMessages(req.Messages)
			for _, t := range req.Tools {
				n += tokens.Count(t.Name) + tokens.Count(t.Description) + tokens.Count(string(t.Parameters))
			}
			return n
		})
		text := strings.Join(a.chunks, "")
		a.usage.CompletionTokens = s.counts.get(text, func() int { return tokens.Count(text) })
		for _, tc := range a.calls {
			a.usage.CompletionTokens += tokens.Count(tc.Name) + tokens.Count(tc.Arguments)
		}
	}
	return a
}

// countCache memoises token counts per server: benchmarks send the same
// prompts again and again, and BPE counting would otherwise dominate the
// fake's CPU time. It stops growing at maxCached entries.
type countCache struct {
	m sync.Map // string → int
	n atomic.Int64
}

const (
	maxCached    = 8192
	maxCachedKey = 16 << 10
)

func (c *countCache) get(key string, count func() int) int {
	if v, ok := c.m.Load(key); ok {
		return v.(int)
	}
	n := count()
	if len(key) <= maxCachedKey && c.n.Load() < maxCached {
		if _, loaded := c.m.LoadOrStore(key, n); !loaded {
			c.n.Add(1)
		}
	}
	return n
}

// splitWords cuts text into pieces of n words, each piece but the first
// starting with the white space before its first word, so the pieces
// concatenate back to text.
func splitWords(text string, n int) []string {
	if text == "" {
		return nil
	}
	var out []string
	start, words, inWord := 0, 0, false
	for i := 0; i < len(text); i++ {
		space := text[i] == ' ' || text[i] == '\n' || text[i] == '\t'
		if !space && !inWord {
			if words == n {
				// Cut before the white space that precedes this word.
				j := i
				for j > start && (text[j-1] == ' ' || text[j-1] == '\n' || text[j-1] == '\t') {
					j--
				}
				out = append(out, text[start:j])
				start, words = j, 0
			}
			words++
		}
		inWord = !space
	}
	return append(out, text[start:])
}

func (s *Server) blocking(w http.ResponseWriter, r *http.Request, a *answer) {
	if a.CutAfterChunks > 0 {
		abort()
	}
	if a.HangAfterChunks > 0 {
		s.hang(r)
		return
	}
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type message struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		Refusal   *string `json:"refusal"`
		ToolCalls []call  `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		Logprobs     *string `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
	}
	out := struct {
		ID                string   `json:"id"`
		Object            string   `json:"object"`
		Created           int64    `json:"created"`
		Model             string   `json:"model"`
		Choices           []choice `json:"choices"`
		Usage             any      `json:"usage,omitempty"`
		SystemFingerprint string   `json:"system_fingerprint"`
	}{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model, SystemFingerprint: "fp_openaitest"}
	msg := message{Role: "assistant"}
	if text := strings.Join(a.chunks, ""); text != "" || len(a.calls) == 0 {
		msg.Content = &text
	}
	for _, tc := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, call{ID: tc.ID, Type: "function", Function: fn{Name: tc.Name, Arguments: tc.Arguments}})
	}
	out.Choices = []choice{{Message: msg, FinishReason: a.finish}}
	if !a.NoUsage {
		out.Usage = usageJSON(a.usage)
	}
	writeJSON(w, http.StatusOK, out)
}

type usageBody struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usageJSON(u providers.Usage) usageBody {
	return usageBody{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens()}
}

// stream writes the answer as OpenAI's SSE: a role chunk, content chunks,
// tool-call chunks, the finish chunk, the usage chunk (when asked for) and
// [DONE], flushing after each event.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *Request, a *answer) {
	s.active.Add(1)
	defer s.active.Add(-1)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f := newFrames(w, a.id, a.created, req.Model, req.IncludeUsage)
	if !f.flush() {
		return
	}
	if !f.role(len(a.chunks) == 0 && len(a.calls) > 0) {
		return
	}
	sent := 0
	// gate runs before every content/tool chunk and before the finish:
	// it applies the delay and the scripted faults.
	gate := func() bool {
		if a.CutAfterChunks > 0 && sent >= a.CutAfterChunks {
			abort()
		}
		if a.HangAfterChunks > 0 && sent >= a.HangAfterChunks {
			s.hangStream(r, f, a.KeepAlive)
			return false
		}
		return s.wait(r, a.ChunkDelay)
	}
	for _, c := range a.Reasoning {
		if !gate() || !f.reasoning(c) {
			return
		}
		sent++
	}
	for _, c := range a.chunks {
		if !gate() || !f.content(c) {
			return
		}
		sent++
	}
	for i, tc := range a.calls {
		for j, piece := range splitArgs(tc.Arguments) {
			if !gate() || !f.toolCall(i, tc, piece, j == 0) {
				return
			}
			sent++
		}
	}
	if a.NoDone {
		return
	}
	if a.CutAfterChunks > 0 || a.HangAfterChunks > 0 {
		if !gate() {
			return
		}
	}
	if !f.finish(a.finish) {
		return
	}
	if req.IncludeUsage && !a.NoUsage {
		if !f.usage(a.usage) {
			return
		}
	}
	f.done()
}

// hangStream blocks until the client goes away or the server closes, sending a keep-alive
// comment every keepAlive when it is positive.
func (s *Server) hangStream(r *http.Request, f *frames, keepAlive time.Duration) {
	if keepAlive <= 0 {
		s.hang(r)
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if !f.comment("keep-alive") {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// splitArgs cuts tool-call arguments into (up to) four pieces, the first
// empty, as OpenAI streams them: the first delta carries id and name with
// "" arguments.
func splitArgs(args string) []string {
	out := []string{""}
	if args == "" {
		return out
	}
	step := max(1, (len(args)+2)/3)
	for i := 0; i < len(args); i += step {
		out = append(out, args[i:min(i+step, len(args))])
	}
	return out
}

// frames builds and writes chat.completion.chunk events into one reused
// buffer: no per-chunk allocation besides the write itself.
type frames struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	buf    []byte
	prefix []byte // `data: {"id":…,"choices":[`
	suffix string // `]}` or `],"usage":null}`, then "\n\n"
}

func newFrames(w http.ResponseWriter, id string, created int64, model string, includeUsage bool) *frames {
	p := make([]byte, 0, 160)
	p = append(p, `data: {"id":`...)
	p = jsonenc.AppendString(p, id)
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, created, 10)
	p = append(p, `,"model":`...)
	p = jsonenc.AppendString(p, model)
	p = append(p, `,"system_fingerprint":"fp_openaitest","choices":[`...)
	suffix := "]}\n\n"
	if includeUsage {
		// OpenAI sends "usage":null on every chunk but the last when
		// include_usage is set.
		suffix = `],"usage":null}` + "\n\n"
	}
	return &frames{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, 512), prefix: p, suffix: suffix}
}

func (f *frames) begin() {
	f.buf = append(f.buf[:0], f.prefix...)
	f.buf = append(f.buf, `{"index":0,"delta":`...)
}

func (f *frames) end(finish string) bool {
	f.buf = append(f.buf, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		f.buf = append(f.buf, "null"...)
	} else {
		f.buf = jsonenc.AppendString(f.buf, finish)
	}
	f.buf = append(f.buf, '}')
	f.buf = append(f.buf, f.suffix...)
	return f.write()
}

func (f *frames) write() bool {
	if _, err := f.w.Write(f.buf); err != nil {
		return false
	}
	return f.flush()
}

func (f *frames) flush() bool { return f.rc.Flush() == nil }

// role writes the first chunk: the assistant role with empty content (null
// content when the answer is tool calls only).
func (f *frames) role(toolsOnly bool) bool {
	f.begin()
	if toolsOnly {
		f.buf = append(f.buf, `{"role":"assistant","content":null,"refusal":null}`...)
	} else {
		f.buf = append(f.buf, `{"role":"assistant","content":"","refusal":null}`...)
	}
	return f.end("")
}

func (f *frames) reasoning(text string) bool {
	f.begin()
	f.buf = append(f.buf, `{"reasoning_content":`...)
	f.buf = jsonenc.AppendString(f.buf, text)
	f.buf = append(f.buf, '}')
	return f.end("")
}

func (f *frames) content(text string) bool {
	f.begin()
	f.buf = append(f.buf, `{"content":`...)
	f.buf = jsonenc.AppendString(f.buf, text)
	f.buf = append(f.buf, '}')
	return f.end("")
}

func (f *frames) toolCall(index int, tc providers.ToolCall, args string, first bool) bool {
	f.begin()
	f.buf = append(f.buf, `{"tool_calls":[{"index":`...)
	f.buf = strconv.AppendInt(f.buf, int64(index), 10)
	if first {
		f.buf = append(f.buf, `,"id":`...)
		f.buf = jsonenc.AppendString(f.buf, tc.ID)
		f.buf = append(f.buf, `,"type":"function","function":{"name":`...)
		f.buf = jsonenc.AppendString(f.buf, tc.Name)
		f.buf = append(f.buf, `,"arguments":`...)
	} else {
		f.buf = append(f.buf, `,"function":{"arguments":`...)
	}
	f.buf = jsonenc.AppendString(f.buf, args)
	f.buf = append(f.buf, "}}]}"...)
	return f.end("")
}

func (f *frames) finish(reason string) bool {
	f.begin()
	f.buf = append(f.buf, "{}"...)
	return f.end(reason)
}

// usage writes the usage chunk: empty choices and the usage object.
func (f *frames) usage(u providers.Usage) bool {
	f.buf = append(f.buf[:0], f.prefix...)
	f.buf = append(f.buf, `],"usage":`...)
	b, _ := json.Marshal(usageJSON(u))
	f.buf = append(f.buf, b...)
	f.buf = append(f.buf, "}\n\n"...)
	return f.write()
}

// comment writes an SSE comment line, which clients must skip.
func (f *frames) comment(text string) bool {
	f.buf = append(append(append(f.buf[:0], ": "...), text...), "\n\n"...)
	return f.write()
}

func (f *frames) done() bool {
	f.buf = append(f.buf[:0], "data: [DONE]\n\n"...)
	return f.write()
}
