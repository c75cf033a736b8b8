package vectorindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/pubsub/redispubsub"
	"github.com/parleyhq/parley/internal/redisx/redistest"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// replica is what a replica of `parley serve` holds of the vector index: its own connection
// pool, its own Memory, and its own Redis client sharing one prefix with the others.
type replica struct {
	st        *store.Store
	idx       *vectorindex.Memory
	refreshed chan installed // versions the index installed
}

type installed struct {
	version int64
	at      time.Time
}

func newReplica(tb testing.TB, e storetest.Engine, prefix string) *replica {
	tb.Helper()
	st := openStore(tb, e)
	r := &replica{st: st, refreshed: make(chan installed, 1024)}
	r.idx = vectorindex.NewMemory(st, vectorindex.WithRefreshed(func(_ string, v int64) {
		select {
		case r.refreshed <- installed{v, time.Now()}:
		default:
		}
	}))
	client, _ := redistest.Client(tb)
	sh, err := vectorindex.Share(context.Background(), r.idx, redispubsub.New(client, prefix), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(sh.Close)
	st.SetIndexChangeHook(sh.Changed)
	return r
}

// waitVersion waits until the replica's index installs version v or later of a dataset, and
// returns when it did.
func (r *replica) waitVersion(tb testing.TB, v int64) time.Time {
	tb.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case got := <-r.refreshed:
			if got.version >= v {
				return got.at
			}
		case <-timeout:
			tb.Fatalf("the index did not catch up to version %d", v)
		}
	}
}

func drain(c chan installed) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// TestSharedCatchUp: two replicas on one PostgreSQL and one Redis. A dataset B has searched is
// changed through A: B's index catches up on the announcement, before any search asks it to,
// and a search on B then answers from the new version without catching up again.
func TestSharedCatchUp(t *testing.T) {
	t.Parallel()
	e := storetest.NewEngine(t, storetest.Postgres)
	prefix := redistest.Prefix(t)
	a, b := newReplica(t, e, prefix), newReplica(t, e, prefix)
	k := newKB(t, a.st, 16)
	q := k.vector()
	doc := k.document()
	k.index(doc, 1, 5)
	if got := all(t, b.idx, k.ds.ID, q); len(got) != 5 {
		t.Fatalf("B: %d hits, want 5", len(got))
	}
	drain(b.refreshed)

	k.index(doc, 1, 10)
	v, err := a.st.IndexVersion(t.Context(), k.ds.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.waitVersion(t, v)
	if got, _ := b.idx.Version(k.ds.ID); got != v {
		t.Fatalf("B holds version %d, want %d", got, v)
	}
	if got := all(t, b.idx, k.ds.ID, q); len(got) != 15 {
		t.Fatalf("B after the batch on A: %d hits, want 15", len(got))
	}

	// A segment deleted on A leaves B's index by the announcement too.
	segs, _, err := a.st.ListSegments(t.Context(), store.SegmentQuery{DocumentID: doc.ID, Limit: 1, Page: 1})
	if err != nil || len(segs) != 1 {
		t.Fatal(segs, err)
	}
	if err := a.st.DeleteSegment(t.Context(), doc.ID, segs[0].ID); err != nil {
		t.Fatal(err)
	}
	b.waitVersion(t, v+1)
	if got := all(t, b.idx, k.ds.ID, q); len(got) != 14 {
		t.Fatalf("B after a deletion on A: %d hits, want 14", len(got))
	}
}
