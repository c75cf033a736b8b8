package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/sse"
)

// countingWriter counts the writes that reach the client, and fails them once fail is set.
type countingWriter struct {
	*httptest.ResponseRecorder
	writes int
	fail   bool
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.fail {
		return 0, errors.New("client gone")
	}
	w.writes++
	return w.ResponseRecorder.Write(b)
}

// scripted is a frameSource that plays steps, one per call of next: the frames to queue (none:
// nothing came within the wait, which it sleeps), and whether the stream ends after them.
type scripted struct {
	steps [][]string
	end   bool
	calls int
}

func (s *scripted) next(_ context.Context, wait time.Duration, out *sse.Writer) (bool, error) {
	if s.calls == len(s.steps) {
		return true, nil
	}
	step := s.steps[s.calls]
	s.calls++
	if len(step) == 0 {
		time.Sleep(wait)
	}
	for _, f := range step {
		if err := out.Queue([]byte(f)); err != nil {
			return false, err
		}
	}
	return s.end && s.calls == len(s.steps), nil
}

// TestPumpFlushesABurstOnce: the events one call of next queued reach the client in one write,
// and the stream ends when the source ends it.
func TestPumpFlushesABurstOnce(t *testing.T) {
	w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
	out := sse.NewWriter(w, -1)
	_ = out.Ping() // as every stream starts
	src := &scripted{steps: [][]string{{`{"a":1}`, `{"a":2}`, `{"a":3}`}, {`{"a":4}`}}, end: true}
	if !pump(context.Background(), out, src, time.Hour) {
		t.Fatal("the stream did not end as its source said")
	}
	if w.writes != 1+2 || strings.Count(w.Body.String(), "data: ") != 4 {
		t.Fatalf("%d writes for two bursts: %q", w.writes, w.Body.String())
	}
}

// TestPumpPingsWhenIdle: a stream that had nothing to write for the ping interval gets a
// keep-alive.
func TestPumpPingsWhenIdle(t *testing.T) {
	w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
	out := sse.NewWriter(w, -1)
	_ = out.Ping()
	src := &scripted{steps: [][]string{{}, {}, {`{"a":1}`}}, end: true}
	pump(context.Background(), out, src, 10*time.Millisecond)
	if got := strings.Count(w.Body.String(), string(sse.PingFrame)) - 1; got < 2 {
		t.Fatalf("%d keep-alives after two idle intervals: %q", got, w.Body.String())
	}
}

// TestPumpStopsWhenTheClientGoes: a write that fails ends the stream as not ended by its
// source, so the caller lets the run go on without the client.
func TestPumpStopsWhenTheClientGoes(t *testing.T) {
	w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
	out := sse.NewWriter(w, -1)
	_ = out.Ping()
	w.fail = true
	src := &scripted{steps: [][]string{{`{"a":1}`}, {`{"a":2}`}}, end: true}
	if pump(context.Background(), out, src, time.Hour) {
		t.Fatal("a stream whose client is gone ended as if its source ended it")
	}
	if src.calls != 1 {
		t.Fatalf("the source was read %d times after the client went", src.calls)
	}
}

var _ http.ResponseWriter = (*countingWriter)(nil)

// TestPumpCommentPings: a stream whose keep-alive is a comment line (the OpenAI-compatible
// stream's) sends that instead of `event: ping`, which OpenAI's clients would read as an event
// without data.
func TestPumpCommentPings(t *testing.T) {
	w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
	out := sse.NewWriter(w, -1)
	out.SetPingFrame(sse.CommentPingFrame)
	src := &scripted{steps: [][]string{{}, {}, {`{"a":1}`}}, end: true}
	pump(context.Background(), out, src, 10*time.Millisecond)
	body := w.Body.String()
	if strings.Count(body, string(sse.CommentPingFrame)) < 2 || strings.Contains(body, "event: ping") {
		t.Fatalf("keep-alives: %q", body)
	}
}
