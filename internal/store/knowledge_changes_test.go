package store

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestIndexDelta checks the change log: what a delta names after each kind of change, when it
// must be a full reload instead, that the log is trimmed, and that the hook hears of committed
// changes only, after the commit.
func TestIndexDelta(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		var (
			mu    sync.Mutex
			heard []string
		)
		s.SetIndexChangeHook(func(id string) {
			mu.Lock()
			heard = append(heard, id)
			mu.Unlock()
		})
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		v0, err := s.IndexVersion(ctx, ds.ID)
		if err != nil {
			t.Fatal(err)
		}
		segs := kbIndex(t, s, doc, 1, "one", "two", "three")
		d, err := s.IndexDelta(ctx, ds.ID, v0, 100)
		if err != nil || d.Full || d.Version != v0+1 {
			t.Fatalf("after a batch: %+v, %v", d, err)
		}
		want := []string{segs[0].IndexNodeID, segs[1].IndexNodeID, segs[2].IndexNodeID}
		slices.Sort(want)
		got := slices.Sorted(slices.Values(d.Nodes))
		if !slices.Equal(got, want) || len(d.Vectors) != 3 || d.Vectors[0].SegmentID == "" {
			t.Fatalf("after a batch: nodes %v, %d vectors; want %v, 3", got, len(d.Vectors), want)
		}
		if d, err := s.IndexDelta(ctx, ds.ID, d.Version, 100); err != nil || d.Full || d.Version != v0+1 || len(d.Vectors) != 0 {
			t.Fatalf("no change: %+v, %v", d, err)
		}

		// A deleted segment is named as a segment, with nothing left to add.
		if err := s.DeleteSegment(ctx, doc.ID, segs[0].ID); err != nil {
			t.Fatal(err)
		}
		d, err = s.IndexDelta(ctx, ds.ID, v0+1, 100)
		if err != nil || d.Full || !slices.Equal(d.Segments, []string{segs[0].ID}) || len(d.Vectors) != 0 {
			t.Fatalf("after a segment deletion: %+v, %v", d, err)
		}
		// A disabled document is named as a document; its vectors are no longer searchable.
		doc.Enabled = false
		if err := s.UpdateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		d, err = s.IndexDelta(ctx, ds.ID, v0+2, 100)
		if err != nil || d.Full || !slices.Equal(d.Documents, []string{doc.ID}) || len(d.Vectors) != 0 {
			t.Fatalf("after disabling the document: %+v, %v", d, err)
		}
		doc.Enabled = true
		if err := s.UpdateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		d, err = s.IndexDelta(ctx, ds.ID, v0+3, 100)
		if err != nil || d.Full || len(d.Vectors) != 2 {
			t.Fatalf("after enabling the document: %+v, %v", d, err)
		}
		// From further back, every change at once; more than asked for is a reload.
		if d, err := s.IndexDelta(ctx, ds.ID, v0, 100); err != nil || d.Full || d.Version != v0+4 || len(d.Vectors) != 2 {
			t.Fatalf("from v0: %+v, %v", d, err)
		}
		if d, err := s.IndexDelta(ctx, ds.ID, v0, 5); err != nil || !d.Full {
			t.Fatalf("from v0, at most 5 changes: %+v, %v", d, err)
		}
		// A log that no longer reaches back is a reload.
		if _, err := s.db.ExecContext(ctx, s.Rebind("DELETE FROM index_changes WHERE dataset_id = ? AND version = ?"), ds.ID, v0+1); err != nil {
			t.Fatal(err)
		}
		if d, err := s.IndexDelta(ctx, ds.ID, v0, 100); err != nil || !d.Full {
			t.Fatalf("from v0 with its log trimmed: %+v, %v", d, err)
		}
		if d, err := s.IndexDelta(ctx, ds.ID, v0+1, 100); err != nil || d.Full {
			t.Fatalf("from v0+1: %+v, %v", d, err)
		}
		if _, err := s.IndexDelta(ctx, NewID(), 0, 100); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown dataset: %v", err)
		}

		// The log keeps the last indexChangesKept versions.
		if _, err := s.db.ExecContext(ctx, s.Rebind("UPDATE datasets SET index_version = ? WHERE id = ?"), 3*indexChangesKept-1, ds.ID); err != nil {
			t.Fatal(err)
		}
		kbIndex(t, s, doc, 1, "four") // version 3×kept, a multiple of 64: trims
		var n int
		if err := s.db.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM index_changes WHERE dataset_id = ? AND version <= ?"), ds.ID, 2*indexChangesKept).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d rows older than the kept versions, %v", n, err)
		}

		// The hook heard each committed change once per transaction; a failed one not at all.
		mu.Lock()
		count := len(heard)
		mu.Unlock()
		if count != 5 {
			t.Errorf("the hook heard %d changes, want 5", count)
		}
		if err := s.DeleteSegment(ctx, doc.ID, NewID()); err == nil {
			t.Fatal("deleting an unknown segment succeeded")
		}
		if err := s.DeleteDataset(ctx, ds.ID); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(heard) != 6 || heard[5] != ds.ID {
			t.Errorf("after a failed change and the dataset's deletion the hook heard %v", heard)
		}
		var left int
		if err := s.db.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM index_changes WHERE dataset_id = ?"), ds.ID).Scan(&left); err != nil || left != 0 {
			t.Errorf("%d log rows left after the dataset's deletion, %v", left, err)
		}
	})
}
