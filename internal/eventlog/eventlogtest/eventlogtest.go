// Package eventlogtest is the contract every eventlog.Log meets, run by each implementation's
// tests.
package eventlogtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/eventlog"
)

// New returns a writer's log and a reader's log that share their runs (one log twice for an
// in-process one; two clients of one server for a shared one), made with lim.
type New func(t *testing.T, lim eventlog.Limits) (writer, reader eventlog.Log)

// Run runs the contract.
func Run(t *testing.T, newLog New) {
	ctx := context.Background()
	lim := eventlog.Limits{MaxEvents: 1000, MaxBytes: 1 << 20, Keep: time.Minute}

	t.Run("a reader of a run with no segment waits for the first one", func(t *testing.T) {
		w, r := newLog(t, lim)
		st, err := r.Start(ctx, "run-a")
		if err != nil || st.Found {
			t.Fatalf("Start = %+v, %v; want no segment", st, err)
		}
		cur := st.Cursor
		got, cur2, err := r.Next(ctx, "run-a", cur, time.Millisecond)
		if err != nil || len(got) != 0 || cur2 != cur {
			t.Fatalf("Next before any segment = %v, %q, %v", got, cur2, err)
		}
		seg, err := w.Begin(ctx, "run-a", "first")
		if err != nil {
			t.Fatal(err)
		}
		seg.Append(eventlog.Entry{Event: "workflow_started", Data: []byte(`{"n":1}`)}, false)
		seg.End(true)
		got = readN(t, r, "run-a", cur, 1)
		if got[0].Event != "workflow_started" || string(got[0].Data) != `{"n":1}` {
			t.Fatalf("got %+v", got)
		}
	})

	t.Run("a reader catches up from the latest segment's start, then follows it live", func(t *testing.T) {
		w, r := newLog(t, lim)
		old, err := w.Begin(ctx, "run-b", "first")
		if err != nil {
			t.Fatal(err)
		}
		old.Append(eventlog.Entry{Event: "workflow_paused", Data: []byte(`old`)}, true)
		old.End(true)
		seg, err := w.Begin(ctx, "run-b", "resumed")
		if err != nil {
			t.Fatal(err)
		}
		seg.Append(eventlog.Entry{Event: "human_input_form_filled", Data: []byte(`1`)}, false)
		seg.Append(eventlog.Entry{Event: "node_started", Data: []byte(`2`)}, false)
		waitFor(t, r, "run-b", 2)
		st, err := r.Start(ctx, "run-b")
		if err != nil || !st.Found || st.Tag != "resumed" {
			t.Fatalf("Start = %+v, %v; want the resumed segment", st, err)
		}
		cur := st.Cursor
		got := readN(t, r, "run-b", cur, 2)
		if got[0].Event != "human_input_form_filled" || got[1].Event != "node_started" {
			t.Fatalf("catch-up = %+v; want the current segment only", got)
		}
		// Live: the reader waits in Next while the writer appends.
		_, cur, _ = r.Next(ctx, "run-b", cur, time.Millisecond)
		_, cur, _ = r.Next(ctx, "run-b", cur, time.Millisecond)
		done := make(chan []eventlog.Entry)
		go func() {
			for {
				evs, _, err := r.Next(ctx, "run-b", cur, time.Minute)
				if err != nil || len(evs) > 0 {
					done <- evs
					return
				}
			}
		}()
		seg.Append(eventlog.Entry{Event: "workflow_finished", Data: []byte(`3`)}, true)
		seg.End(true)
		if evs := <-done; len(evs) != 1 || evs[0].Event != "workflow_finished" {
			t.Fatalf("live = %+v", evs)
		}
	})

	t.Run("the events of a segment past its byte bound are dropped but its final ones", func(t *testing.T) {
		w, r := newLog(t, eventlog.Limits{MaxEvents: 1000, MaxBytes: 10, Keep: time.Minute})
		seg, err := w.Begin(ctx, "run-c", "")
		if err != nil {
			t.Fatal(err)
		}
		seg.Append(eventlog.Entry{Event: "message", Data: []byte(`12345678`)}, false)
		seg.Append(eventlog.Entry{Event: "message", Data: []byte(`12345678`)}, false)
		seg.Append(eventlog.Entry{Event: "workflow_finished", Data: []byte(`{}`)}, true)
		seg.End(true)
		st, _ := r.Start(ctx, "run-c")
		cur := st.Cursor
		got := readN(t, r, "run-c", cur, 2)
		if got[0].Event != "message" || got[1].Event != "workflow_finished" {
			t.Fatalf("got %+v; want one message and workflow_finished", got)
		}
	})

	t.Run("a run keeps at most its bound of events, the newest", func(t *testing.T) {
		w, r := newLog(t, eventlog.Limits{MaxEvents: 10, MaxBytes: 1 << 20, Keep: time.Minute})
		seg, err := w.Begin(ctx, "run-d", "")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			seg.Append(eventlog.Entry{Event: "message", Data: fmt.Appendf(nil, "%d", i)}, false)
		}
		seg.End(true)
		st, _ := r.Start(ctx, "run-d")
		cur := st.Cursor
		var all []eventlog.Entry
		for {
			evs, next, err := r.Next(ctx, "run-d", cur, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 && next == cur {
				break
			}
			all, cur = append(all, evs...), next
		}
		// Redis trims approximately (whole nodes of its stream): allow its slack, not 500.
		if len(all) == 0 || len(all) > 200 || string(all[len(all)-1].Data) != "499" {
			t.Fatalf("kept %d events ending %q; want at most the bound (plus Redis's slack), the newest last", len(all), all[len(all)-1].Data)
		}
	})

	t.Run("a segment ended without keep goes at once, unless a newer one began", func(t *testing.T) {
		w, r := newLog(t, lim)
		seg, err := w.Begin(ctx, "run-f", "first")
		if err != nil {
			t.Fatal(err)
		}
		seg.Append(eventlog.Entry{Event: "workflow_finished", Data: []byte(`{}`)}, true)
		seg.End(false)
		if st, err := r.Start(ctx, "run-f"); err != nil || st.Found {
			t.Fatalf("Start after a dropped segment = %+v, %v; want none", st, err)
		}
		first, err := w.Begin(ctx, "run-g", "first")
		if err != nil {
			t.Fatal(err)
		}
		first.Append(eventlog.Entry{Event: "workflow_paused", Data: []byte(`{}`)}, true)
		next, err := w.Begin(ctx, "run-g", "resumed")
		if err != nil {
			t.Fatal(err)
		}
		next.Append(eventlog.Entry{Event: "human_input_form_filled", Data: []byte(`{}`)}, false)
		first.End(false)
		st, err := r.Start(ctx, "run-g")
		if err != nil || !st.Found || st.Tag != "resumed" {
			t.Fatalf("Start = %+v, %v; want the newer segment", st, err)
		}
		if got := readN(t, r, "run-g", st.Cursor, 1); got[0].Event != "human_input_form_filled" {
			t.Fatalf("got %+v", got)
		}
		next.End(true)
	})

	t.Run("a reader whose context ends returns at once", func(t *testing.T) {
		_, r := newLog(t, lim)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := r.Next(cctx, "run-e", "0", time.Minute); err == nil {
			t.Fatal("Next with an ended context returned no error")
		}
	})
}

// readN reads events from cur until it has n.
func readN(t *testing.T, r eventlog.Log, runID string, cur eventlog.Cursor, n int) []eventlog.Entry {
	t.Helper()
	var out []eventlog.Entry
	for len(out) < n {
		evs, next, err := r.Next(context.Background(), runID, cur, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		out, cur = append(out, evs...), next
	}
	return out
}

// waitFor waits until runID's latest segment holds n events.
func waitFor(t *testing.T, r eventlog.Log, runID string, n int) {
	t.Helper()
	for {
		st, err := r.Start(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Found {
			readN(t, r, runID, st.Cursor, n)
			return
		}
	}
}
