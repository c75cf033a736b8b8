package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// requestTimeout bounds every single request of the benchmark.
const requestTimeout = 60 * time.Second

// newClient returns an HTTP/1.1 client whose pool keeps conns connections per host, so the
// load generator reuses connections instead of dialing under load.
func newClient(conns int) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		DialContext:           d.DialContext,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       2 * time.Minute,
		ResponseHeaderTimeout: requestTimeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}}
}

// target is one side of a comparison: the fake upstream directly, or Parley.
type target struct {
	name   string
	client *http.Client
	url    string // the endpoint
	key    string // bearer token
}

func (t *target) post(ctx context.Context, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.key)
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, truncate(strings.TrimSpace(string(b)), 300))
	}
	return resp, nil
}

// get sends one GET to url with header, and the target's key as the bearer token when it has
// one, and returns the body of its 200 answer.
func (t *target) get(ctx context.Context, url string, header http.Header) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for name, vs := range header {
		req.Header[name] = vs
	}
	if t.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.key)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, truncate(strings.TrimSpace(string(b)), 300))
	}
	return b, nil
}

// systemPrompt is what the direct requests send as the system message, like Parley's pre_prompt.
const systemPrompt = "You are a load-test assistant."

// upstreamBody is a chat completion request to the fake, as an OpenAI client sends it.
func upstreamBody(query string, stream bool) []byte {
	m := map[string]any{
		"model": "gpt-4o-mini",
		"messages": []map[string]string{
			{"role": "system", "content": systemPrompt},
			{"role": "user", "content": query},
		},
		"stream": stream,
	}
	if stream {
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return b
}

// chatBody is a Service API chat-messages request.
func chatBody(query, user, mode, conversationID string, autoName *bool) []byte {
	m := map[string]any{"query": query, "inputs": map[string]any{}, "user": user, "response_mode": mode}
	if conversationID != "" {
		m["conversation_id"] = conversationID
	}
	if autoName != nil {
		m["auto_generate_name"] = *autoName
	}
	b, _ := json.Marshal(m)
	return b
}

// completionBody is a Service API completion-messages request to the writer app, whose prompt
// is its `text` input.
func completionBody(text, user, mode string) []byte {
	b, _ := json.Marshal(map[string]any{"inputs": map[string]any{"text": text}, "user": user, "response_mode": mode})
	return b
}

// streamResult is one streamed answer as the client saw it.
type streamResult struct {
	ttft   time.Duration // request start to the first answer chunk
	total  time.Duration // request start to the end of the answer
	chunks int           // answer chunks received
	answer string        // only when asked for
	taskID string        // Parley streams only
}

// lineReader reads SSE lines without allocating per line.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{br: bufio.NewReaderSize(r, 16<<10)} }

// next returns the next line without its line ending; the slice is valid until the next call.
func (l *lineReader) next() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.buf = append(l.buf[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = l.br.ReadSlice('\n')
			l.buf = append(l.buf, line...)
		}
		line = l.buf
	}
	if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

var (
	dataPrefix   = []byte("data: ")
	doneData     = []byte("[DONE]")
	contentDelta = []byte(`"delta":{"content":`)
	messageEvent = []byte(`"event":"message"`)
	messageEndEv = []byte(`"event":"message_end"`)
	errorEvent   = []byte(`"event":"error"`)
)

// streamDirect sends one streamed chat completion to the fake and reads it to [DONE]. TTFT is
// the first chunk with non-empty content (the role chunk before it carries none).
func streamDirect(ctx context.Context, t *target, body []byte, keepAnswer bool) (streamResult, error) {
	var res streamResult
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := t.post(ctx, t.url, body)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	lr := newLineReader(resp.Body)
	var answer strings.Builder
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("stream ended before [DONE]")
			}
			return res, err
		}
		data, ok := bytes.CutPrefix(line, dataPrefix)
		if !ok {
			continue
		}
		if bytes.Equal(data, doneData) {
			res.total = time.Since(start)
			res.answer = answer.String()
			return res, nil
		}
		if res.ttft == 0 || keepAnswer {
			var f struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(data, &f); err != nil {
				return res, fmt.Errorf("bad chunk %q: %w", truncate(string(data), 200), err)
			}
			if len(f.Choices) > 0 && f.Choices[0].Delta.Content != "" {
				if res.ttft == 0 {
					res.ttft = time.Since(start)
				}
				res.chunks++
				answer.WriteString(f.Choices[0].Delta.Content)
			}
			continue
		}
		if bytes.Contains(data, contentDelta) {
			res.chunks++
		}
	}
}

// streamParley sends one streaming chat message to Parley and reads it to message_end. TTFT is
// the first `message` event, not the ping that opens the stream. onFirst, if set, is called
// with the task id once the first message event arrived; the stream is then read on.
func streamParley(ctx context.Context, t *target, body []byte, keepAnswer bool, onFirst func(taskID string)) (streamResult, error) {
	var res streamResult
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := t.post(ctx, t.url, body)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	lr := newLineReader(resp.Body)
	var answer strings.Builder
	for {
		line, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("stream ended before message_end")
			}
			return res, err
		}
		data, ok := bytes.CutPrefix(line, dataPrefix)
		if !ok {
			continue // the ping, blank separators
		}
		if res.ttft == 0 || keepAnswer {
			var ev struct {
				Event  string `json:"event"`
				TaskID string `json:"task_id"`
				Answer string `json:"answer"`
			}
			if err := json.Unmarshal(data, &ev); err != nil {
				return res, fmt.Errorf("bad event %q: %w", truncate(string(data), 200), err)
			}
			switch ev.Event {
			case "message":
				res.chunks++
				answer.WriteString(ev.Answer)
				if res.ttft == 0 {
					res.ttft = time.Since(start)
					res.taskID = ev.TaskID
					if onFirst != nil {
						onFirst(ev.TaskID)
					}
				}
				continue
			case "message_end":
				res.total = time.Since(start)
				res.answer = answer.String()
				return res, nil
			case "error":
				return res, fmt.Errorf("error event: %s", truncate(string(data), 300))
			}
			continue
		}
		switch {
		case bytes.Contains(data, messageEvent):
			res.chunks++
		case bytes.Contains(data, messageEndEv):
			res.total = time.Since(start)
			return res, nil
		case bytes.Contains(data, errorEvent):
			return res, fmt.Errorf("error event: %s", truncate(string(data), 300))
		}
	}
}

// blockingCall sends one blocking request and reads the whole reply. With out set, the reply is
// decoded into it.
func blockingCall(ctx context.Context, t *target, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := t.post(ctx, t.url, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// stopTask asks Parley to stop a run.
func stopTask(ctx context.Context, t *target, base, taskID, user string) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	b, _ := json.Marshal(map[string]string{"user": user})
	resp, err := t.post(ctx, base+"/chat-messages/"+taskID+"/stop", b)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
