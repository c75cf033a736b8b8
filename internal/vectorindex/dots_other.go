//go:build !amd64

package vectorindex

// haveAVX2 is false: no vector code for the int8 codes either.
const haveAVX2 = false

// dotsI8 sets out[r] to dotI8(q, codes[r*dim:(r+1)*dim]) for each row r < len(out).
func dotsI8(q []int16, codes []int8, dim int, out []int32) {
	for r := range out {
		out[r] = dotI8(q, codes[r*dim:(r+1)*dim])
	}
}

// dots sets out[r] to dot(q, vecs[r*dim:]) for each row r < len(out).
func dots(q, vecs []float32, dim int, out []float32) {
	for r := range out {
		out[r] = dot(q, vecs[r*dim:])
	}
}
