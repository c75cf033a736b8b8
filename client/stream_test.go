package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const env = `"conversation_id":"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11","message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420`

func serve(t *testing.T, status int, contentType, body string) *http.Response {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		// Write in small pieces so frames and lines straddle reads.
		step := 7
		if len(body) > 1<<16 {
			step = 1 << 16
		}
		for i := 0; i < len(body); i += step {
			_, _ = w.Write([]byte(body[i:min(i+step, len(body))]))
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestEventStreamTypedEvents(t *testing.T) {
	body := "event: ping\n\n" +
		`data: {"event":"message",` + env + `,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"Hel"}` + "\n\n" +
		": a comment\n\n" +
		`data: {"event":"message",` + env + `,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33","id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"lo"}` + "\r\n\r\n" +
		"event: ping\n\n" +
		`data: {"event":"error",` + env + `,"status":400,"code":"completion_request_error","message":"upstream failed"}` + "\n\n"
	stream, err := NewEventStream(serve(t, 200, "text/event-stream; charset=utf-8", body))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var answer strings.Builder
	var names []string
	for stream.Next() {
		ev := stream.Event()
		name, err := ev.Discriminator()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		switch name {
		case "message":
			m, err := ev.AsMessageEvent()
			if err != nil {
				t.Fatal(err)
			}
			answer.WriteString(m.Answer)
		case "error":
			e, err := ev.AsErrorEvent()
			if err != nil {
				t.Fatal(err)
			}
			if e.Code != "completion_request_error" || e.Status != 400 {
				t.Fatalf("error event %+v", e)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, ","); got != "message,message,error" {
		t.Fatalf("events %s", got)
	}
	if answer.String() != "Hello" {
		t.Fatalf("answer %q", answer.String())
	}
}

func TestEventStreamDropsCutOffEvent(t *testing.T) {
	body := `data: {"event":"message",` + env + `,"answer":"a"}` + "\n\n" + `data: {"event":"message_end"`
	stream, err := NewEventStream(serve(t, 200, "text/event-stream", body))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	n := 0
	for stream.Next() {
		n++
	}
	if n != 1 || stream.Err() != nil {
		t.Fatalf("events %d, err %v", n, stream.Err())
	}
}

func TestEventStreamErrors(t *testing.T) {
	_, err := NewEventStream(serve(t, 401, "application/json", `{"code":"unauthorized","message":"Access token is invalid","status":401}`))
	var re *ResponseError
	if !errors.As(err, &re) || re.StatusCode != 401 || re.Body.Code != "unauthorized" {
		t.Fatalf("got %v", err)
	}
	if _, err := NewEventStream(serve(t, 200, "application/json", `{}`)); err == nil {
		t.Fatal("a JSON reply was accepted as a stream")
	}
	stream, err := NewEventStream(serve(t, 200, "text/event-stream", "data: not json\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if stream.Next() || stream.Err() == nil {
		t.Fatal("invalid JSON event not reported")
	}
	stream.Close()
	stream, err = NewEventStream(serve(t, 200, "text/event-stream", "data: "+strings.Repeat("x", MaxEventSize+10)+"\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if stream.Next() || !errors.Is(stream.Err(), ErrEventTooLarge) {
		t.Fatalf("oversized event: %v", stream.Err())
	}
	stream.Close()
}

func TestCompletionEventStream(t *testing.T) {
	const cenv = `"message_id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","created_at":1705398420,"task_id":"9d2d4d3e-7c6f-4a6f-9c77-5e2d7f2abe33"`
	body := "event: ping\n\n" +
		`data: {"event":"message",` + cenv + `,"id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","answer":"Dear Ada","from_variable_selector":null}` + "\n\n" +
		`data: {"event":"message_end",` + cenv + `,"id":"8c1c3c2d-6b5f-4f5f-8b66-4d1c6e1fad22","metadata":{"usage":{"prompt_tokens":1}},"files":null}` + "\n\n"
	stream, err := NewCompletionEventStream(serve(t, 200, "text/event-stream", body))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var names []string
	for stream.Next() {
		ev := stream.Event()
		name, err := ev.Discriminator()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		if name == "message" {
			if m, err := ev.AsCompletionMessageEvent(); err != nil || m.Answer != "Dear Ada" {
				t.Fatalf("message %+v, %v", m, err)
			}
		}
	}
	if err := stream.Err(); err != nil || strings.Join(names, ",") != "message,message_end" {
		t.Fatalf("events %v, err %v", names, err)
	}
}
