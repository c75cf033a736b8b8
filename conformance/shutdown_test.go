package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestGracefulShutdown sends SIGTERM while two streams are open: one that finishes within the
// grace period completes normally; one that would never finish ends with an `error` event
// once the grace period is over: 503 service_unavailable, naming the shutdown. The process
// exits cleanly, and after a restart history shows both messages, the cut one with its partial
// answer, an error status and the shutdown as its error.
func TestGracefulShutdown(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		// Restart with a short grace period.
		p.Restart(t, "PARLEY_SHUTDOWN_GRACE=1500ms")
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		finishing, hanging := marker(t, "finish within grace"), marker(t, "never finishes")
		upstream.On(finishing, openaitest.Reply{Chunks: []string{"done", " in", " time"}, ChunkDelay: 150 * time.Millisecond})
		upstream.On(hanging, openaitest.Reply{Chunks: []string{"partial", " rest"}, HangAfterChunks: 1})

		open := func(q string) (*client.EventStream, client.MessageEvent) {
			resp, err := c.SendChatMessage(ctx, nil, chatBody(q, "sd", true))
			if err != nil {
				t.Fatal(err)
			}
			s, err := client.NewEventStream(resp)
			if err != nil {
				t.Fatal(err)
			}
			if !s.Next() {
				t.Fatalf("no first event: %v", s.Err())
			}
			m, _ := s.Event().AsMessageEvent()
			return s, m
		}
		fs, fFirst := open(finishing)
		hs, hFirst := open(hanging)
		defer fs.Close()
		defer hs.Close()

		stopped := make(chan error, 1)
		go func() { stopped <- p.Stop() }()

		last := func(s *client.EventStream) client.ChatStreamEvent {
			var ev client.ChatStreamEvent
			for s.Next() {
				ev = s.Event()
			}
			return ev
		}
		if got := eventName(t, last(fs)); got != "message_end" {
			t.Fatalf("stream finishing within the grace period ended with %q", got)
		}
		cut := last(hs)
		if got := eventName(t, cut); got != "error" {
			t.Fatalf("hanging stream ended with %q", got)
		}
		// The error says what happened: the server is going away, not failing.
		if e, err := cut.AsErrorEvent(); err != nil || e.Status != 503 || e.Code != "service_unavailable" ||
			e.Message != "The server is shutting down; the answer was not completed." {
			t.Fatalf("error event of the cut stream: %+v %v", e, err)
		}
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("server exit: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("server did not exit")
		}

		p.Start(t)
		c = newClient(t, p, p.AppKey)
		user := "sd"
		for _, tc := range []struct {
			conv, answer, status string
		}{
			{fFirst.ConversationId.String(), "done in time", "normal"},
			{hFirst.ConversationId.String(), "partial", "error"},
		} {
			h, err := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: tc.conv, User: &user})
			if err != nil || h.JSON200 == nil || len(h.JSON200.Data) != 1 {
				t.Fatalf("history: %v %s", err, h.Body)
			}
			m := h.JSON200.Data[0]
			if m.Answer != tc.answer || string(m.Status) != tc.status {
				t.Fatalf("after restart: answer %q status %q, want %q %q", m.Answer, m.Status, tc.answer, tc.status)
			}
			if tc.status == "error" && (m.Error == nil || *m.Error != "server is shutting down") {
				t.Fatalf("after restart: error %v, want the shutdown", m.Error)
			}
		}
	})
}
