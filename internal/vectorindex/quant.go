package vectorindex

import (
	"math"
)

// A scan of float32 rows is bound by memory bandwidth once the slab outgrows the processor's
// caches: at 100k rows of 256 dimensions it reads 100 MB per search. So a slab also keeps each
// row as int8 codes, a quarter of the bytes, when the processor can multiply them (AVX2). A
// search scores every row from its codes, with a bound on how far that score can be from the
// exact one, and computes the exact score (dot, as without codes) only for the rows whose
// bound reaches the k best: the result is the exact scan's, hits and scores, and the float32
// rows are read only for the few candidates.
//
// The bound: with the row v = v' + r (v' what the codes stand for) and the query q = q' + d,
// q·v - q'·v' = q·r + d·v', so |q·v - q'·v'| ≤ |q||r| + |d||v'|. q'·v' is the codes' integer
// dot product times the two steps. Adding what float32 rounding can move dot's result by
// (at most dim·2⁻²⁴ for unit vectors) bounds the exact score dot computes on both sides.

// rowQuant bounds the approximate score of a row: step is the value of one step of its codes,
// resid the length of what the codes miss (|r|) and norm the length of what they stand for
// (|v'|), both rounded up.
type rowQuant struct {
	step, resid, norm float32
}

// quantizeRow appends the int8 codes of the row v to codes and returns their rowQuant: each
// component divided by the step, max |v_i| / 127, and rounded.
func quantizeRow(codes []int8, v []float32) ([]int8, rowQuant) {
	var m float32
	for _, x := range v {
		m = max(m, abs32(x))
	}
	rq := rowQuant{step: m / 127}
	if rq.step == 0 {
		// A zero row (Normalize refuses them) or one too small to scale: codes of zero, and
		// the whole row as the residual.
		rq.step = 1
	}
	var resid, norm float64
	for _, x := range v {
		c := max(-127, min(127, math.Round(float64(x)/float64(rq.step))))
		codes = append(codes, int8(c))
		back := c * float64(rq.step)
		resid += (float64(x) - back) * (float64(x) - back)
		norm += back * back
	}
	rq.resid, rq.norm = roundUp(math.Sqrt(resid)), roundUp(math.Sqrt(norm))
	return codes, rq
}

// queryQuant is a query as int16 codes: step is the value of one step, norm the query's
// length and err the length of what the codes miss, both rounded up, and slack what float32
// rounding can move dot's result by.
type queryQuant struct {
	codes            []int16
	step             float64
	norm, err, slack float64
}

// quantizeQuery returns the codes of the unit query q. The step is as small as keeps every
// integer dot product with int8 codes (at most dim × 127 × the largest code) within int32, and
// 32767 codes at most.
func quantizeQuery(q []float32) queryQuant {
	var m, norm float64
	for _, x := range q {
		m = max(m, math.Abs(float64(x)))
		norm += float64(x) * float64(x)
	}
	top := float64(min(32767, math.MaxInt32/(127*max(1, len(q)))))
	qq := queryQuant{codes: make([]int16, len(q)), step: m / top, norm: math.Sqrt(norm)}
	if qq.step == 0 {
		qq.step = 1
	}
	var err float64
	for i, x := range q {
		c := max(-top, min(top, math.Round(float64(x)/qq.step)))
		qq.codes[i] = int16(c)
		d := float64(x) - c*qq.step
		err += d * d
	}
	qq.norm = float64(roundUp(qq.norm))
	qq.err = float64(roundUp(math.Sqrt(err)))
	// Each product and sum of dot is rounded to float32 (relative error 2⁻²⁴ each, fewer than
	// dim+16 of them on any path to the result), and the sum of |q_i v_i| is at most |q||v| ≈
	// 1; a margin covers the float64 arithmetic of the bound itself.
	qq.slack = 1.01*float64(len(q)+16)*0x1p-24*qq.norm + 1e-9
	return qq
}

// dotI8 is the integer dot product of q and the codes v (len(v) <= len(q)).
func dotI8(q []int16, v []int8) int32 {
	var s int32
	for i, c := range v {
		s += int32(q[i]) * int32(c)
	}
	return s
}

// roundUp returns x as a float32 not below it, a little above it, so that a bound read back
// from a float32 still holds.
func roundUp(x float64) float32 {
	return math.Nextafter32(float32(x*(1+1e-6)), float32(math.Inf(1)))
}

func abs32(x float32) float32 {
	return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
}

// scanCodes returns what scanRange returns, the k best rows in [lo, hi) of the slab s against
// the unit query q whose score is >= floor, unsorted, but reads the float32 rows only for the
// candidates the codes cannot rule out. A row is a candidate when its score's upper bound
// reaches both floor and the k-th largest lower bound of the rows so far: k rows score at
// least that, so a row below it cannot be among the k best. The candidates are then scored
// exactly, in row order, as scanRange scores every row; scored is how many were.
func scanCodes(s *slab, q []float32, qq *queryQuant, lo, hi, k int, floor float32) (best []cand, scored int) {
	dim := s.dim
	var (
		lows  = lowest{k: k}
		theta = math.Inf(-1)
		fl    = float64(floor)
		cands []int
		ups   []float64
		ints  [scanBlock]int32
	)
	for start := lo; start < hi; start += scanBlock {
		block := ints[:min(scanBlock, hi-start)]
		dotsI8(qq.codes, s.codes[start*dim:], dim, block)
		for j, x := range block {
			rq := s.quants[start+j]
			approx := qq.step * float64(rq.step) * float64(x)
			bound := qq.norm*float64(rq.resid) + qq.err*float64(rq.norm) + qq.slack
			up := approx + bound
			if up < fl || up < theta {
				continue
			}
			cands = append(cands, start+j)
			ups = append(ups, up)
			if lows.push(approx - bound) {
				theta = lows.h[0]
			}
		}
	}
	t := topK{k: k, h: make([]cand, 0, min(k, len(cands)))}
	thr := floor
	for i, pos := range cands {
		if ups[i] < theta {
			continue
		}
		sc := dot(q, s.vecs[pos*dim:])
		scored++
		// As in scanRange: rows arrive in ascending order, so a tie with the worst kept row
		// loses once the heap is full.
		if sc < thr || (len(t.h) == k && sc == thr) {
			continue
		}
		t.push(cand{score: sc, pos: pos})
		if len(t.h) == k {
			thr = max(floor, t.h[0].score)
		}
	}
	return t.h, scored
}

// lowest keeps the k largest values pushed in a min-heap whose root is the smallest kept. It is
// topK's heap for float64 bounds, written apart on purpose: one generic heap ordered through a
// function value made BenchmarkSearch (256 dimensions, 100k rows) about 15% slower, every
// candidate row of a coded scan passing through push.
type lowest struct {
	k int
	h []float64
}

// push adds x and reports whether k values are now kept (the root is then the k-th largest).
func (l *lowest) push(x float64) bool {
	if len(l.h) < l.k {
		l.h = append(l.h, x)
		for i := len(l.h) - 1; i > 0; {
			p := (i - 1) / 2
			if l.h[p] <= l.h[i] {
				break
			}
			l.h[p], l.h[i] = l.h[i], l.h[p]
			i = p
		}
		return len(l.h) == l.k
	}
	if x <= l.h[0] {
		return true
	}
	l.h[0] = x
	for i := 0; ; {
		w := i
		if c := 2*i + 1; c < len(l.h) && l.h[c] < l.h[w] {
			w = c
		}
		if c := 2*i + 2; c < len(l.h) && l.h[c] < l.h[w] {
			w = c
		}
		if w == i {
			return true
		}
		l.h[w], l.h[i] = l.h[i], l.h[w]
		i = w
	}
}
