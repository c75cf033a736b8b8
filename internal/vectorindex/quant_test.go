package vectorindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/parleyhq/parley/internal/store"
)

// TestQuantBound pins the bound scanCodes relies on: the exact score dot computes is never
// further from the codes' score than the bound, for rows and queries of every dimension.
func TestQuantBound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(17, 18))
	for _, dim := range []int{1, 2, 7, 16, 17, 100, 256, 1536} {
		for range 200 {
			v, q := randomVector(r, dim), randomVector(r, dim)
			if r.IntN(4) == 0 {
				// A spike: most of the length in one component.
				v[r.IntN(dim)] *= 50
			}
			Normalize(v)
			Normalize(q)
			codes, rq := quantizeRow(nil, v)
			qq := quantizeQuery(q)
			approx := qq.step * float64(rq.step) * float64(dotI8(qq.codes, codes))
			bound := qq.norm*float64(rq.resid) + qq.err*float64(rq.norm) + qq.slack
			if exact := float64(dot(q, v)); math.Abs(exact-approx) > bound {
				t.Fatalf("dim %d: dot %v, codes give %v ± %v", dim, exact, approx, bound)
			}
		}
	}
}

// TestDotsI8 pins that the vector code sums the codes as dotI8 does.
func TestDotsI8(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 20))
	for _, dim := range []int{1, 15, 16, 17, 33, 256, 1536} {
		for _, n := range []int{0, 1, 4, 7} {
			var codes []int8
			for range n {
				codes, _ = quantizeRow(codes, randomVector(r, dim))
			}
			qq := quantizeQuery(randomVector(r, dim))
			out := make([]int32, n)
			dotsI8(qq.codes, codes, dim, out)
			for i := range out {
				if want := dotI8(qq.codes, codes[i*dim:(i+1)*dim]); out[i] != want {
					t.Errorf("dim %d, %d rows: row %d = %d, want %d", dim, n, i, out[i], want)
				}
			}
		}
	}
}

// TestSearchCodes pins that searching through int8 codes gives the exact search's hits and
// scores, bit for bit, ties and minimum scores included, while scoring few rows exactly.
func TestSearchCodes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	for _, dim := range []int{3, 24, 256} {
		src := newFakeSource()
		nodes := randomNodes(r, "n", 3000, dim)
		// Duplicates and near-duplicates: ties and rows the bound cannot tell apart.
		for i := range 300 {
			v := slices.Clone(nodes[i].Vector)
			if i%2 == 0 {
				v[0] += 1e-6
			}
			nodes = append(nodes, store.SearchableNode{NodeID: "dup" + strconv.Itoa(i), Vector: v})
		}
		src.put("d", nodes)
		exact := NewMemory(src, withCodes(false))
		coded := NewMemory(src, withCodes(true), WithParallelMin(1000), WithWorkers(3))
		for i := range 60 {
			q := randomVector(r, dim)
			if i%3 == 0 {
				q = slices.Clone(nodes[r.IntN(len(nodes))].Vector)
			}
			k := 1 + r.IntN(20)
			minScore := math.Inf(-1)
			if i%4 == 0 {
				minScore = r.Float64() - 0.2
			}
			want, err := exact.Search(t.Context(), []string{"d"}, q, k, minScore)
			if err != nil {
				t.Fatal(err)
			}
			got, err := coded.Search(t.Context(), []string{"d"}, q, k, minScore)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("dim %d, query %d (k %d, min %v): codes give %v\nwant %v", dim, i, k, minScore, got, want)
			}
		}
	}
	// The point of the codes: at 256 dimensions, random rows against a random query, few rows
	// are close enough to the best to need their exact score.
	src := newFakeSource()
	src.put("d", randomNodes(r, "n", 20_000, 256))
	m := NewMemory(src, withCodes(true))
	s, err := m.slab(t.Context(), "d")
	if err != nil {
		t.Fatal(err)
	}
	q := randomVector(r, 256)
	Normalize(q)
	qq := quantizeQuery(q)
	best, scored := scanCodes(s, q, &qq, 0, len(s.ids), 10, float32(math.Inf(-1)))
	if len(best) != 10 || scored > 200 {
		t.Errorf("scanCodes kept %d rows after scoring %d of %d exactly; want 10 after at most 200", len(best), scored, len(s.ids))
	}
}
