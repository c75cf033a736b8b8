// Package sse writes Server-Sent Events the way Dify frames them: every event is one
// `data: <compact JSON>` line and a blank line, with no `event:` or `id:` field; the keep-alive
// is the bare frame `event: ping`; the stream ends by closing, with no sentinel, as Dify's
// streams do. It knows nothing of the events themselves.
package sse

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// PingFrame is the keep-alive frame.
var PingFrame = []byte("event: ping\n\n")

// CommentPingFrame is a keep-alive as a comment line, which every SSE client skips: for streams
// whose clients read each frame's data as JSON (OpenAI's), where `event: ping` would be an event
// without data.
var CommentPingFrame = []byte(": ping\n\n")

// DefaultPingInterval is how long a stream may stay silent before a keep-alive, as in Dify.
const DefaultPingInterval = 10 * time.Second

// AppendFrame appends the frame carrying one JSON-encoded event to dst.
func AppendFrame(dst, data []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// AppendNamedFrame appends a frame that names its event on an `event:` line before its data
// (OpenAI's Responses streams name every event so).
func AppendNamedFrame(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, '\n')
	return AppendFrame(dst, data)
}

// Headers prepares w for a stream: the content type, no caching, no proxy buffering (nginx
// honours X-Accel-Buffering), and no write deadline, since a stream outlives any fixed one.
func Headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}

// DefaultStallTimeout is how long one write may wait for a client that has stopped reading.
const DefaultStallTimeout = 60 * time.Second

// Writer writes frames to one response and flushes each, so every event reaches the client as
// soon as it is written. It is not safe for concurrent use: one goroutine owns a stream.
//
// Each write must complete within the stall timeout. A client that keeps its connection open
// but stops reading would otherwise block the writer for ever once the socket buffers are
// full, and with it whatever feeds the stream.
type Writer struct {
	w     io.Writer
	rc    *http.ResponseController
	buf   []byte
	err   error
	wrote time.Time
	stall time.Duration
	// armed is set once a write deadline is on the connection.
	armed bool
	// ping is the keep-alive frame (PingFrame unless SetPingFrame changed it).
	ping []byte
}

// NewWriter returns a Writer on w, which should already have its headers set (see Headers).
// stall bounds each write (DefaultStallTimeout when 0, none when negative). Call Close when
// the stream ends.
func NewWriter(w http.ResponseWriter, stall time.Duration) *Writer {
	if stall == 0 {
		stall = DefaultStallTimeout
	}
	return &Writer{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, 512), stall: stall, ping: PingFrame}
}

// SetPingFrame makes frame the keep-alive Ping writes (CommentPingFrame, say).
func (s *Writer) SetPingFrame(frame []byte) { s.ping = frame }

// Close clears the write deadline, so that it cannot reach the next response on the same
// connection. It writes nothing.
func (s *Writer) Close() {
	if s.armed {
		_ = s.rc.SetWriteDeadline(time.Time{})
		s.armed = false
	}
}

// Queue adds one JSON-encoded event to the frames waiting for the next Flush, so a burst of
// events costs one write instead of one each.
func (s *Writer) Queue(data []byte) error {
	if s.err != nil {
		return s.err
	}
	s.buf = AppendFrame(s.buf, data)
	return nil
}

// QueueEvent is Queue for a frame that names its event (AppendNamedFrame).
func (s *Writer) QueueEvent(name string, data []byte) error {
	if s.err != nil {
		return s.err
	}
	s.buf = AppendNamedFrame(s.buf, name, data)
	return nil
}

// QueueFrame queues a frame made already (ending with its blank line).
func (s *Writer) QueueFrame(frame []byte) error {
	if s.err != nil {
		return s.err
	}
	s.buf = append(s.buf, frame...)
	return nil
}

// Flush writes the queued frames, if any, and flushes them to the client.
func (s *Writer) Flush() error {
	if len(s.buf) == 0 {
		return s.err
	}
	err := s.write(s.buf)
	s.buf = s.buf[:0]
	return err
}

// Ping writes the keep-alive frame (after any queued frames) and flushes it.
func (s *Writer) Ping() error {
	if err := s.Flush(); err != nil {
		return err
	}
	return s.write(s.ping)
}

// LastWrite is when the last frame went out.
func (s *Writer) LastWrite() time.Time { return s.wrote }

func (s *Writer) write(frame []byte) error {
	if s.err != nil {
		return s.err
	}
	if s.stall > 0 && s.rc.SetWriteDeadline(time.Now().Add(s.stall)) == nil {
		s.armed = true
	}
	if _, err := s.w.Write(frame); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
		return err
	}
	s.wrote = time.Now()
	return nil
}
