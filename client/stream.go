package client

// This file is hand-written; everything else in the package is generated from api/openapi.yaml.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// MaxEventSize bounds one event of a stream; a larger event fails the stream rather than
// growing memory without limit.
const MaxEventSize = 16 << 20

// ErrEventTooLarge is returned when an event exceeds MaxEventSize.
var ErrEventTooLarge = errors.New("stream event exceeds MaxEventSize")

// ResponseError is a non-2xx reply decoded from the contract's Error body.
type ResponseError struct {
	// StatusCode is the HTTP status of the reply.
	StatusCode int
	// Body is the decoded Error body; Code is empty when the body was not one.
	Body Error
}

func (e *ResponseError) Error() string {
	if e.Body.Code == "" {
		return fmt.Sprintf("parley: HTTP %d", e.StatusCode)
	}
	return fmt.Sprintf("parley: HTTP %d %s: %s", e.StatusCode, e.Body.Code, e.Body.Message)
}

// EventStream reads a `text/event-stream` reply (for example of SendChatMessage with
// `response_mode: streaming`) as typed ChatStreamEvent values, skipping `ping` keep-alives.
//
//	resp, err := c.SendChatMessage(ctx, body, auth)
//	stream, err := client.NewEventStream(resp)
//	defer stream.Close()
//	for stream.Next() {
//		ev := stream.Event()
//		switch name, _ := ev.Discriminator(); name {
//		case "message":
//			m, _ := ev.AsMessageEvent()
//			fmt.Print(m.Answer)
//		}
//	}
//	if err := stream.Err(); err != nil { … }
//
// An `error` event is delivered like any other event: the stream ends after it.
type EventStream = Stream[ChatStreamEvent, *ChatStreamEvent]

// CompletionEventStream reads the stream of SendCompletionMessage as typed
// CompletionStreamEvent values, as EventStream reads a chat stream.
type CompletionEventStream = Stream[CompletionStreamEvent, *CompletionStreamEvent]

// WorkflowEventStream reads the stream of RunWorkflow and RunWorkflowVersion (a Workflow app's
// run) as typed WorkflowStreamEvent values.
type WorkflowEventStream = Stream[WorkflowStreamEvent, *WorkflowStreamEvent]

// Stream reads a `text/event-stream` reply as events of type E (a generated stream-event union),
// skipping `ping` keep-alives. Use it through EventStream or CompletionEventStream.
type Stream[E any, P interface {
	*E
	UnmarshalJSON([]byte) error
}] struct {
	body io.ReadCloser
	r    *bufio.Reader
	ev   E
	err  error
}

// NewEventStream wraps resp, a chat stream. A reply that is not a 200 event stream is closed and
// returned as an error: a *ResponseError for an error body.
func NewEventStream(resp *http.Response) (*EventStream, error) {
	return newStream[ChatStreamEvent](resp)
}

// NewCompletionEventStream wraps resp, a Completion stream, as NewEventStream wraps a chat one.
func NewCompletionEventStream(resp *http.Response) (*CompletionEventStream, error) {
	return newStream[CompletionStreamEvent](resp)
}

// NewWorkflowEventStream wraps resp, a Workflow app's run stream, as NewEventStream wraps a chat
// one.
func NewWorkflowEventStream(resp *http.Response) (*WorkflowEventStream, error) {
	return newStream[WorkflowStreamEvent](resp)
}

func newStream[E any, P interface {
	*E
	UnmarshalJSON([]byte) error
}](resp *http.Response) (*Stream[E, P], error) {
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := &ResponseError{StatusCode: resp.StatusCode}
		_ = json.Unmarshal(raw, &e.Body)
		return nil, e
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("parley: expected text/event-stream, got %q", resp.Header.Get("Content-Type"))
	}
	return &Stream[E, P]{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 32<<10)}, nil
}

// Next reads the next event other than ping. It returns false at the end of the stream or on an
// error; Err tells which.
func (s *Stream[E, P]) Next() bool {
	if s.err != nil {
		return false
	}
	for {
		data, name, err := s.readFrame()
		if err != nil {
			s.err = err // io.EOF at a clean end; Err reports nil for it
			return false
		}
		if data == nil {
			// A frame with no data: the `event: ping` keep-alive, or a comment.
			continue
		}
		var probe struct {
			Event string `json:"event"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			s.err = fmt.Errorf("parley: event is not JSON: %w", err)
			return false
		}
		if probe.Event == "ping" || (probe.Event == "" && name == "ping") {
			continue
		}
		if probe.Event == "" {
			s.err = fmt.Errorf("parley: event without an event member: %s", truncate(data))
			return false
		}
		var ev E
		if err := P(&ev).UnmarshalJSON(data); err != nil {
			s.err = err
			return false
		}
		s.ev = ev
		return true
	}
}

// Event is the event read by the last successful Next.
func (s *Stream[E, P]) Event() E { return s.ev }

// Err is the error that ended the stream, or nil at a clean end.
func (s *Stream[E, P]) Err() error {
	if errors.Is(s.err, io.EOF) {
		return nil
	}
	return s.err
}

// Close releases the connection.
func (s *Stream[E, P]) Close() error { return s.body.Close() }

// readFrame reads up to the blank line that ends a frame and returns its joined data lines (nil
// when it has none) and its `event:` field.
func (s *Stream[E, P]) readFrame() (data []byte, name string, err error) {
	size := 0
	seen := false
	for {
		line, err := s.readLine()
		if err != nil {
			// As the SSE standard says, an event cut off before its blank line is dropped.
			return nil, "", err
		}
		if len(line) == 0 {
			if !seen {
				continue
			}
			return data, name, nil
		}
		seen = true
		size += len(line)
		if size > MaxEventSize {
			return nil, "", ErrEventTooLarge
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		case "event":
			name = string(value)
		}
		// Comments (":…"), id and retry fields carry nothing for this API.
	}
}

func (s *Stream[E, P]) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := s.r.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, chunk...)
		if len(line) > MaxEventSize {
			return nil, ErrEventTooLarge
		}
		if !isPrefix {
			return line, nil
		}
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
