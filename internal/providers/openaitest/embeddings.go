package openaitest

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"

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
	reply, _ := s.match(req.Input...)
	if !s.wait(r, reply.FirstByteDelay) {
		return
	}
	if reply.Status >= 400 || reply.ErrorBody != "" {
		writeReplyError(w, reply)
		return
	}
	if reply.CutAfterChunks > 0 {
		abort()
	}
	if reply.HangAfterChunks > 0 {
		s.hang(r)
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
	buf = appendString(buf, req.Model)
	buf = append(buf, `,"usage":{"prompt_tokens":`...)
	buf = strconv.AppendInt(buf, int64(promptTokens), 10)
	buf = append(buf, `,"total_tokens":`...)
	buf = strconv.AppendInt(buf, int64(promptTokens), 10)
	buf = append(buf, "}}"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}

// Embedding fills vec with the server's deterministic, unit-length
// embedding of text: a PRNG (splitmix64) seeded with the FNV-1a hash of
// text. Tests use it to predict vectors; equal texts give equal vectors,
// different texts near-orthogonal ones.
func Embedding(text string, vec []float32) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	state := h.Sum64()
	var norm float64
	for i := range vec {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		v := float64(z>>11)/(1<<53)*2 - 1
		vec[i] = float32(v)
		norm += v * v
	}
	if norm == 0 {
		return
	}
	inv := 1 / math.Sqrt(norm)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) * inv)
	}
}
