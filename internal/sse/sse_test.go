package sse

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestFramesArriveAsWritten reads a stream over real HTTP while it is being written: each frame
// must be readable before the next is sent (flushed, not buffered), framed as Dify frames it.
func TestFramesArriveAsWritten(t *testing.T) {
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		Headers(w)
		w.WriteHeader(http.StatusOK)
		sw := NewWriter(w, 0)
		for _, f := range []func() error{
			sw.Ping,
			func() error { return send(sw, []byte(`{"event":"message","answer":"Hi"}`)) },
			func() error { return send(sw, []byte(`{"event":"message_end"}`)) },
		} {
			if err := f(); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-next:
			case <-time.After(5 * time.Second):
				t.Error("reader did not see the frame: it was not flushed")
				return
			}
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, h := range [][2]string{{"Content-Type", "text/event-stream; charset=utf-8"}, {"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}} {
		if got := resp.Header.Get(h[0]); got != h[1] {
			t.Errorf("%s = %q, want %q", h[0], got, h[1])
		}
	}
	r := bufio.NewReader(resp.Body)
	for _, want := range []string{"event: ping\n", "\n", `data: {"event":"message","answer":"Hi"}` + "\n", "\n", `data: {"event":"message_end"}` + "\n", "\n"} {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line != want {
			t.Fatalf("line %q, want %q", line, want)
		}
		if line == "\n" {
			next <- struct{}{}
		}
	}
}

// send writes one event at once, as a stream does for each event it is given.
func send(w *Writer, data []byte) error {
	if err := w.Queue(data); err != nil {
		return err
	}
	return w.Flush()
}

func BenchmarkEvent(b *testing.B) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec, 0)
	data := []byte(`{"event":"message","conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"Hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		rec.Body.Reset()
		if err := send(w, data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestQueueFlushesOnce: queued frames go out together, in order, framed one by one.
func TestQueueFlushesOnce(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec, 0)
	for _, d := range []string{`{"a":1}`, `{"b":2}`} {
		if err := w.Queue([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if rec.Body.Len() != 0 || rec.Flushed {
		t.Fatal("queued frames were written before Flush")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := rec.Body.String(); got != "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n" || !rec.Flushed {
		t.Fatalf("flushed %q (flushed=%v)", got, rec.Flushed)
	}
	if err := w.Ping(); err != nil || rec.Body.String() != "data: {\"a\":1}\n\ndata: {\"b\":2}\n\nevent: ping\n\n" {
		t.Fatalf("ping after flush: %v %q", err, rec.Body.String())
	}
}
