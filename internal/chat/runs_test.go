package chat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// waitFor polls cond until it holds, failing after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAnswerSoFarIsStored: while a rn streams, the answer so far reaches the database, so a
// crash loses at most the last interval of it. Heartbeats here come more often than answer
// writes (every 500 ms against 600 ms): they must not postpone the answer.
func TestAnswerSoFarIsStored(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, func(o *envOptions) { o.run.ProgressInterval, o.run.StaleAfter = 600*time.Millisecond, 2*time.Second })
		env.upstream.On("slow tale", openaitest.Reply{Chunks: []string{"Once", " upon", " a", " time"}, HangAfterChunks: 2})
		rn := env.send(t, run.Request{Query: "slow tale", Streaming: true})
		for range 2 {
			if ev := <-rn.Events(); ev.Kind != run.EventMessage {
				t.Fatalf("event %+v", ev)
			}
		}
		var m store.Message
		waitFor(t, "the answer so far to be stored", func() bool {
			m = env.message(t, rn, "u1")
			return m.Answer == "Once upon"
		})
		if m.Status != store.MessageStatusRunning {
			t.Fatalf("stored %+v while the rn goes on", m)
		}
		_ = env.tasks.Stop(context.Background(), rn.TaskID, env.app.ID, "u1")
		collect(t, rn)
		wait(t, rn)
		if m := env.message(t, rn, "u1"); m.Status != store.MessageStatusStopped || m.Answer != "Once upon" {
			t.Fatalf("stored %+v", m)
		}
	})
}

// TestStaleRunsEnded: a message left running by a dead process is ended as interrupted, with
// its answer so far, by the start-up sweep and by the periodic one, while a live rn whose
// model sends nothing keeps a fresh heartbeat and is left running.
func TestStaleRunsEnded(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		const staleAfter = 4 * time.Second
		env := newEnv(t, e, func(o *envOptions) { o.run.StaleAfter = staleAfter })
		ctx := context.Background()

		// A live rn: one chunk, then the model goes silent.
		env.upstream.On("silent model", openaitest.Reply{Chunks: []string{"Hmm", "…"}, HangAfterChunks: 1})
		live := env.send(t, run.Request{Query: "silent model", Streaming: true})
		<-live.Events()
		first := env.message(t, live, "u1")
		waitFor(t, "a heartbeat of the silent rn", func() bool {
			return env.message(t, live, "u1").UpdatedAt.After(first.UpdatedAt)
		})

		// Runs of a process that died: their heartbeat stopped long ago.
		u, err := env.store.EndUser(ctx, env.app.ID, "u1")
		if err != nil {
			t.Fatal(err)
		}
		dead := func() store.Message {
			t.Helper()
			long := time.Now().Add(-time.Hour)
			m, err := env.store.CreateMessage(ctx, store.Message{AppID: env.app.ID, ConversationID: live.ConversationID,
				EndUserID: u.ID, Query: "q", CreatedAt: long, UpdatedAt: long})
			if err != nil {
				t.Fatal(err)
			}
			if err := env.store.SaveMessageProgress(ctx, long, []store.MessageProgress{{ID: m.ID, Answer: "half an ans", Changed: true}}); err != nil {
				t.Fatal(err)
			}
			return m
		}
		ended := func(m store.Message) bool {
			got, err := env.store.Message(ctx, env.app.ID, u.ID, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == store.MessageStatusRunning {
				return false
			}
			if got.Status != store.MessageStatusError || got.Error != run.InterruptedError || got.Answer != "half an ans" {
				t.Fatalf("ended as %+v", got)
			}
			return true
		}

		atStart := dead()
		if n, err := env.engine.EndInterrupted(ctx); err != nil || n != 1 || !ended(atStart) {
			t.Fatalf("EndInterrupted = %d, %v", n, err)
		}
		later := dead()
		waitFor(t, "the periodic sweep", func() bool { return ended(later) })

		if m := env.message(t, live, "u1"); m.Status != store.MessageStatusRunning {
			t.Fatalf("the live rn was ended: %+v", m)
		}
		_ = env.tasks.Stop(ctx, live.TaskID, env.app.ID, "u1")
		collect(t, live)
		wait(t, live)
	})
}

// TestModelCallCap: a stream that sends one chunk and then only keep-alive comments is cut by
// the call cap; the rn ends with an invocation error (completion_request_error) and the
// partial answer is stored with status error.
func TestModelCallCap(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEnv(t, e, func(o *envOptions) { o.chat.Providers.(*registry.Set).WithCallTimeout(300 * time.Millisecond) })
		env.upstream.On("ponder", openaitest.Reply{Chunks: []string{"Let me", " think"}, HangAfterChunks: 1, KeepAlive: 20 * time.Millisecond})
		rn := env.send(t, run.Request{Query: "ponder", Streaming: true})
		evs := collect(t, rn)
		last := evs[len(evs)-1]
		if answerOf(evs) != "Let me" || last.Kind != run.EventError || providers.KindOf(last.Err) != providers.KindInvocation ||
			!errors.Is(last.Err, providers.ErrTimeout) {
			t.Fatalf("events %+v", evs)
		}
		wait(t, rn)
		m := env.message(t, rn, "u1")
		if m.Status != store.MessageStatusError || m.Answer != "Let me" || !strings.Contains(m.Error, "limit") {
			t.Fatalf("stored %+v", m)
		}
	})
}
