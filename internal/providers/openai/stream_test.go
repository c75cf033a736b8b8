package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/parleyhq/parley/internal/providers"
)

// streamOver runs the stream parser over r, as if r were a response body.
func streamOver(ctx context.Context, r io.Reader) *stream {
	c := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	ctx, cancel := context.WithCancelCause(ctx)
	x := &exchange{ctx: ctx, cancel: cancel, idle: time.Hour, body: io.NopCloser(r)}
	x.watch = time.AfterFunc(time.Hour, func() { cancel(errIdle) })
	return newStream(c, x)
}

type parsed struct {
	text  string
	final providers.Chunk
	err   error
}

func parseAll(ctx context.Context, r io.Reader) parsed {
	s := streamOver(ctx, r)
	defer s.Close()
	var p parsed
	for range 10000 {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return p
		}
		if err != nil {
			p.err = err
			return p
		}
		p.text += ch.Delta
		if ch.FinishReason != "" || ch.Usage != nil || ch.ToolCalls != nil {
			p.final = ch
		}
	}
	p.err = errors.New("stream never ended")
	return p
}

func TestSSEParsing(t *testing.T) {
	t.Parallel()
	const (
		a    = `{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`
		b    = `{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}`
		stop = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
		use  = `{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`
	)
	usage := &providers.Usage{PromptTokens: 9, CompletionTokens: 2}
	tests := []struct {
		name      string
		in        string
		text      string
		finish    string
		usage     *providers.Usage
		truncated bool
	}{
		{name: "openai framing", in: "data: " + a + "\n\ndata: " + b + "\n\ndata: " + stop + "\n\ndata: " + use + "\n\ndata: [DONE]\n\n",
			text: "Hello", finish: "stop", usage: usage},
		{name: "no space after colon, CRLF", in: "data:" + a + "\r\n\r\ndata:" + stop + "\r\n\r\ndata:[DONE]\r\n\r\n",
			text: "Hel", finish: "stop"},
		{name: "comments, keep-alives, other fields", in: ": keep-alive\n\nevent: message\nid: 1\nretry: 10\ndata: " + a +
			"\n\n: OPENROUTER PROCESSING\n\ndata: " + stop + "\n\ndata: [DONE]\n\n", text: "Hel", finish: "stop"},
		{name: "[DONE] without trailing newline", in: "data: " + a + "\n\ndata: " + stop + "\n\ndata: [DONE]",
			text: "Hel", finish: "stop"},
		{name: "data split over two lines", in: "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n",
			text: "x"},
		{name: "finish then EOF without [DONE]", in: "data: " + a + "\n\ndata: " + stop + "\n\n", text: "Hel", finish: "stop"},
		{name: "usage chunk then EOF", in: "data: " + a + "\n\ndata: " + stop + "\n\ndata: " + use + "\n\n", text: "Hel", finish: "stop", usage: usage},
		{name: "EOF without terminal marker", in: "data: " + a + "\n\ndata: " + b + "\n\n", truncated: true},
		{name: "EOF inside an event", in: "data: " + a + "\n\ndata: {\"choi", truncated: true},
		{name: "empty body", in: "", truncated: true},
		{name: "only keep-alives", in: ": ping\n\n: ping\n\n", truncated: true},
		{name: "other choices ignored", in: "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"no\"}},{\"index\":0,\"delta\":{\"content\":\"yes\"}}]}\n\ndata: [DONE]\n\n",
			text: "yes"},
		{name: "empty-string finish_reason is not a finish", in: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"\"}]}\n\n",
			truncated: true},
		{name: "null content", in: "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\ndata: " + stop + "\n\ndata: [DONE]\n\n",
			finish: "stop"},
	}
	readers := map[string]func(string) io.Reader{
		"whole":        func(s string) io.Reader { return strings.NewReader(s) },
		"byte by byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":         func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				t.Parallel()
				p := parseAll(t.Context(), mk(tt.in))
				if tt.truncated {
					if !errors.Is(p.err, providers.ErrTruncated) {
						t.Fatalf("err = %v, want ErrTruncated", p.err)
					}
					return
				}
				if p.err != nil {
					t.Fatal(p.err)
				}
				if p.text != tt.text || p.final.FinishReason != tt.finish || !reflect.DeepEqual(p.final.Usage, tt.usage) {
					t.Fatalf("text %q finish %q usage %+v", p.text, p.final.FinishReason, p.final.Usage)
				}
			})
		}
	}
}

func TestSSELongLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000) // far beyond the 8 KiB read buffer
	in := `data: {"choices":[{"index":0,"delta":{"content":"` + long + `"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	p := parseAll(t.Context(), iotest.HalfReader(strings.NewReader(in)))
	if p.err != nil || p.text != long {
		t.Fatalf("err %v, %d bytes", p.err, len(p.text))
	}
}

func TestToolCallAssembly(t *testing.T) {
	t.Parallel()
	frame := func(s string) string { return "data: " + s + "\n\n" }
	tests := []struct {
		name string
		in   string
		want []providers.ToolCall
	}{
		{
			name: "openai: indexed pieces, interleaved",
			in: frame(`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":""}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\""}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"b","arguments":"{}"}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`) + "data: [DONE]\n\n",
			want: []providers.ToolCall{{ID: "call_1", Name: "a", Arguments: `{"x":1}`}, {ID: "call_2", Name: "b", Arguments: "{}"}},
		},
		{
			name: "no index: whole calls told apart by id",
			in: frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","function":{"name":"a","arguments":"{}"}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","function":{"name":"b","arguments":"{\"y\":2}"}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`) + "data: [DONE]\n\n",
			want: []providers.ToolCall{{ID: "c1", Name: "a", Arguments: "{}"}, {ID: "c2", Name: "b", Arguments: `{"y":2}`}},
		},
		{
			name: "name repeated in every delta, object arguments",
			in: frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":""}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":{"z":3}}}]}}]}`) +
				frame(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`) + "data: [DONE]\n\n",
			want: []providers.ToolCall{{ID: "c1", Name: "f", Arguments: `{"z":3}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := parseAll(t.Context(), strings.NewReader(tt.in))
			if p.err != nil {
				t.Fatal(p.err)
			}
			if !reflect.DeepEqual(p.final.ToolCalls, tt.want) || p.final.FinishReason != "tool_calls" {
				t.Fatalf("tool calls %+v finish %q", p.final.ToolCalls, p.final.FinishReason)
			}
		})
	}
}

func TestEncodeChat(t *testing.T) {
	t.Parallel()
	req := providers.ChatRequest{
		Model:    "m",
		Messages: []providers.Message{{Role: "user", Content: "hi", Name: "bob"}},
		Tools:    []providers.Tool{{Name: "f"}},
		Parameters: map[string]any{
			"top_p": 0.5, "temperature": 1, "messages": "no", "stream_options": "no",
			"response_format": map[string]any{"type": "json_object"},
		},
		User: "u1",
	}
	got, err := encodeChat(req, true, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"hi","name":"bob"}],` +
		`"tools":[{"type":"function","function":{"name":"f"}}],"stream":true,"stream_options":{"include_usage":true},"user":"u1",` +
		`"response_format":{"type":"json_object"},"temperature":1,"top_p":0.5}`
	if string(got) != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
	// Every shape a message takes on the wire, and text that needs escaping.
	req = providers.ChatRequest{Model: "m", Messages: []providers.Message{
		{Role: "system", Content: "Quote \"this\",\tthen\na <b>&</b> \\ é \u2028 \x01"},
		{Role: "user", Parts: []providers.Part{{Type: providers.PartText, Text: "look"}, {Type: providers.PartImageURL, ImageURL: "https://x/a.png", Detail: "low"}}},
		{Role: "assistant", ToolCalls: []providers.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}, {ID: "c2", Name: "g"}}},
		{Role: "tool", Content: "42", ToolCallID: "c1"},
		{Role: "assistant", Content: ""},
	}}
	if got, err = encodeChat(req, false, true); err != nil {
		t.Fatal(err)
	}
	want = `{"model":"m","messages":[` +
		`{"role":"system","content":"Quote \"this\",\tthen\na <b>&</b> \\ é \u2028 \u0001"},` +
		`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"low"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},` +
		`{"id":"c2","type":"function","function":{"name":"g","arguments":""}}]},` +
		`{"role":"tool","content":"42","tool_call_id":"c1"},` +
		`{"role":"assistant","content":""}]}`
	if string(got) != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
	var decoded struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(got, &decoded); err != nil || decoded.Messages[0]["content"] != req.Messages[0].Content {
		t.Fatalf("body does not decode back: %v %+v", err, decoded)
	}
	if _, err := encodeChat(providers.ChatRequest{Model: "m", Parameters: map[string]any{"bad": make(chan int)}}, false, false); err == nil {
		t.Error("unencodable parameter accepted")
	}
	if _, err := encodeChat(providers.ChatRequest{Model: "m", Messages: []providers.Message{{Role: "user", Parts: []providers.Part{{Type: "audio"}}}}}, false, false); err == nil {
		t.Error("unknown part type accepted")
	}
}

func TestParseErrorBody(t *testing.T) {
	t.Parallel()
	tests := map[string]apiError{
		`{"error":{"message":"m","type":"t","code":"c","param":null}}`:           {Message: "m", Type: "t", Code: "c"},
		`{"error":{"message":"m","type":"t","code":429}}`:                        {Message: "m", Type: "t", Code: "429"},
		`{"error":"model 'x' not found"}`:                                        {Message: "model 'x' not found"},
		`{"object":"error","message":"bad","type":"BadRequestError","code":400}`: {Message: "bad", Type: "BadRequestError", Code: "400"},
		`{"detail":"Not Found"}`:                                                 {Message: "Not Found"},
		`{"detail":[{"loc":["body"]}]}`:                                          {},
		`<html>502</html>`:                                                       {},
		``:                                                                       {},
		`{"error":{"message":null,"code":null}}`:                                 {},
	}
	for in, want := range tests {
		if got := parseErrorBody([]byte(in)); got != want {
			t.Errorf("parseErrorBody(%s) = %+v, want %+v", in, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		e      apiError
		want   providers.Kind
	}{
		{401, apiError{}, providers.KindCredentials},
		{403, apiError{}, providers.KindCredentials},
		{400, apiError{Code: "invalid_api_key"}, providers.KindCredentials},
		{429, apiError{}, providers.KindQuota},
		{400, apiError{Type: "insufficient_quota"}, providers.KindQuota},
		{0, apiError{Code: "rate_limit_exceeded"}, providers.KindQuota},
		{404, apiError{}, providers.KindModel},
		{400, apiError{Code: "model_not_found"}, providers.KindModel},
		{400, apiError{Message: "The model `x` does not exist"}, providers.KindModel},
		{400, apiError{Message: "model 'llama9' not found, try pulling it first"}, providers.KindModel},
		{400, apiError{Message: "max_tokens is too large"}, providers.KindInvocation},
		{500, apiError{Message: "model not found"}, providers.KindInvocation},
		{502, apiError{}, providers.KindInvocation},
		{422, apiError{}, providers.KindInvocation},
	}
	for _, tt := range tests {
		if got := classify(tt.status, tt.e); got != tt.want {
			t.Errorf("classify(%d, %+v) = %s, want %s", tt.status, tt.e, got, tt.want)
		}
	}
}

func TestScrubKey(t *testing.T) {
	t.Parallel()
	c := New(Config{BaseURL: "http://x/v1", APIKey: "sk-abcdefgh12345678"})
	e := c.statusError(401, []byte(`{"error":{"message":"bad key sk-abcdefgh12345678 given"}}`))
	if strings.Contains(e.Message, "sk-abcdefgh12345678") || e.Message != "[openai] bad key [redacted] given" {
		t.Fatalf("message %q", e.Message)
	}
}

// repeatReader yields the same bytes forever.
type repeatReader struct {
	b   []byte
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}

// BenchmarkStreamParseChunk measures parsing one realistic
// chat.completion.chunk event (SSE framing + JSON decode), per Recv.
func BenchmarkStreamParseChunk(b *testing.B) {
	frame := `data: {"id":"chatcmpl-AbCdEf123","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini-2024-07-18",` +
		`"system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"
	s := streamOver(b.Context(), &repeatReader{b: []byte(frame)})
	defer s.Close()
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamParseToolCallChunk is the same for streamed tool-call
// arguments.
func BenchmarkStreamParseToolCallChunk(b *testing.B) {
	first := `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}` + "\n\n"
	frame := `data: {"id":"chatcmpl-AbCdEf123","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x"}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"content":"."},"finish_reason":null}]}` + "\n\n"
	s := streamOver(b.Context(), io.MultiReader(strings.NewReader(first), &repeatReader{b: []byte(frame)}))
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Recv(); err != nil {
			b.Fatal(err)
		}
		// The tool-call chunk folds into state; the content chunk returns.
		if len(s.calls.calls) == 1 && len(s.calls.calls[0].args) > 1<<20 {
			s.calls.calls[0].args = s.calls.calls[0].args[:0]
		}
	}
}

// TestSSEReasoningContent: a reasoning_content delta (DeepSeek, vLLM and other OpenAI-compatible
// servers of reasoning models) is a chunk's Reasoning, apart from its text.
func TestSSEReasoningContent(t *testing.T) {
	t.Parallel()
	in := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"Let me\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":null,\"reasoning_content\":\" think.\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\",\"reasoning_content\":null}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	s := streamOver(t.Context(), strings.NewReader(in))
	defer s.Close()
	var text, reasoning strings.Builder
	for {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(ch.Delta)
		reasoning.WriteString(ch.Reasoning)
	}
	if text.String() != "Hi" || reasoning.String() != "Let me think." {
		t.Fatalf("text %q reasoning %q", text.String(), reasoning.String())
	}
}
