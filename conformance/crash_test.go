package conformance

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// interruptedError is what history shows for an answer cut by the end of its server.
const interruptedError = "The server stopped before the answer was complete."

// historyOf returns the messages of a conversation, oldest first.
func historyOf(t *testing.T, c *client.ClientWithResponses, conversationID, user string) []client.HistoryMessage {
	t.Helper()
	h, err := c.ListMessagesWithResponse(context.Background(), &client.ListMessagesParams{ConversationId: conversationID, User: &user})
	if err != nil {
		t.Fatal(err)
	}
	if h.JSON200 == nil {
		t.Fatalf("history: %d %s", h.StatusCode(), h.Body)
	}
	return h.JSON200.Data
}

// eventually polls cond until it holds, failing with what it last saw after 30 s.
func eventually(t *testing.T, what string, cond func() (bool, any)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last seen: %+v", what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hangingChat streams query for user to an upstream that sends "Once upon" and then hangs, reads
// the stream until that much arrived, and waits until history shows it as the answer so far (it
// reaches the database within the progress interval; until the run ends, history shows a normal
// message). It returns the conversation; the stream stays open until t ends.
func hangingChat(t *testing.T, c *client.ClientWithResponses, query, user string) string {
	t.Helper()
	upstream.On(query, openaitest.Reply{Chunks: []string{"Once", " upon", " a", " time"}, HangAfterChunks: 2})
	stream := streamChat(t, c, query, user)
	var streamed strings.Builder
	var conv string
	for streamed.String() != "Once upon" {
		m := nextMessage(t, stream)
		streamed.WriteString(m.Answer)
		conv = m.ConversationId.String()
	}
	eventually(t, "the answer so far in history", func() (bool, any) {
		h := historyOf(t, c, conv, user)
		return len(h) == 1 && h[0].Answer == "Once upon", h
	})
	return conv
}

// TestKilledMidStream kills the server (SIGKILL) while it streams an answer. The answer so
// far was stored while it streamed; after a restart history shows the message with that
// answer, status error and an error saying the server stopped, as Dify shows a failed
// message. The conversation keeps its default name: it was not named before the crash.
func TestKilledMidStream(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		q := marker(t, "tell me a long story")
		conv := hangingChat(t, c, q, "kim")

		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		// A short staleness threshold so that the restarted server ends the run soon.
		p.Start(t, "PARLEY_RUN_STALE_AFTER=2s")
		c = newClient(t, p, p.AppKey)
		eventually(t, "the interrupted message to end", func() (bool, any) {
			h := historyOf(t, c, conv, "kim")
			return len(h) == 1 && h[0].Status == client.HistoryMessageStatusError, h
		})
		m := historyOf(t, c, conv, "kim")[0]
		if m.Answer != "Once upon" || m.Error == nil || *m.Error != interruptedError || m.Query != q {
			t.Fatalf("after restart: %+v (error %v)", m, m.Error)
		}
		user := "kim"
		l, err := c.ListConversationsWithResponse(ctx, &client.ListConversationsParams{User: &user})
		if err != nil || l.JSON200 == nil || len(l.JSON200.Data) != 1 || l.JSON200.Data[0].Name != "New conversation" {
			t.Fatalf("conversations: %v %s", err, l.Body)
		}
	})
}

// TestModelCallCap: a provider that sends one chunk and then only keep-alive comments is cut
// by PARLEY_MODEL_CALL_TIMEOUT. Blocking gets a 400 completion_request_error, streaming an
// `error` event with that code after the chunk, and history shows both messages with status
// error and the partial answer.
func TestModelCallCap(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		p.Restart(t, "PARLEY_MODEL_CALL_TIMEOUT=1s")
		c := newClient(t, p, p.AppKey)
		// Far below the provider's idle timeout (60 s), which keep-alives reset anyway.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		q := marker(t, "ponder forever")
		upstream.On(q, openaitest.Reply{Chunks: []string{"Thinking", " hard"}, HangAfterChunks: 1, KeepAlive: 50 * time.Millisecond})

		r, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "bo", false))
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() != 400 || r.JSON400 == nil || r.JSON400.Code != "completion_request_error" || r.JSON400.Status != 400 {
			t.Fatalf("blocking: %d %s", r.StatusCode(), r.Body)
		}

		evs := streamEventsCtx(ctx, t, c, chatBody(q, "cy", true))
		if len(evs) != 2 || eventName(t, evs[0]) != "message" || eventName(t, evs[1]) != "error" {
			t.Fatalf("events %+v", evs)
		}
		first, _ := evs[0].AsMessageEvent()
		e, _ := evs[1].AsErrorEvent()
		if first.Answer != "Thinking" || e.Code != "completion_request_error" || e.Status != 400 {
			t.Fatalf("message %+v, error %+v", first, e)
		}

		for user, conv := range map[string]string{"bo": "", "cy": first.ConversationId.String()} {
			if conv == "" {
				l, err := c.ListConversationsWithResponse(ctx, &client.ListConversationsParams{User: &user})
				if err != nil || l.JSON200 == nil || len(l.JSON200.Data) != 1 {
					t.Fatalf("conversations of %s: %v %s", user, err, l.Body)
				}
				conv = l.JSON200.Data[0].Id.String()
			}
			h := historyOf(t, c, conv, user)
			if len(h) != 1 || h[0].Status != client.HistoryMessageStatusError || h[0].Answer != "Thinking" || h[0].Error == nil {
				t.Fatalf("history of %s: %+v", user, h)
			}
		}
	})
}

// TestKilledMidStreamEndsAtRestartOnSQLite: with SQLite one `parley serve` owns the data
// directory, so a server started after a crash knows the runs it finds running are its
// predecessor's and ends them before it listens, whatever the age of their heartbeat. Right
// after the restart, with the default PARLEY_RUN_STALE_AFTER (60 s), history shows the
// interrupted message with status error, its partial answer and the interrupted error, and a
// Workflow app's run cut at the same time reads as failed with that error.
func TestKilledMidStreamEndsAtRestartOnSQLite(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	ctx := context.Background()
	flowKey := exampleApp(t, p, workflowExample, "Topic Writer", "Cut Topic Writer")
	flow := hangingWorkflow(t, newClient(t, p, flowKey), marker(t, "a topic cut short"), "kit")
	var runID string
	for runID == "" {
		if !flow.Next() {
			t.Fatalf("workflow stream ended: %v", flow.Err())
		}
		if workflowEventName(t, flow.Event()) == "text_chunk" {
			tc, _ := flow.Event().AsTextChunkEvent()
			runID = tc.WorkflowRunId.String()
		}
	}
	c := newClient(t, p, p.AppKey)
	conv := hangingChat(t, c, marker(t, "a story cut short"), "kit")
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}

	p.Start(t)
	c = newClient(t, p, p.AppKey)
	h := historyOf(t, c, conv, "kit")
	if len(h) != 1 {
		t.Fatalf("history after restart: %+v", h)
	}
	if m := h[0]; m.Status != client.HistoryMessageStatusError || m.Answer != "Once upon" || m.Error == nil || *m.Error != interruptedError {
		t.Fatalf("right after restart: status %q answer %q error %v", m.Status, m.Answer, m.Error)
	}
	got, err := newClient(t, p, flowKey).GetWorkflowRunWithResponse(ctx, runID)
	if err != nil || got.JSON200 == nil || got.JSON200.Status != "failed" || got.JSON200.Error == nil ||
		*got.JSON200.Error != interruptedError || got.JSON200.FinishedAt == nil {
		t.Fatalf("workflow run right after restart: %v %s", err, got.Body)
	}
}

// TestOneServerPerSQLiteDataDir: a second `parley serve` on the data directory of a running
// SQLite server exits at once with an error naming the directory and the running server,
// while the other commands keep working beside it.
func TestOneServerPerSQLiteDataDir(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, binary, "serve")
	second.Env = p.env
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	err := second.Run()
	if ctx.Err() != nil {
		t.Fatalf("the second serve did not exit; output:\n%s", out.String())
	}
	if err == nil || !strings.Contains(out.String(), p.engine.DataDir) || !strings.Contains(out.String(), "another parley serve") {
		t.Fatalf("second serve: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), `"msg":"listening"`) {
		t.Fatalf("the second serve listened:\n%s", out.String())
	}

	key := p.CLI(t, "keys", "create", "--app", "chatbot")
	if !strings.HasPrefix(key, "app-") {
		t.Fatalf("keys create beside a running server printed %q", key)
	}
	// The running server accepts the new key: both share the database.
	r, err := newClient(t, p, key).GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{})
	if err != nil || r.StatusCode() != 200 {
		t.Fatalf("parameters with the new key: %v %v", err, r.Status())
	}
}
