//go:build !amd64

package vectorindex

// dots sets out[r] to dot(q, vecs[r*dim:]) for each row r < len(out).
func dots(q, vecs []float32, dim int, out []float32) {
	for r := range out {
		out[r] = dot(q, vecs[r*dim:])
	}
}
