package vectorindex

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkSearch measures one warm top-10 search (slab loaded, version
// unchanged) over 100k vectors: the scan is the cost, the version check is
// a map lookup in the fake. "sequential" pins one goroutine so the
// parallel speed-up shows in the same run.
func BenchmarkSearch(b *testing.B) {
	const n = 100_000
	for _, dim := range []int{256, 1536} {
		r := rand.New(rand.NewPCG(uint64(dim), 15))
		src := newFakeSource()
		src.put("d", randomNodes(r, "n", n, dim))
		indexes := []struct {
			name string
			idx  *Memory
		}{
			{"parallel", NewMemory(src)},
			{"sequential", NewMemory(src, WithWorkers(1))},
		}
		queries := make([][]float32, 64)
		for i := range queries {
			queries[i] = randomVector(r, dim)
		}
		for _, tt := range indexes {
			if _, err := tt.idx.Search(b.Context(), []string{"d"}, queries[0], 10, -1); err != nil {
				b.Fatal(err)
			}
		}
		// The slabs hold copies; free the source's vectors.
		src.mu.Lock()
		src.sets["d"].nodes = nil
		src.mu.Unlock()
		runtime.GC()
		for _, tt := range indexes {
			b.Run(fmt.Sprintf("dim=%d/n=%d/%s", dim, n, tt.name), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := tt.idx.Search(b.Context(), []string{"d"}, queries[i%len(queries)], 10, -1); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mvectors/s")
			})
		}
	}
}
