package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// openAIBody is a chat completion request to the chatbot app (whose form requires tone) for
// the messages, JSON-encoded.
func openAIBody(t *testing.T, stream bool, extra map[string]any, messages ...map[string]any) string {
	t.Helper()
	b := map[string]any{"model": "chatbot", "messages": messages, "inputs": map[string]any{"tone": "warm"}, "user": "openai-conformance"}
	if stream {
		b["stream"], b["stream_options"] = true, map[string]any{"include_usage": true}
	}
	for k, v := range extra {
		b[k] = v
	}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

// chatcmplRE matches the answer ids and the creation times a transcript pins as placeholders.
var (
	chatcmplRE      = regexp.MustCompile(`"chatcmpl-<uuid-\d+>"`)
	openAICreatedRE = regexp.MustCompile(`"created":\d+`)
)

// TestOpenAIGolden pins the bytes of a blocking chat completion and of a streamed one with its
// usage chunk and [DONE], after normalising ids and times.
func TestOpenAIGolden(t *testing.T) {
	p := startParley(t, "sqlite")
	q := marker(t, "golden openai")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Hello", " there", "!"}, Usage: &providers.Usage{PromptTokens: 24, CompletionTokens: 3}})
	for _, tc := range []struct {
		stream bool
		file   string
	}{{false, "openai_blocking.json.golden"}, {true, "openai_streaming.sse.golden"}} {
		req, _ := newRequest("POST", p.URL+"/chat/completions", openAIBody(t, tc.stream, nil, msg("user", q)), p.AppKey)
		got := normalize(httpTranscript(rawDo(t, req)))
		got = openAICreatedRE.ReplaceAllString(got, `"created":<ts>`)
		if !chatcmplRE.MatchString(got) {
			t.Fatalf("no chatcmpl id:\n%s", got)
		}
		golden(t, tc.file, strings.TrimRight(got, "\n")+"\n")
	}
}

// TestOpenAIHistory: the messages before the last user message reach the model as the
// conversation's earlier turns, tool messages and tool calls left out, and the answer is stored
// as a conversation of one message; a system message is dropped for an app without a `system`
// input, the app's own prompt standing. conversation_id continues the stored conversation, whose
// history then replaces the one given.
func TestOpenAIHistory(t *testing.T) {
	p := startParley(t, "sqlite")
	q := marker(t, "the question")
	upstream.On(q, openaitest.Reply{Text: "The answer."})
	seen := len(upstream.Requests())
	body := openAIBody(t, false, nil,
		msg("system", "Answer like a pirate."),
		msg("user", "Hello"), msg("user", "Anyone there?"),
		msg("assistant", "Hi!"),
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": "tool says"},
		msg("assistant", "Ask away."),
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": q}}},
	)
	status, raw := rawCall(t, p, "POST", "/chat/completions", body, p.AppKey)
	var res struct {
		ConversationID string `json:"conversation_id"`
		Choices        []struct {
			Message struct{ Content string }
		}
	}
	if status != http.StatusOK || json.Unmarshal(raw, &res) != nil || res.Choices[0].Message.Content != "The answer." {
		t.Fatalf("%d %s", status, raw)
	}
	var prompt []string
	for _, r := range upstream.Requests()[seen:] {
		if r.LastUserMessage() == q {
			for _, m := range r.Messages {
				prompt = append(prompt, string(m.Role)+": "+m.Text())
			}
		}
	}
	got := strings.Join(prompt, "\n")
	want := "user: Hello\n\nAnyone there?\nassistant: Hi!\n\nAsk away.\nuser: " + q
	if !strings.HasSuffix(got, want) || strings.Contains(got, "pirate") || strings.Contains(got, "tool says") {
		t.Fatalf("the model saw:\n%s\nwant it to end with:\n%s", got, want)
	}
	c := newClient(t, p, p.AppKey)
	msgs, err := c.ListMessagesWithResponse(context.Background(), &client.ListMessagesParams{ConversationId: res.ConversationID, User: ptr("openai-conformance")})
	if err != nil || msgs.JSON200 == nil || len(msgs.JSON200.Data) != 1 || msgs.JSON200.Data[0].Query != q {
		t.Fatalf("stored: %v %s", err, msgs.Body)
	}

	q2 := marker(t, "the follow-up")
	upstream.On(q2, openaitest.Reply{Text: "Again."})
	seen = len(upstream.Requests())
	status, raw = rawCall(t, p, "POST", "/chat/completions",
		openAIBody(t, false, map[string]any{"conversation_id": res.ConversationID}, msg("user", "ignored history"), msg("assistant", "ignored"), msg("user", q2)), p.AppKey)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, raw)
	}
	prompt = nil
	for _, r := range upstream.Requests()[seen:] {
		if r.LastUserMessage() == q2 {
			for _, m := range r.Messages {
				prompt = append(prompt, string(m.Role)+": "+m.Text())
			}
		}
	}
	got = strings.Join(prompt, "\n")
	if want := "user: " + q + "\nassistant: The answer.\nuser: " + q2; !strings.HasSuffix(got, want) || strings.Contains(got, "ignored") {
		t.Fatalf("a continued conversation: the model saw:\n%s", got)
	}
}

// TestOpenAIFinishReasons: a model that hit its token limit finishes with length; an answer
// moderation withheld finishes with content_filter, blocking and streaming, the preset replacing
// a flagged question's answer and following a flagged answer's text.
func TestOpenAIFinishReasons(t *testing.T) {
	p := startParley(t, "sqlite")
	q := marker(t, "a long story")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Once ", "upon"}, FinishReason: "length"})
	status, raw := rawCall(t, p, "POST", "/chat/completions", openAIBody(t, false, nil, msg("user", q)), p.AppKey)
	if status != http.StatusOK || !strings.Contains(string(raw), `"finish_reason":"length"`) {
		t.Fatalf("length: %d %s", status, raw)
	}
	chunks := openAIStream(t, p, p.AppKey, openAIBody(t, true, nil, msg("user", q)))
	if finishOf(chunks) != "length" {
		t.Fatalf("streamed length: %v", chunks)
	}

	key := p.CLI(t, "keys", "create", "--app", importedName(t, p, guardedChat("Guarded OpenAI", "chat", "keywords")))
	flagged := map[string]any{"model": "x", "messages": []any{msg("user", marker(t, "tell me about BLASPHEMY"))}}
	raw2, _ := json.Marshal(flagged)
	status, raw = rawCall(t, p, "POST", "/chat/completions", string(raw2), key)
	if status != http.StatusOK || !strings.Contains(string(raw), `"content":"`+inputPreset+`"`) || !strings.Contains(string(raw), `"finish_reason":"content_filter"`) {
		t.Fatalf("flagged question: %d %s", status, raw)
	}
	q = marker(t, "what do heretics say")
	upstream.On(q, openaitest.Reply{Chunks: []string{"They speak ", "of heresy", "."}})
	body, _ := json.Marshal(map[string]any{"model": "x", "messages": []any{msg("user", q)}, "stream": true})
	chunks = openAIStream(t, p, key, string(body))
	if finishOf(chunks) != "content_filter" || !strings.HasSuffix(contentOf(chunks), "\n\n"+outputPreset) {
		t.Fatalf("flagged answer, streamed: %q %v", contentOf(chunks), chunks)
	}
	body, _ = json.Marshal(map[string]any{"model": "x", "messages": []any{msg("user", q)}})
	status, raw = rawCall(t, p, "POST", "/chat/completions", string(body), key)
	if status != http.StatusOK || !strings.Contains(string(raw), `"content":"`+outputPreset+`"`) || !strings.Contains(string(raw), `"finish_reason":"content_filter"`) {
		t.Fatalf("flagged answer: %d %s", status, raw)
	}
}

// importedName imports doc and returns the app's name.
func importedName(t *testing.T, p *Parley, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.yml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p.CLI(t, "apps", "import", path)
}

// TestOpenAIDisconnect: a client that goes away in the middle of a stream does not stop the
// run: the answer is finished and stored, as on /chat-messages.
func TestOpenAIDisconnect(t *testing.T) {
	p := startParley(t, "sqlite")
	q := marker(t, "slow answer")
	upstream.On(q, openaitest.Reply{Chunks: []string{"one ", "two ", "three ", "four"}, ChunkDelay: 150 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := newRequest("POST", p.URL+"/chat/completions", openAIBody(t, true, nil, msg("user", q)), p.AppKey)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	var conversation string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && conversation == "" {
		var ch struct {
			ConversationID string `json:"conversation_id"`
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &ch) == nil {
			conversation = ch.ConversationID
		}
	}
	cancel()
	resp.Body.Close()
	if conversation == "" {
		t.Fatal("no conversation_id in the first chunk")
	}
	c := newClient(t, p, p.AppKey)
	deadline := time.Now().Add(30 * time.Second)
	for {
		msgs, err := c.ListMessagesWithResponse(context.Background(), &client.ListMessagesParams{ConversationId: conversation, User: ptr("openai-conformance")})
		if err == nil && msgs.JSON200 != nil && len(msgs.JSON200.Data) == 1 && msgs.JSON200.Data[0].Answer == "one two three four" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the answer was not finished after the client went: %v %s", err, msgs.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOpenAIErrors: refusals on the OpenAI paths are OpenAI's error object with the right
// status, whoever refuses: the key check, the request validator, a handler, an unknown route or
// method; a failure after the stream began is one error line.
func TestOpenAIErrors(t *testing.T) {
	p := startParley(t, "sqlite")
	for _, tc := range []struct {
		method, path, body, key string
		status                  int
		typ, code               string
	}{
		{"POST", "/chat/completions", `{"model":"x","messages":[{"role":"user","content":"hi"}]}`, "app-nope", 401, "authentication_error", "invalid_api_key"},
		{"POST", "/chat/completions", `{"model":"x","messages":"hi"}`, p.AppKey, 400, "invalid_request_error", "invalid_param"},
		{"POST", "/chat/completions", `{"model":"x","messages":[{"role":"wizard","content":"hi"}]}`, p.AppKey, 400, "invalid_request_error", "invalid_param"},
		{"POST", "/chat/completions", `{"model":"x","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, p.AppKey, 400, "invalid_request_error", "invalid_param"},
		{"POST", "/chat/completions", `{"model":"x","messages":[{"role":"user","content":"hi"}]`, p.AppKey, 400, "invalid_request_error", "bad_request"},
		{"POST", "/chat/completions", `{"model":"x","messages":[{"role":"user","content":"hi"}],"inputs":{}}`, p.AppKey, 400, "invalid_request_error", "invalid_param"},
		{"GET", "/chat/completions", ``, p.AppKey, 405, "invalid_request_error", "method_not_allowed"},
		{"DELETE", "/models", ``, p.AppKey, 405, "invalid_request_error", "method_not_allowed"},
		{"GET", "/models/other-app", ``, p.AppKey, 404, "invalid_request_error", "model_not_found"},
		{"GET", "/models", ``, p.KnowledgeKey, 401, "authentication_error", "invalid_api_key"},
	} {
		status, raw := rawCall(t, p, tc.method, tc.path, tc.body, tc.key)
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		if status != tc.status || json.Unmarshal(raw, &e) != nil || e.Error.Type != tc.typ || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s %s %.80s: %d %s", tc.method, tc.path, tc.body, status, raw)
		}
	}
	// A model that fails after the stream began: an error line ends the stream, no [DONE].
	q := marker(t, "broken upstream")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Half ", "an answer"}, CutAfterChunks: 1})
	chunks := openAIStream(t, p, p.AppKey, openAIBody(t, true, nil, msg("user", q)))
	last := chunks[len(chunks)-1]
	if !strings.Contains(last, `"error":{`) || strings.Contains(strings.Join(chunks, "\n"), "[DONE]") {
		t.Fatalf("a failed stream: %v", chunks)
	}
}

// openAIStream sends a streaming request and returns its data lines, checking each frame is a
// data line or a comment.
func openAIStream(t *testing.T, p *Parley, key, body string) []string {
	t.Helper()
	req, _ := newRequest("POST", p.URL+"/chat/completions", body, key)
	resp, raw := rawDo(t, req)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	var out []string
	for _, frame := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		if strings.HasPrefix(frame, ":") {
			continue
		}
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok {
			t.Fatalf("frame %q", frame)
		}
		out = append(out, data)
	}
	return out
}

// finishOf is the finish reason of a stream's chunks.
func finishOf(chunks []string) string {
	for _, c := range chunks {
		var ch struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			}
		}
		if json.Unmarshal([]byte(c), &ch) == nil && len(ch.Choices) == 1 && ch.Choices[0].FinishReason != nil {
			return *ch.Choices[0].FinishReason
		}
	}
	return ""
}

// contentOf is the content a stream's chunks carry.
func contentOf(chunks []string) string {
	var b strings.Builder
	for _, c := range chunks {
		var ch struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		if json.Unmarshal([]byte(c), &ch) == nil && len(ch.Choices) == 1 {
			b.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	return b.String()
}

// TestOpenAIStop: the task_id every chunk carries stops the answer through the Service API's stop
// operation; the stream then finishes with what was generated, and [DONE].
func TestOpenAIStop(t *testing.T) {
	p := startParley(t, "sqlite")
	q := marker(t, "endless answer")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Partial ", "never sent"}, HangAfterChunks: 1})
	req, _ := newRequest("POST", p.URL+"/chat/completions", openAIBody(t, true, nil, msg("user", q)), p.AppKey)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := newContractClient(t).Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	stopped := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		lines = append(lines, data)
		var ch struct {
			TaskID  string `json:"task_id"`
			Choices []struct{ Delta struct{ Content string } }
		}
		if !stopped && json.Unmarshal([]byte(data), &ch) == nil && len(ch.Choices) == 1 && ch.Choices[0].Delta.Content == "Partial " {
			status, raw := rawCall(t, p, "POST", "/chat-messages/"+ch.TaskID+"/stop", `{"user":"openai-conformance"}`, p.AppKey)
			if status != http.StatusOK {
				t.Fatalf("stop: %d %s", status, raw)
			}
			stopped = true
		}
	}
	if !stopped || lines[len(lines)-1] != "[DONE]" || finishOf(lines) != "stop" || contentOf(lines) != "Partial " {
		t.Fatalf("stopped stream: %v", lines)
	}
}

// TestOpenAIResponsesGolden pins a blocking response and a streamed one, event by event, and
// checks a stream that fails after it began ends with an error event, and an answer cut short
// by the model's token limit is incomplete.
func TestOpenAIResponsesGolden(t *testing.T) {
	p := startParley(t, "sqlite")
	q := marker(t, "golden responses")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Hello", " there", "!"}, Usage: &providers.Usage{PromptTokens: 24, CompletionTokens: 3}})
	respRE := regexp.MustCompile(`"(resp|msg)_<uuid-\d+>"`)
	for _, tc := range []struct {
		stream bool
		file   string
	}{{false, "openai_response_blocking.json.golden"}, {true, "openai_response_streaming.sse.golden"}} {
		body, _ := json.Marshal(map[string]any{"model": "chatbot", "input": q, "inputs": map[string]any{"tone": "warm"}, "user": "golden", "stream": tc.stream})
		req, _ := newRequest("POST", p.URL+"/responses", string(body), p.AppKey)
		got := normalize(httpTranscript(rawDo(t, req)))
		if !respRE.MatchString(got) {
			t.Fatalf("no resp_ id:\n%s", got)
		}
		golden(t, tc.file, strings.TrimRight(got, "\n")+"\n")
	}

	q = marker(t, "broken upstream")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Half ", "an answer"}, CutAfterChunks: 1})
	body, _ := json.Marshal(map[string]any{"model": "chatbot", "input": q, "inputs": map[string]any{"tone": "warm"}, "stream": true})
	req, _ := newRequest("POST", p.URL+"/responses", string(body), p.AppKey)
	_, raw := rawDo(t, req)
	frames := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
	if last := frames[len(frames)-1]; !strings.HasPrefix(last, "event: error\ndata: {\"type\":\"error\"") || strings.Contains(string(raw), "response.completed") {
		t.Fatalf("a failed stream:\n%s", raw)
	}

	q = marker(t, "a long story")
	upstream.On(q, openaitest.Reply{Chunks: []string{"Once ", "upon"}, FinishReason: "length"})
	body, _ = json.Marshal(map[string]any{"model": "chatbot", "input": q, "inputs": map[string]any{"tone": "warm"}})
	status, raw := rawCall(t, p, "POST", "/responses", string(body), p.AppKey)
	if status != http.StatusOK || !strings.Contains(string(raw), `"status":"incomplete"`) || !strings.Contains(string(raw), `"incomplete_details":{"reason":"max_output_tokens"}`) {
		t.Fatalf("cut short: %d %s", status, raw)
	}
	for _, tc := range []struct {
		body   string
		status int
		param  string
	}{
		{`{"model":"x","input":[{"role":"assistant","content":"no question"}],"inputs":{"tone":"warm"}}`, 400, "input"},
		{`{"model":"x","input":42}`, 400, ""},
		{`{"model":"x","input":"hi","previous_response_id":"resp_nope","inputs":{"tone":"warm"}}`, 404, "previous_response_id"},
	} {
		status, raw := rawCall(t, p, "POST", "/responses", tc.body, p.AppKey)
		var e struct {
			Error struct{ Param *string }
		}
		if status != tc.status || json.Unmarshal(raw, &e) != nil || tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
			t.Errorf("%s: %d %s", tc.body, status, raw)
		}
	}
}
