package openaitest

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/jsonenc"
	"github.com/parleyhq/parley/internal/tokens"
)

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request, req *Request) {
	if len(req.Input) == 0 {
		writeError(w, http.StatusBadRequest, "'input' must not be empty.", "invalid_request_error", "")
		return
	}
	for _, in := range req.Input {
		if in == "" {
			writeError(w, http.StatusBadRequest, "'input' cannot contain an empty string.", "invalid_request_error", "")
			return
		}
	}
	if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
		writeError(w, http.StatusBadRequest, "'encoding_format' must be 'float' or 'base64'.", "invalid_request_error", "")
		return
	}
	if _, ok := s.fault(w, r, req.Input...); !ok {
		return
	}
	dim := s.dim
	if req.Dimensions > 0 {
		dim = req.Dimensions
	}
	promptTokens := 0
	for _, in := range req.Input {
		promptTokens += tokens.Count(in)
	}
	vec := make([]float32, dim)
	buf := make([]byte, 0, 64+len(req.Input)*(dim*12+64))
	buf = append(buf, `{"object":"list","data":[`...)
	for i, in := range req.Input {
		Embedding(in, vec)
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"object":"embedding","index":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `,"embedding":`...)
		if req.EncodingFormat == "base64" {
			raw := make([]byte, 4*dim)
			for j, v := range vec {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(v))
			}
			buf = append(buf, '"')
			buf = base64.StdEncoding.AppendEncode(buf, raw)
			buf = append(buf, '"')
		} else {
			buf = append(buf, '[')
			for j, v := range vec {
				if j > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendFloat(buf, float64(v), 'g', -1, 32)
			}
			buf = append(buf, ']')
		}
		buf = append(buf, '}')
	}
	buf = append(buf, `],"model":`...)
	buf = jsonenc.AppendString(buf, req.Model)
	buf = append(buf, `,"usage":{"prompt_tokens":`...)
	buf = strconv.AppendInt(buf, int64(promptTokens), 10)
	buf = append(buf, `,"total_tokens":`...)
	buf = strconv.AppendInt(buf, int64(promptTokens), 10)
	buf = append(buf, "}}"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}

// wordNonZeros is how many coordinates one word's vector touches (all of
// them when the embedding is smaller).
const wordNonZeros = 32

// Embedding fills vec with the server's deterministic, unit-length
// embedding of text, a bag of words that makes texts sharing words similar,
// as a real embedder would make texts on the same subject similar.
//
// Words are lower-cased runs of Unicode letters and digits, except that
// each Han, Hiragana or Katakana character (scripts written without spaces)
// is a word of its own. Each word is hashed with FNV-1a; the hash seeds a
// PRNG (splitmix64) that draws a sparse random vector, wordNonZeros values
// in [-1,1) at pseudo-random coordinates; the text's vector is the sum over
// its words, once per occurrence, normalised to unit length. Equal texts
// give equal vectors, texts without a common word near-orthogonal ones
// (root-mean-square cosine about 0.025 at 1536 dimensions, 0.06 at 256),
// and the cosine of two texts grows with the words they share. Sparse word
// vectors (a random projection of the word counts) keep the cost at
// words×32 instead of words×dim (about 30 µs for a 200-word chunk), so
// benchmarks can embed 100k chunks; the sum is dense for any text of more
// than a few dozen words.
//
// A text without words (empty, only punctuation or spaces) gets the dense
// vector of its whole-text hash instead.
func Embedding(text string, vec []float32) {
	if len(vec) == 0 {
		return
	}
	clear(vec)
	dim := uint64(len(vec))
	n := min(wordNonZeros, len(vec))
	words := forEachWord(text, func(h uint64) {
		state := h
		for range n {
			z := splitmix64(&state)
			vec[(z&0xffffffff)%dim] += float32(z>>32)/(1<<31) - 1
		}
	})
	if words == 0 {
		hashEmbedding(text, vec)
		return
	}
	normalize(vec)
}

// hashEmbedding fills vec with the dense unit vector drawn from the FNV-1a
// hash of the whole text.
func hashEmbedding(text string, vec []float32) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	state := h.Sum64()
	for i := range vec {
		z := splitmix64(&state)
		vec[i] = float32(float64(z>>11)/(1<<53)*2 - 1)
	}
	normalize(vec)
}

// splitmix64 advances state and returns the next pseudo-random value.
func splitmix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// normalize scales vec to unit length; a zero vector stays zero.
func normalize(vec []float32) {
	var norm float64
	for _, v := range vec {
		norm += float64(v) * float64(v)
	}
	if norm == 0 {
		return
	}
	inv := 1 / math.Sqrt(norm)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) * inv)
	}
}

// FNV-1a 64-bit parameters.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// forEachWord calls fn with the FNV-1a hash of each word of text, in order,
// and returns how many there were. Words are lower-cased runs of letters
// and digits (combining marks included); Han, Hiragana and Katakana, written
// without spaces, make a word of each character. Nothing is allocated.
func forEachWord(text string, fn func(hash uint64)) int {
	var (
		n      int
		h      uint64 = fnvOffset
		inWord bool
		buf    [utf8.UTFMax]byte
	)
	flush := func() {
		if inWord {
			fn(h)
			n++
			h, inWord = fnvOffset, false
		}
	}
	for _, r := range text {
		if r < utf8.RuneSelf { // fast path: most text is ASCII
			switch {
			case 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
			case 'A' <= r && r <= 'Z':
				r += 'a' - 'A'
			default:
				flush()
				continue
			}
			h = (h ^ uint64(r)) * fnvPrime
			inWord = true
			continue
		}
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			flush()
			for _, b := range buf[:utf8.EncodeRune(buf[:], r)] {
				h = (h ^ uint64(b)) * fnvPrime
			}
			inWord = true
			flush()
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (inWord && unicode.IsMark(r)):
			for _, b := range buf[:utf8.EncodeRune(buf[:], unicode.ToLower(r))] {
				h = (h ^ uint64(b)) * fnvPrime
			}
			inWord = true
		default:
			flush()
		}
	}
	flush()
	return n
}
