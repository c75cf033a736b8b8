package conformance

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// idempotentCall sends a request with an Idempotency-Key and returns the status, the body and
// whether the answer says it was replayed.
func idempotentCall(t *testing.T, p *Parley, method, path, body, key, idem, contentType string) (int, []byte, bool) {
	t.Helper()
	req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", cmp.Or(contentType, "application/json"))
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, raw := rawDo(t, req)
	return resp.StatusCode, raw, resp.Header.Get("Idempotent-Replayed") == "true"
}

// TestIdempotency: a retry of a request that starts work, with the same Idempotency-Key and
// body, gets the first answer byte for byte and starts nothing: a blocking chat, a streamed chat
// once it ended, a workflow run, an OpenAI chat completion, a file upload and a document; the
// same key with another body gets 422; a retry while the first request is still answered gets
// 409; a malformed key gets 400; keys are the API key's own.
func TestIdempotency(t *testing.T) {
	p := startParley(t, "sqlite")
	q := marker(t, "once only")
	upstream.On(q, openaitest.Reply{Text: "Only once."})
	calls := func() int {
		n := 0
		for _, r := range upstream.Requests() {
			if r.LastUserMessage() == q {
				n++
			}
		}
		return n
	}
	body := `{"query":"` + q + `","inputs":{"tone":"warm"},"user":"idem","response_mode":"blocking","auto_generate_name":false}`
	s1, first, replayed := idempotentCall(t, p, "POST", "/chat-messages", body, p.AppKey, "chat-1", "")
	if s1 != 200 || replayed {
		t.Fatalf("first: %d %s", s1, first)
	}
	s2, again, replayed := idempotentCall(t, p, "POST", "/chat-messages", strings.ReplaceAll(body, `,"user"`, ` , "user"`), p.AppKey, "chat-1", "")
	if s2 != 200 || !replayed || !bytes.Equal(first, again) || calls() != 1 {
		t.Fatalf("retry: %d replayed=%v, %d model calls\n%s\n%s", s2, replayed, calls(), first, again)
	}
	if s, raw, _ := idempotentCall(t, p, "POST", "/chat-messages", strings.Replace(body, "warm", "cold", 1), p.AppKey, "chat-1", ""); s != 422 ||
		!strings.Contains(string(raw), "idempotency_key_mismatch") {
		t.Fatalf("another body: %d %s", s, raw)
	}
	other := p.CLI(t, "keys", "create", "--app", "chatbot")
	if s, _, replayed := idempotentCall(t, p, "POST", "/chat-messages", body, other, "chat-1", ""); s != 200 || replayed || calls() != 2 {
		t.Fatalf("another API key's: %d replayed=%v", s, replayed)
	}
	if s, raw, _ := idempotentCall(t, p, "POST", "/chat-messages", body, p.AppKey, "has space", ""); s != 400 {
		t.Fatalf("a malformed key: %d %s", s, raw)
	}

	// A streamed answer: a retry while it streams gets 409; once it ended, the stream again.
	slow := marker(t, "slow stream")
	upstream.On(slow, openaitest.Reply{Chunks: []string{"one ", "two ", "three"}, ChunkDelay: 300 * time.Millisecond})
	sbody := `{"query":"` + slow + `","inputs":{"tone":"warm"},"user":"idem","response_mode":"streaming","auto_generate_name":false}`
	req, _ := newRequest("POST", p.URL+"/chat-messages", sbody, p.AppKey)
	req.Header.Set("Idempotency-Key", "stream-1")
	resp, err := newContractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the stream has begun
		t.Fatal(err)
	}
	if s, raw, _ := idempotentCall(t, p, "POST", "/chat-messages", sbody, p.AppKey, "stream-1", ""); s != 409 || !strings.Contains(string(raw), "idempotency_key_in_use") {
		t.Fatalf("a retry during the stream: %d %s", s, raw)
	}
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if !strings.Contains(string(rest), "message_end") {
		t.Fatalf("the stream: %s", rest)
	}
	s, replay, replayed := idempotentCall(t, p, "POST", "/chat-messages", sbody, p.AppKey, "stream-1", "")
	if s != 200 || !replayed || !strings.HasSuffix(string(replay), string(rest)) || !strings.Contains(string(replay), "message_end") {
		t.Fatalf("the stream replayed: %d %v\n%s", s, replayed, replay)
	}

	// A workflow run, an OpenAI chat completion.
	flowKey := exampleApp(t, p, workflowExample, "Topic Writer", "Idempotent Topic Writer")
	topic := marker(t, "tides")
	upstream.On(topic, openaitest.Reply{Text: "Tides."})
	wbody := `{"inputs":{"topic":"` + topic + `"},"user":"idem","response_mode":"blocking"}`
	_, w1, _ := idempotentCall(t, p, "POST", "/workflows/run", wbody, flowKey, "run-1", "")
	_, w2, replayed := idempotentCall(t, p, "POST", "/workflows/run", wbody, flowKey, "run-1", "")
	if !replayed || !bytes.Equal(w1, w2) {
		t.Fatalf("a workflow run: %s\n%s", w1, w2)
	}
	obody := `{"model":"x","messages":[{"role":"user","content":"` + q + `"}],"inputs":{"tone":"warm"}}`
	_, o1, _ := idempotentCall(t, p, "POST", "/chat/completions", obody, p.AppKey, "openai-1", "")
	_, o2, replayed := idempotentCall(t, p, "POST", "/chat/completions", obody, p.AppKey, "openai-1", "")
	if !replayed || !bytes.Equal(o1, o2) {
		t.Fatalf("a chat completion: %s\n%s", o1, o2)
	}
	if s, raw, _ := idempotentCall(t, p, "POST", "/chat/completions", strings.Replace(obody, `"x"`, `"y"`, 1), p.AppKey, "openai-1", ""); s != 422 ||
		!strings.Contains(string(raw), `"type":"invalid_request_error"`) {
		t.Fatalf("a chat completion with another body: %d %s", s, raw)
	}

	// A file upload (multipart) and a document.
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	fw, _ := mw.CreateFormFile("file", "notes.txt")
	_, _ = fw.Write([]byte("Remember the milk."))
	_ = mw.WriteField("user", "idem")
	_ = mw.Close()
	_, f1, _ := idempotentCall(t, p, "POST", "/files/upload", mb.String(), p.AppKey, "upload-1", mw.FormDataContentType())
	_, f2, replayed := idempotentCall(t, p, "POST", "/files/upload", mb.String(), p.AppKey, "upload-1", mw.FormDataContentType())
	if !replayed || !bytes.Equal(f1, f2) {
		t.Fatalf("an upload: %s\n%s", f1, f2)
	}
	kc := newClient(t, p, p.KnowledgeKey)
	ds := segDataset(t, kc, marker(t, "idempotent kb"), false)
	dbody := `{"name":"policy","text":"Vacation is granted yearly.","indexing_technique":"economy","process_rule":{"mode":"automatic"}}`
	path := "/datasets/" + ds + "/document/create-by-text"
	s, d1, _ := idempotentCall(t, p, "POST", path, dbody, p.KnowledgeKey, "doc-1", "")
	_, d2, replayed := idempotentCall(t, p, "POST", path, dbody, p.KnowledgeKey, "doc-1", "")
	if s != 200 || !replayed || !bytes.Equal(d1, d2) {
		t.Fatalf("a document: %d %s\n%s", s, d1, d2)
	}
	var docs struct{ Total int }
	status, raw := rawCall(t, p, "GET", "/datasets/"+ds+"/documents", "", p.KnowledgeKey)
	if status != 200 || json.Unmarshal(raw, &docs) != nil || docs.Total != 1 {
		t.Fatalf("documents: %d %s", status, raw)
	}
}

// TestIdempotencyAfterKill: a server killed (SIGKILL) while it answers a request with an
// Idempotency-Key does not leave the key in use: after the restart, the retry runs the request
// again and is answered.
func TestIdempotencyAfterKill(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	p := startParley(t, "sqlite")
	q := marker(t, "cut short")
	upstream.OnEach(q, openaitest.Reply{Chunks: []string{"Once ", "upon"}, HangAfterChunks: 1}, openaitest.Reply{Text: "Once upon a time."})
	body := `{"query":"` + q + `","inputs":{"tone":"warm"},"user":"idem","response_mode":"streaming","auto_generate_name":false}`
	req, _ := newRequest("POST", p.URL+"/chat-messages", body, p.AppKey)
	req.Header.Set("Idempotency-Key", "killed-1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"event":"message"`) {
			break
		}
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.Start(t)
	s, raw, replayed := idempotentCall(t, p, "POST", "/chat-messages", body, p.AppKey, "killed-1", "")
	if s != 200 || replayed || !strings.Contains(string(raw), "message_end") {
		t.Fatalf("the retry after the kill: %d replayed=%v %s", s, replayed, raw)
	}
}
