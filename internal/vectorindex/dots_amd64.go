package vectorindex

import "golang.org/x/sys/cpu"

// haveAVX reports whether the processor (and the operating system) can run dot4x8.
var haveAVX = cpu.X86.HasAVX

// dot4x8 is implemented in dots_amd64.s.
//
//go:noescape
func dot4x8(q, v *float32, stride, blocks int, acc *[4][8]float32)

// dots sets out[r] to dot(q, vecs[r*dim:]) for each row r < len(out), bit for bit: with AVX,
// four rows at a time go through dot4x8, whose eight lanes are dot's eight accumulators, and
// finish adds the rest as dot does. The scalar loop does about one multiply-add per cycle; the
// vector one, eight lanes on four independent rows, several times that (BenchmarkSearch).
func dots(q, vecs []float32, dim int, out []float32) {
	r := 0
	if haveAVX && dim >= 8 {
		var acc [4][8]float32
		for ; r+4 <= len(out); r += 4 {
			rows := vecs[r*dim : (r+4)*dim]
			dot4x8(&q[0], &rows[0], 4*dim, dim/8, &acc)
			for j := range acc {
				out[r+j] = finish(&acc[j], q, rows[j*dim:], dim/8*8)
			}
		}
	}
	for ; r < len(out); r++ {
		out[r] = dot(q, vecs[r*dim:])
	}
}
