package store

import (
	"context"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestIdempotency: a key begins once; a second claim gets the running record, then the kept
// answer; an expired record and a stale running one (its server died) begin again; a forgotten
// one begins again.
func TestIdempotency(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		st := openEngine(t, e, true)
		ctx := context.Background()
		now := time.Unix(1_800_000_000, 0)
		day, stale := now.Add(-24*time.Hour), now.Add(-90*time.Second)
		if _, began, err := st.BeginIdempotent(ctx, "k1", "a", []byte("h1"), now, day, stale); err != nil || !began {
			t.Fatalf("a new key: %v %v", began, err)
		}
		rec, began, err := st.BeginIdempotent(ctx, "k1", "a", []byte("h2"), now, day, stale)
		if err != nil || began || rec.Status != IdempotencyRunning || string(rec.RequestHash) != "h1" {
			t.Fatalf("a running key: %+v %v %v", rec, began, err)
		}
		if _, began, _ := st.BeginIdempotent(ctx, "k2", "a", []byte("h1"), now, day, stale); !began {
			t.Fatal("another scope's key of the same name")
		}
		if err := st.FinishIdempotent(ctx, "k1", "a", 200, "application/json", []byte(`{"ok":1}`), now); err != nil {
			t.Fatal(err)
		}
		rec, began, _ = st.BeginIdempotent(ctx, "k1", "a", []byte("h1"), now.Add(time.Hour), day, stale)
		if began || rec.Status != IdempotencyDone || rec.ResponseStatus != 200 || string(rec.Body) != `{"ok":1}` || rec.ContentType != "application/json" {
			t.Fatalf("a done key: %+v %v", rec, began)
		}
		later := now.Add(25 * time.Hour)
		if _, began, _ := st.BeginIdempotent(ctx, "k1", "a", []byte("h3"), later, later.Add(-24*time.Hour), later.Add(-90*time.Second)); !began {
			t.Fatal("an expired key does not begin again")
		}
		// k2 is running and untouched for two minutes: its server died.
		then := now.Add(2 * time.Minute)
		if _, began, _ := st.BeginIdempotent(ctx, "k2", "a", []byte("h1"), then, then.Add(-24*time.Hour), then.Add(-90*time.Second)); !began {
			t.Fatal("a stale running key does not begin again")
		}
		if err := st.TouchIdempotent(ctx, "k2", "a", then.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		again := then.Add(2 * time.Minute)
		if _, began, _ := st.BeginIdempotent(ctx, "k2", "a", []byte("h1"), again, again.Add(-24*time.Hour), again.Add(-90*time.Second)); began {
			t.Fatal("a touched running key begins again")
		}
		if err := st.ForgetIdempotent(ctx, "k2", "a"); err != nil {
			t.Fatal(err)
		}
		if _, began, _ := st.BeginIdempotent(ctx, "k2", "a", []byte("h9"), again, again.Add(-24*time.Hour), again.Add(-90*time.Second)); !began {
			t.Fatal("a forgotten key")
		}
		if n, err := st.DeleteIdempotentBefore(ctx, later); err != nil || n != 1 {
			t.Fatalf("deleted %d: %v", n, err)
		}
	})
}
