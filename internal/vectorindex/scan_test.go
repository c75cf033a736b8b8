package vectorindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDot(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 14))
	for n := range 40 {
		a, b := randomVector(r, n), randomVector(r, n+3) // b may be longer
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		if got := dot(a, b); math.Abs(float64(got)-want) > 1e-4*(1+math.Abs(want)) {
			t.Errorf("n=%d: dot = %v, want %v", n, got, want)
		}
	}
}

// TestDots pins that dots gives dot's bits for every row, whatever the dimension (a multiple
// of 8 or not, below 8) and the number of rows (a multiple of 4 or not): a search must rank
// the same whichever code computed the scores.
func TestDots(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(15, 16))
	for _, dim := range []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100, 256, 1536} {
		for _, n := range []int{0, 1, 3, 4, 5, 8, 11} {
			q := randomVector(r, dim)
			vecs := make([]float32, 0, n*dim)
			for range n {
				vecs = append(vecs, randomVector(r, dim)...)
			}
			out := make([]float32, n)
			dots(q, vecs, dim, out)
			for i := range out {
				if want := dot(q, vecs[i*dim:]); math.Float32bits(out[i]) != math.Float32bits(want) {
					t.Errorf("dim %d, %d rows: row %d = %v, dot gives %v", dim, n, i, out[i], want)
				}
			}
		}
	}
}

func TestFloor32(t *testing.T) {
	t.Parallel()
	for _, x := range []float64{0.1, 0.3, -0.7, 0.5, 1, 1.0000001, 0.99999999} {
		f := floor32(x)
		if float64(f) > x || float64(math.Nextafter32(f, 2)) <= x {
			t.Errorf("floor32(%v) = %v", x, f)
		}
	}
	for _, x := range []float64{-1, -5, math.Inf(-1), math.NaN()} {
		if f := floor32(x); !math.IsInf(float64(f), -1) {
			t.Errorf("floor32(%v) = %v, want -Inf", x, f)
		}
	}
}
