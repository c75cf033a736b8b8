package vectorindex

import "golang.org/x/sys/cpu"

// haveAVX reports whether the processor (and the operating system) can run dot4x8, and
// haveAVX2 whether it can run dot4i8.
var (
	haveAVX  = cpu.X86.HasAVX
	haveAVX2 = cpu.X86.HasAVX2
)

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

// dot4i8 is implemented in dots_amd64.s.
//
//go:noescape
func dot4i8(q *int16, v *int8, stride, blocks int, acc *[4][8]int32)

// dotsI8 sets out[r] to dotI8(q, codes[r*dim:(r+1)*dim]) for each row r < len(out): with AVX2,
// four rows at a time go through dot4i8, sixteen codes per instruction.
func dotsI8(q []int16, codes []int8, dim int, out []int32) {
	r := 0
	if haveAVX2 && dim >= 16 {
		var acc [4][8]int32
		for ; r+4 <= len(out); r += 4 {
			rows := codes[r*dim : (r+4)*dim]
			dot4i8(&q[0], &rows[0], dim, dim/16, &acc)
			for j := range acc {
				sum := dotI8(q[dim/16*16:], rows[j*dim+dim/16*16:(j+1)*dim])
				for _, x := range acc[j] {
					sum += x
				}
				out[r+j] = sum
			}
		}
	}
	for ; r < len(out); r++ {
		out[r] = dotI8(q, codes[r*dim:(r+1)*dim])
	}
}
