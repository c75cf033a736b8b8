package vectorindex

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

// dot returns the dot product of a and b (len(b) >= len(a)) with eight
// independent accumulators: the additions do not wait on each other, which
// makes the scalar loop several times faster than a single running sum.
// Each product is rounded to float32 before it is added (the conversions
// forbid a fused multiply-add), so that dot gives the same bits on every
// architecture and as dots' vector code.
func dot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		// Full slice expressions let the compiler drop the bounds checks
		// inside the block.
		a8, b8 := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += float32(a8[0] * b8[0])
		s1 += float32(a8[1] * b8[1])
		s2 += float32(a8[2] * b8[2])
		s3 += float32(a8[3] * b8[3])
		s4 += float32(a8[4] * b8[4])
		s5 += float32(a8[5] * b8[5])
		s6 += float32(a8[6] * b8[6])
		s7 += float32(a8[7] * b8[7])
	}
	return finish(&[8]float32{s0, s1, s2, s3, s4, s5, s6, s7}, a, b, i)
}

// finish is the end of dot from its eight accumulators l, the first from
// elements on of a and b still to add: those go into l[0], then the
// accumulators are summed pairwise.
func finish(l *[8]float32, a, b []float32, from int) float32 {
	s0 := l[0]
	for i := from; i < len(a); i++ {
		s0 += float32(a[i] * b[i])
	}
	return ((s0 + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

// cand is a scored slab row.
type cand struct {
	score float32
	pos   int
}

// better orders candidates: higher score first, then earlier row, so that
// results are deterministic when scores tie.
func better(a, b cand) bool {
	return a.score > b.score || (a.score == b.score && a.pos < b.pos)
}

// topK keeps the k best candidates in a min-heap whose root is the worst
// kept one.
type topK struct {
	k int
	h []cand
}

func (t *topK) push(c cand) {
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		t.up(len(t.h) - 1)
		return
	}
	if !better(c, t.h[0]) {
		return
	}
	t.h[0] = c
	t.down(0)
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(t.h[p], t.h[i]) {
			break
		}
		t.h[p], t.h[i] = t.h[i], t.h[p]
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.h)
	for {
		w := i
		if l := 2*i + 1; l < n && better(t.h[w], t.h[l]) {
			w = l
		}
		if r := 2*i + 2; r < n && better(t.h[w], t.h[r]) {
			w = r
		}
		if w == i {
			return
		}
		t.h[w], t.h[i] = t.h[i], t.h[w]
		i = w
	}
}

// sorted returns the kept candidates best first.
func sorted(c []cand) []cand {
	slices.SortFunc(c, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.pos, b.pos))
	})
	return c
}

// scanBlock is how many rows scanRange scores with one call of dots.
const scanBlock = 64

// scanRange returns the k best rows in [lo, hi) of vecs (rows of dim
// floats) against the unit query q whose score is >= floor, unsorted.
func scanRange(vecs []float32, dim int, q []float32, lo, hi, k int, floor float32) []cand {
	t := topK{k: k, h: make([]cand, 0, min(k, hi-lo))}
	thr := floor
	var scores [scanBlock]float32
	for start := lo; start < hi; start += scanBlock {
		block := scores[:min(scanBlock, hi-start)]
		dots(q, vecs[start*dim:], dim, block)
		for j, s := range block {
			// Rows arrive in ascending order, so a tie with the worst kept
			// row loses: strictly better is needed once the heap is full.
			if s < thr || (len(t.h) == k && s == thr) {
				continue
			}
			t.push(cand{score: s, pos: start + j})
			if len(t.h) == k {
				thr = max(floor, t.h[0].score)
			}
		}
	}
	return t.h
}

// scan returns the k best rows of the slab s against q with score >= floor,
// best first. Slabs of more than parallelMin rows are split among workers
// goroutines, each keeping its own top k, merged at the end. A coded slab
// is scanned through its codes (scanCodes), with the same result.
func scan(s *slab, q []float32, k int, floor float32, parallelMin, workers int) []cand {
	dim := s.dim
	n := 0
	if dim > 0 {
		n = len(s.vecs) / dim
	}
	if n == 0 || k <= 0 {
		return nil
	}
	part := func(lo, hi int) []cand { return scanRange(s.vecs, dim, q, lo, hi, k, floor) }
	if s.coded {
		qq := quantizeQuery(q)
		part = func(lo, hi int) []cand {
			best, _ := scanCodes(s, q, &qq, lo, hi, k, floor)
			return best
		}
	}
	if n <= parallelMin || workers < 2 {
		return sorted(part(0, n))
	}
	workers = min(workers, n)
	parts := make([][]cand, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Go(func() { parts[w] = part(lo, hi) })
	}
	wg.Wait()
	all := slices.Concat(parts...)
	return sorted(all)[:min(k, len(all))]
}

// floor32 returns the largest float32 not above x, the scan's cheap
// pre-filter for minScore (the exact test is done in float64 at the end).
func floor32(x float64) float32 {
	if math.IsNaN(x) || x <= -1 {
		return float32(math.Inf(-1))
	}
	f := float32(x)
	if float64(f) > x {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}
