package vectorindex_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/redisx/redistest"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// sourceOnly hides the store's delta, so that an index over it reloads the dataset on every
// change, as it did before the change log.
type sourceOnly struct{ vectorindex.Source }

// BenchmarkIndexBatch measures what a search pays after an indexing batch of 10 chunks lands
// in a dataset of 50k vectors of 256 dimensions on PostgreSQL: "delta" applies the batch to the
// slab the index holds, "reload" loads the dataset again (the behaviour before). The write
// itself is not timed. Compare the two ns/op: their ratio is what a batch no longer costs.
func BenchmarkIndexBatch(b *testing.B) {
	const base, dim, batch = 50_000, 256, 10
	e := storetest.NewEngine(b, storetest.Postgres)
	st := openStore(b, e)
	k := newKB(b, st, dim)
	q := k.vector()
	doc := k.document()
	for range base / 1000 {
		k.index(doc, 1, 1000)
	}
	for _, c := range []struct {
		name string
		idx  *vectorindex.Memory
	}{
		{"delta", vectorindex.NewMemory(st)},
		{"reload", vectorindex.NewMemory(sourceOnly{st})},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := b.Context()
			if _, err := c.idx.Search(ctx, []string{k.ds.ID}, q, 10, -1); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				b.StopTimer()
				k.index(doc, 1, batch)
				b.StartTimer()
				if hits, err := c.idx.Search(ctx, []string{k.ds.ID}, q, 10, -1); err != nil || len(hits) != 10 {
					b.Fatal(hits, err)
				}
			}
		})
	}
}

// BenchmarkSharedStaleness measures, with two replicas on one PostgreSQL and one Redis, the
// time from the commit of a 10-chunk indexing batch on A to B's index holding it (announced
// over Redis pub/sub and applied as a delta), in a dataset of 5k vectors of 256 dimensions:
// stale-ms is the mean, worst-stale-ms the worst (ns/op includes the write on A).
func BenchmarkSharedStaleness(b *testing.B) {
	const base, dim, batch = 5_000, 256, 10
	e := storetest.NewEngine(b, storetest.Postgres)
	prefix := redistest.Prefix(b)
	a, r := newReplica(b, e, prefix), newReplica(b, e, prefix)
	k := newKB(b, a.st, dim)
	q := k.vector()
	doc := k.document()
	for range base / 1000 {
		k.index(doc, 1, 1000)
	}
	if _, err := r.idx.Search(b.Context(), []string{k.ds.ID}, q, 10, -1); err != nil {
		b.Fatal(err)
	}
	var worst, total time.Duration
	for b.Loop() {
		drain(r.refreshed)
		k.index(doc, 1, batch)
		committed := time.Now()
		v, err := a.st.IndexVersion(b.Context(), k.ds.ID)
		if err != nil {
			b.Fatal(err)
		}
		stale := r.waitVersion(b, v).Sub(committed)
		worst, total = max(worst, stale), total+stale
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "stale-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-stale-ms")
}
