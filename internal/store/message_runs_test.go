package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestEndStaleMessages: only running messages whose heartbeat is older than the cut-off are
// ended, keeping their answer; a fresh heartbeat (a live process's run) and finished messages
// are left alone, and running the sweep again changes nothing.
func TestEndStaleMessages(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)
		now := time.Now().Truncate(time.Second)
		cutoff := now.Add(-time.Minute)
		create := func(status string, heartbeat time.Time) Message {
			t.Helper()
			m, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID,
				Query: "q", Status: status, CreatedAt: heartbeat.Add(-time.Hour), UpdatedAt: heartbeat})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		stale := create(MessageStatusRunning, now)
		// The dead process wrote part of the answer, then stopped beating.
		if err := s.SaveMessageProgress(ctx, now.Add(-10*time.Minute), []MessageProgress{{ID: stale.ID, Answer: "Once upon", Changed: true}}); err != nil {
			t.Fatal(err)
		}
		fresh := create(MessageStatusRunning, now.Add(-time.Second))
		atCutoff := create(MessageStatusRunning, cutoff)
		oldNormal := create(MessageStatusNormal, now.Add(-time.Hour))
		oldStopped := create(MessageStatusStopped, now.Add(-time.Hour))

		n, err := s.EndStaleMessages(ctx, cutoff, "The server stopped.")
		if err != nil || n != 1 {
			t.Fatalf("EndStaleMessages = %d, %v; want 1", n, err)
		}
		get := func(m Message) Message {
			t.Helper()
			got, err := s.Message(ctx, f.app, f.alice.ID, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := get(stale); got.Status != MessageStatusError || got.Error != "The server stopped." || got.Answer != "Once upon" ||
			got.UpdatedAt.Before(now) {
			t.Errorf("stale message after the sweep: %+v", got)
		}
		for name, m := range map[string]Message{"fresh heartbeat": fresh, "heartbeat at the cut-off": atCutoff} {
			if got := get(m); got.Status != MessageStatusRunning || got.Error != "" || !got.UpdatedAt.Equal(m.UpdatedAt) {
				t.Errorf("%s: %+v, want it running and untouched", name, got)
			}
		}
		for name, m := range map[string]Message{"normal": oldNormal, "stopped": oldStopped} {
			if got := get(m); got.Status != m.Status || got.Error != "" || !got.UpdatedAt.Equal(m.UpdatedAt) {
				t.Errorf("old %s message: %+v, want it untouched", name, got)
			}
		}
		if n, err := s.EndStaleMessages(ctx, cutoff, "again"); err != nil || n != 0 {
			t.Errorf("second sweep = %d, %v; want 0", n, err)
		}
		if got := get(stale); got.Error != "The server stopped." {
			t.Errorf("second sweep rewrote an ended message: %+v", got)
		}
	})
}

// TestSaveMessageProgress: the answer so far and the heartbeat are written for running
// messages only, in batches of any size; a finished message keeps its final state whatever
// progress write comes after it.
func TestSaveMessageProgress(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		msgs := newMessages(t, s, f.app, f.alice, progressBatch+5)
		get := func(m Message) Message {
			t.Helper()
			got, err := s.Message(ctx, f.app, f.alice.ID, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}

		// More than one batch, answers and bare heartbeats mixed, and an unknown id.
		ps := []MessageProgress{{ID: NewID(), Answer: "nobody", Changed: true}}
		for i, m := range msgs {
			ps = append(ps, MessageProgress{ID: m.ID, Answer: fmt.Sprintf("answer %d", i), Changed: i%2 == 0})
		}
		if err := s.SaveMessageProgress(ctx, at(100), ps); err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			want := ""
			if i%2 == 0 {
				want = fmt.Sprintf("answer %d", i)
			}
			if got := get(m); got.Answer != want || !got.UpdatedAt.Equal(at(100)) || got.Status != MessageStatusRunning {
				t.Fatalf("message %d: answer %q, updated_at %v, status %s; want %q at %v", i, got.Answer, got.UpdatedAt, got.Status, want, at(100))
			}
		}

		// A heartbeat alone keeps the answer.
		if err := s.SaveMessageProgress(ctx, at(130), []MessageProgress{{ID: msgs[0].ID}}); err != nil {
			t.Fatal(err)
		}
		if got := get(msgs[0]); got.Answer != "answer 0" || !got.UpdatedAt.Equal(at(130)) {
			t.Errorf("after a heartbeat: %+v", got)
		}

		// A progress write that lands after the final one changes nothing.
		if err := s.FinishMessage(ctx, msgs[1].ID, MessageResult{Answer: "the whole answer", Status: MessageStatusNormal}); err != nil {
			t.Fatal(err)
		}
		done := get(msgs[1])
		if err := s.SaveMessageProgress(ctx, at(200), []MessageProgress{{ID: msgs[1].ID, Answer: "the wh", Changed: true}, {ID: msgs[1].ID}}); err != nil {
			t.Fatal(err)
		}
		if got := get(msgs[1]); got.Answer != "the whole answer" || got.Status != MessageStatusNormal || !got.UpdatedAt.Equal(done.UpdatedAt) {
			t.Errorf("finished message after a late progress write: %+v", got)
		}
		if err := s.SaveMessageProgress(ctx, at(300), nil); err != nil {
			t.Errorf("SaveMessageProgress(nil) = %v", err)
		}
	})
}

// TestMessageStoredWithItsFiles: a message and its files are stored together or not at all,
// for a new conversation too, so that no failure or crash leaves a message without its files.
func TestMessageStoredWithItsFiles(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)
		good := MessageFile{Type: "image", TransferMethod: TransferRemoteURL, URL: "https://example.com/cat.png"}
		bad := MessageFile{Type: "image", TransferMethod: TransferLocalFile, UploadFileID: NewID()}
		base := Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, Query: "look"}

		if _, err := s.CreateMessage(ctx, base, good, bad); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown upload file: err = %v, want ErrNotFound", err)
		}
		if n, err := s.CountMessages(ctx, conv.ID); err != nil || n != 0 {
			t.Fatalf("a message was stored without its files: %d, %v", n, err)
		}
		if _, _, err := s.StartConversation(ctx, Conversation{AppID: f.app, EndUserID: f.alice.ID}, base, bad); !errors.Is(err, ErrNotFound) {
			t.Fatalf("start conversation with an unknown upload file: err = %v, want ErrNotFound", err)
		}
		if cs, _, err := s.ListConversations(ctx, ConversationQuery{AppID: f.app, EndUserID: f.alice.ID, Limit: 10}); err != nil || len(cs) != 1 {
			t.Fatalf("conversations after a failed start: %+v, %v; want only the first one", cs, err)
		}

		m, err := s.CreateMessage(ctx, base, good)
		if err != nil {
			t.Fatal(err)
		}
		c, m2, err := s.StartConversation(ctx, Conversation{AppID: f.app, EndUserID: f.alice.ID}, base, good, good)
		if err != nil {
			t.Fatal(err)
		}
		files, err := s.MessageFiles(ctx, []string{m.ID, m2.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(files[m.ID]) != 1 || files[m.ID][0].URL != good.URL || files[m.ID][0].BelongsTo != BelongsToUser ||
			len(files[m2.ID]) != 2 || files[m2.ID][0].MessageID != m2.ID || m2.ConversationID != c.ID {
			t.Fatalf("files %+v", files)
		}
	})
}

// TestFinishMessageWithResources: the retriever resources are stored with the outcome, in the
// same transaction, and finishing again with the same result is harmless.
func TestFinishMessageWithResources(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		msgs := newMessages(t, s, f.app, f.alice, 1)
		result := MessageResult{Answer: "cited", Status: MessageStatusNormal, RetrieverResources: []RetrieverResource{
			{ID: NewID(), Position: 1, DatasetName: "Docs", Content: "first chunk", Score: 0.9},
			{ID: NewID(), Position: 2, DatasetName: "Docs", Content: "second chunk", Score: 0.5},
		}}
		for range 2 {
			if err := s.FinishMessage(ctx, msgs[0].ID, result); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.RetrieverResources(ctx, []string{msgs[0].ID})
		if err != nil {
			t.Fatal(err)
		}
		if rs := got[msgs[0].ID]; len(rs) != 2 || rs[0].Content != "first chunk" || rs[1].MessageID != msgs[0].ID {
			t.Fatalf("resources %+v", got)
		}
		if m, _ := s.Message(ctx, f.app, f.alice.ID, msgs[0].ID); m.Answer != "cited" || m.Status != MessageStatusNormal {
			t.Fatalf("message %+v", m)
		}

		unknown := NewID()
		if err := s.FinishMessage(ctx, unknown, result); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown message: err = %v, want ErrNotFound", err)
		}
		if got, _ := s.RetrieverResources(ctx, []string{unknown}); len(got) != 0 {
			t.Fatalf("resources stored for an unknown message: %+v", got)
		}
	})
}

// benchChatApp opens a migrated store on engine with a chat app "bench" and its end user "u".
func benchChatApp(b *testing.B, engine string) (*Store, string, EndUser) {
	b.Helper()
	ctx := b.Context()
	s := openEngine(b, storetest.NewEngine(b, engine), true)
	apps, err := s.SyncApps(ctx, []AppSpec{{"bench", "chat"}})
	if err != nil {
		b.Fatal(err)
	}
	app := apps["bench"].ID
	u, err := s.EndUser(ctx, app, "u")
	if err != nil {
		b.Fatal(err)
	}
	return s, app, u
}

// BenchmarkSaveMessageProgress is one pass of the run bookkeeping of a process with 100 long
// streams: the answer so far of each (2 KB) written in one call, as happens once a second;
// ns/run is the cost per stream and second.
func BenchmarkSaveMessageProgress(b *testing.B) {
	for _, engine := range []string{storetest.SQLite, storetest.Postgres} {
		b.Run(engine, func(b *testing.B) {
			ctx := b.Context()
			s, app, u := benchChatApp(b, engine)
			conv, err := s.CreateConversation(ctx, Conversation{AppID: app, EndUserID: u.ID})
			if err != nil {
				b.Fatal(err)
			}
			ps := make([]MessageProgress, 100)
			for i := range ps {
				m, err := s.CreateMessage(ctx, Message{AppID: app, ConversationID: conv.ID, EndUserID: u.ID, Query: "q"})
				if err != nil {
					b.Fatal(err)
				}
				ps[i] = MessageProgress{ID: m.ID, Answer: strings.Repeat("word ", 400), Changed: true}
			}
			for b.Loop() {
				if err := s.SaveMessageProgress(ctx, time.Now(), ps); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(ps)), "ns/run")
		})
	}
}

// TestEndRunningMessages: a process that knows it is alone on the database ends every running
// message at once, however fresh its heartbeat, keeping its answer, and fails every running
// workflow run, whatever its message; paused runs and finished messages are left alone.
func TestEndRunningMessages(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		conv := newConversation(t, s, f.app, f.alice)
		create := func(status string) Message {
			t.Helper()
			m, err := s.CreateMessage(ctx, Message{AppID: f.app, ConversationID: conv.ID, EndUserID: f.alice.ID, Query: "q", Status: status})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		running, normal := create(MessageStatusRunning), create(MessageStatusNormal)
		// Beat a moment ago: a heartbeat no staleness cut-off would find old.
		if err := s.SaveMessageProgress(ctx, time.Now(), []MessageProgress{{ID: running.ID, Answer: "Once upon", Changed: true}}); err != nil {
			t.Fatal(err)
		}
		withMessage := WorkflowRun{ID: NewID(), AppID: f.app, WorkflowID: "v", MessageID: running.ID, Status: "running"}
		// A run whose message already ended: a crash between the two writes.
		ofFinished := WorkflowRun{ID: NewID(), AppID: f.app, WorkflowID: "v", MessageID: normal.ID, Status: "running"}
		for _, r := range []WorkflowRun{withMessage, ofFinished} {
			if err := s.SaveWorkflowRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		paused, _ := pausedRun(t, s, f, "review")

		n, err := s.EndRunningMessages(ctx, "The server stopped.")
		if err != nil || n != 1 {
			t.Fatalf("EndRunningMessages = %d, %v; want 1", n, err)
		}
		get := func(id string) Message {
			t.Helper()
			m, err := s.Message(ctx, f.app, f.alice.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		if m := get(running.ID); m.Status != MessageStatusError || m.Error != "The server stopped." || m.Answer != "Once upon" {
			t.Errorf("running message: %+v", m)
		}
		if m := get(normal.ID); m.Status != MessageStatusNormal || m.Error != "" {
			t.Errorf("finished message: %+v", m)
		}
		if m := get(paused.MessageID); m.Status != MessageStatusRunning {
			t.Errorf("message of a paused run: %+v", m)
		}
		for name, id := range map[string]string{"of the running message": withMessage.ID, "of a finished message": ofFinished.ID} {
			if r, err := s.WorkflowRunByID(ctx, id); err != nil || r.Status != "failed" || r.Error != "The server stopped." || r.FinishedAt == nil {
				t.Errorf("workflow run %s: %+v %v", name, r, err)
			}
		}
		if r, err := s.WorkflowRunByID(ctx, paused.ID); err != nil || r.Status != "paused" {
			t.Errorf("paused workflow run: %+v %v", r, err)
		}
	})
}
