package vectorindex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// counting is the real store, counting how the index catches up: whole loads and deltas.
type counting struct {
	*store.Store
	full, delta atomic.Int32
}

func (c *counting) SearchableVectors(ctx context.Context, id string) (int64, []store.SearchableNode, error) {
	c.full.Add(1)
	return c.Store.SearchableVectors(ctx, id)
}

func (c *counting) IndexDelta(ctx context.Context, id string, since int64, maxChanges int) (store.IndexDelta, error) {
	c.delta.Add(1)
	return c.Store.IndexDelta(ctx, id, since, maxChanges)
}

func openStore(tb testing.TB, e storetest.Engine) *store.Store {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, e.DatabaseURL, e.DataDir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return st
}

// kb builds a dataset through the store, as the knowledge service does.
type kb struct {
	tb  testing.TB
	st  *store.Store
	ds  store.Dataset
	dim int
	r   *rand.Rand
}

func newKB(tb testing.TB, st *store.Store, dim int) *kb {
	tb.Helper()
	ds, err := st.CreateDataset(context.Background(), store.Dataset{Name: "kb-" + store.NewID(), CreatedBy: "acct", IndexingTechnique: store.TechniqueHighQuality})
	if err != nil {
		tb.Fatal(err)
	}
	return &kb{tb: tb, st: st, ds: ds, dim: dim, r: rand.New(rand.NewPCG(1, uint64(dim)))}
}

func (k *kb) vector() []float32 {
	v := make([]float32, k.dim)
	for i := range v {
		v[i] = float32(k.r.NormFloat64())
	}
	return v
}

func (k *kb) document() store.Document {
	k.tb.Helper()
	d, err := k.st.CreateDocument(context.Background(), store.Document{
		DatasetID: k.ds.ID, Name: "doc-" + store.NewID(), DataSourceType: "upload_file", Batch: "b", CreatedFrom: "api", CreatedBy: "acct",
		IndexingStatus: store.IndexingCompleted, Enabled: true, DocForm: "text_model", DocLanguage: "English", Generation: 1, IndexingGeneration: 1,
	})
	if err != nil {
		k.tb.Fatal(err)
	}
	return d
}

// index adds n segments to the document's generation gen and indexes them in one batch.
func (k *kb) index(doc store.Document, gen, n int) []store.Segment {
	k.tb.Helper()
	ctx := context.Background()
	first, err := k.st.MaxSegmentPosition(ctx, doc.ID, gen)
	if err != nil {
		k.tb.Fatal(err)
	}
	segs := make([]store.Segment, n)
	nodes := make([]store.IndexNode, n)
	for i := range segs {
		segs[i] = store.Segment{ID: store.NewID(), DatasetID: k.ds.ID, DocumentID: doc.ID, Generation: gen, Position: first + i + 1,
			Content: fmt.Sprint("chunk ", first+i), WordCount: 2, IndexNodeID: store.NewID(), Enabled: true, Status: store.SegmentIndexing,
			CreatedBy: "acct", CreatedAt: time.Unix(1, 0)}
		nodes[i] = store.IndexNode{NodeID: segs[i].IndexNodeID, DatasetID: k.ds.ID, DocumentID: doc.ID, SegmentID: segs[i].ID,
			Generation: gen, Terms: segs[i].Content, Vector: k.vector()}
	}
	if err := k.st.AddSegments(ctx, segs, nil); err != nil {
		k.tb.Fatal(err)
	}
	if err := k.st.IndexNodes(ctx, nodes, time.Unix(2, 0)); err != nil {
		k.tb.Fatal(err)
	}
	return segs
}

// all returns every hit of a search of the dataset, as a sorted list of "node score".
func all(tb testing.TB, idx vectorindex.Index, datasetID string, q []float32) []string {
	tb.Helper()
	hits, err := idx.Search(context.Background(), []string{datasetID}, q, 1_000_000, -1)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s %.5f", h.NodeID, h.Score)
	}
	slices.Sort(out)
	return out
}

// TestDeltaMatchesReload changes a dataset in every way the knowledge service does and checks
// after each change that an index catching up by delta answers exactly as one that loads the
// dataset afresh, and that it did catch up by delta, not by reloading.
func TestDeltaMatchesReload(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		st := openStore(t, e)
		src := &counting{Store: st}
		idx := vectorindex.NewMemory(src)
		k := newKB(t, st, 16)
		q := k.vector()
		doc := k.document()
		segs := k.index(doc, 1, 20)
		if got := all(t, idx, k.ds.ID, q); len(got) != 20 {
			t.Fatalf("%d hits after the first batch, want 20", len(got))
		}
		if n := src.full.Load(); n != 1 {
			t.Fatalf("%d loads for the first search, want 1", n)
		}
		step := func(what string, wantHits int) {
			t.Helper()
			got := all(t, idx, k.ds.ID, q)
			want := all(t, vectorindex.NewMemory(st), k.ds.ID, q)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: the index caught up to\n%v\nwant (a fresh load)\n%v", what, got, want)
			}
			if len(got) != wantHits {
				t.Errorf("%s: %d hits, want %d", what, len(got), wantHits)
			}
			if n := src.full.Load(); n != 1 {
				t.Fatalf("%s: the dataset was loaded %d times, want once (then deltas)", what, n)
			}
		}
		segment := func(s store.Segment) store.Segment {
			t.Helper()
			got, err := st.Segment(ctx, doc.ID, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}

		k.index(doc, 1, 10)
		step("a second indexing batch", 30)

		// Disabling a segment keeps its index rows but takes it out of the search.
		off := segment(segs[0])
		off.Enabled = false
		if err := st.UpdateSegment(ctx, off, []store.IndexNode{{NodeID: off.IndexNodeID, Terms: off.Content, Vector: k.vector()}}); err != nil {
			t.Fatal(err)
		}
		step("a disabled segment", 29)
		off.Enabled = true
		if err := st.UpdateSegment(ctx, off, []store.IndexNode{{NodeID: off.IndexNodeID, Terms: off.Content, Vector: k.vector()}}); err != nil {
			t.Fatal(err)
		}
		step("the segment enabled again", 30)

		// An edited segment gets a new node and vector.
		edited := segment(segs[1])
		edited.Content, edited.IndexNodeID = "edited", store.NewID()
		if err := st.UpdateSegment(ctx, edited, []store.IndexNode{{NodeID: edited.IndexNodeID, Terms: "edited", Vector: slicesClone(q)}}); err != nil {
			t.Fatal(err)
		}
		step("an edited segment", 30)
		if hits, err := idx.Search(ctx, []string{k.ds.ID}, q, 1, -1); err != nil || len(hits) != 1 || hits[0].NodeID != edited.IndexNodeID {
			t.Fatalf("the edited segment's new vector is not the best hit: %v %v", hits, err)
		}

		if err := st.DeleteSegment(ctx, doc.ID, segs[2].ID); err != nil {
			t.Fatal(err)
		}
		step("a deleted segment", 29)

		// A second document, then the first disabled, enabled, archived.
		other := k.document()
		k.index(other, 1, 5)
		step("another document", 34)
		doc, _ = st.Document(ctx, k.ds.ID, doc.ID)
		doc.Enabled = false
		if err := st.UpdateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		step("a disabled document", 5)
		doc.Enabled = true
		if err := st.UpdateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		step("the document enabled again", 34)

		// Re-indexing builds generation 2 beside the served one, then swaps it in.
		k.index(doc, 2, 7)
		step("generation 2 being built (not served)", 34)
		doc, _ = st.Document(ctx, k.ds.ID, doc.ID)
		doc.Generation = 2
		if err := st.SwapGeneration(ctx, doc); err != nil {
			t.Fatal(err)
		}
		step("the re-indexed document", 12)

		if err := st.DeleteDocument(ctx, k.ds.ID, other.ID); err != nil {
			t.Fatal(err)
		}
		step("a deleted document", 7)

		// A hierarchical document: its child chunks are the nodes; one edited, one deleted.
		parentDoc := k.document()
		parent := store.Segment{ID: store.NewID(), DatasetID: k.ds.ID, DocumentID: parentDoc.ID, Generation: 1, Position: 1,
			Content: "parent", WordCount: 1, Enabled: true, Status: store.SegmentIndexing, CreatedBy: "acct", CreatedAt: time.Unix(1, 0)}
		var children []store.ChildChunk
		var childNodes []store.IndexNode
		for i := range 3 {
			c := store.ChildChunk{ID: store.NewID(), SegmentID: parent.ID, DatasetID: k.ds.ID, DocumentID: parentDoc.ID, Generation: 1,
				Position: i + 1, Content: fmt.Sprint("child ", i), WordCount: 2, IndexNodeID: store.NewID(), CreatedBy: "acct", CreatedAt: time.Unix(1, 0)}
			children = append(children, c)
			childNodes = append(childNodes, store.IndexNode{NodeID: c.IndexNodeID, DatasetID: k.ds.ID, DocumentID: parentDoc.ID,
				SegmentID: parent.ID, ChildChunkID: c.ID, Generation: 1, Terms: c.Content, Vector: k.vector()})
		}
		if err := st.AddSegments(ctx, []store.Segment{parent}, children); err != nil {
			t.Fatal(err)
		}
		if err := st.IndexNodes(ctx, childNodes, time.Unix(2, 0)); err != nil {
			t.Fatal(err)
		}
		step("child chunks", 10)
		edited2 := children[0]
		edited2.Content, edited2.IndexNodeID = "child edited", store.NewID()
		if err := st.UpdateChildChunk(ctx, edited2, store.IndexNode{NodeID: edited2.IndexNodeID, Terms: edited2.Content, Vector: k.vector()}); err != nil {
			t.Fatal(err)
		}
		step("an edited child chunk", 10)
		if err := st.DeleteChildChunk(ctx, parent.ID, children[1].ID); err != nil {
			t.Fatal(err)
		}
		step("a deleted child chunk", 9)
		p, err := st.Segment(ctx, parentDoc.ID, parent.ID)
		if err != nil {
			t.Fatal(err)
		}
		p.Enabled = false
		if err := st.UpdateSegment(ctx, p, []store.IndexNode{
			{NodeID: edited2.IndexNodeID, ChildChunkID: edited2.ID, Terms: "x", Vector: k.vector()},
			{NodeID: children[2].IndexNodeID, ChildChunkID: children[2].ID, Terms: "x", Vector: k.vector()},
		}); err != nil {
			t.Fatal(err)
		}
		step("a disabled parent segment", 7)
		if n := src.delta.Load(); n == 0 {
			t.Fatal("no delta was asked for")
		}

		// A dataset deleted: the search says so and the index drops it.
		if err := st.DeleteDataset(ctx, k.ds.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Search(ctx, []string{k.ds.ID}, q, 1, -1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("search of a deleted dataset: %v", err)
		}
		if _, ok := idx.Version(k.ds.ID); ok {
			t.Error("the index still holds the deleted dataset")
		}
	})
}

func slicesClone(v []float32) []float32 { return append([]float32(nil), v...) }

// TestDeltaConcurrentSearches: searches run while batches land and are applied; the race
// detector watches the slab, and the index ends where a fresh load is.
func TestDeltaConcurrentSearches(t *testing.T) {
	t.Parallel()
	st := openStore(t, storetest.NewEngine(t, storetest.SQLite))
	idx := vectorindex.NewMemory(st)
	k := newKB(t, st, 8)
	q := k.vector()
	doc := k.document()
	k.index(doc, 1, 50)
	all(t, idx, k.ds.ID, q)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := idx.Search(context.Background(), []string{k.ds.ID}, q, 5, -1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 20 {
		k.index(doc, 1, 10)
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := all(t, idx, k.ds.ID, q), all(t, vectorindex.NewMemory(st), k.ds.ID, q); !slices.Equal(got, want) || len(got) != 250 {
		t.Fatalf("after concurrent batches: %d hits, a fresh load %d", len(got), len(want))
	}
}

// TestDeltaTooLargeReloads: an index further behind than the delta it may apply reloads the
// dataset, and answers the same.
func TestDeltaTooLargeReloads(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		st := openStore(t, e)
		src := &counting{Store: st}
		idx := vectorindex.NewMemory(src, vectorindex.WithMaxDelta(5))
		k := newKB(t, st, 8)
		q := k.vector()
		doc := k.document()
		k.index(doc, 1, 3)
		all(t, idx, k.ds.ID, q)
		k.index(doc, 1, 4)
		if got := all(t, idx, k.ds.ID, q); len(got) != 7 || src.full.Load() != 1 {
			t.Fatalf("a batch of 4 (under the limit of 5): %d hits, %d loads; want 7, 1", len(got), src.full.Load())
		}
		k.index(doc, 1, 6)
		if got := all(t, idx, k.ds.ID, q); len(got) != 13 || src.full.Load() != 2 {
			t.Fatalf("a batch of 6 (over the limit of 5): %d hits, %d loads; want 13, 2", len(got), src.full.Load())
		}
	})
}
