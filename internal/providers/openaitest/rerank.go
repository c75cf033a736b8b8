package openaitest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/parleyhq/parley/internal/tokens"
)

// DefaultRerankModel is the rerank model the server knows by default.
const DefaultRerankModel = "jina-reranker-v2-base-multilingual"

// rerankBody is a Jina/Cohere-style rerank request, the shape Dify's
// OpenAI-API-compatible rerank model sends (query, documents, top_n).
type rerankBody struct {
	Query           *string         `json:"query"`
	Documents       json.RawMessage `json:"documents"`
	TopN            *int            `json:"top_n"`
	ReturnDocuments bool            `json:"return_documents"`
}

type rerankResult struct {
	Index          int               `json:"index"`
	RelevanceScore float64           `json:"relevance_score"`
	Document       *rerankResultText `json:"document,omitempty"`
}

type rerankResultText struct {
	Text string `json:"text"`
}

// rerank scores each document by the share of the query's distinct words
// it contains, |q∩d|/|q| over lower-cased word sets (words as in
// [Embedding]), so a test can predict the order: ties keep input order.
// Scripted replies match the query or any document, and honour
// FirstByteDelay, Status/ErrorBody, Usage/NoUsage, CutAfterChunks (the
// connection drops before the body) and HangAfterChunks.
func (s *Server) rerank(w http.ResponseWriter, r *http.Request, req *Request) {
	var body rerankBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid rerank request: "+err.Error(), "invalid_request_error", "")
		return
	}
	if body.Query == nil || *body.Query == "" {
		writeError(w, http.StatusBadRequest, "'query' must be a non-empty string.", "invalid_request_error", "")
		return
	}
	docs, err := decodeDocuments(body.Documents)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error", "")
		return
	}
	topN := len(docs)
	if body.TopN != nil {
		if *body.TopN < 1 {
			writeError(w, http.StatusBadRequest, "'top_n' must be at least 1.", "invalid_request_error", "")
			return
		}
		topN = min(topN, *body.TopN)
	}
	query := *body.Query
	reply, ok := s.fault(w, r, append([]string{query}, docs...)...)
	if !ok {
		return
	}

	results := make([]rerankResult, len(docs))
	for i, d := range docs {
		results[i] = rerankResult{Index: i, RelevanceScore: Overlap(query, d)}
		if body.ReturnDocuments {
			results[i].Document = &rerankResultText{Text: d}
		}
	}
	slices.SortStableFunc(results, func(a, b rerankResult) int { return cmp.Compare(b.RelevanceScore, a.RelevanceScore) })
	out := map[string]any{"model": req.Model, "results": results[:topN]}
	switch {
	case reply.Usage != nil:
		out["usage"] = map[string]int{"prompt_tokens": reply.Usage.TotalTokens(), "total_tokens": reply.Usage.TotalTokens()}
	case !reply.NoUsage:
		// Each (query, document) pair goes through the cross-encoder.
		n := len(docs) * tokens.Count(query)
		for _, d := range docs {
			n += tokens.Count(d)
		}
		out["usage"] = map[string]int{"prompt_tokens": n, "total_tokens": n}
	}
	writeJSON(w, http.StatusOK, out)
}

// decodeDocuments accepts a non-empty array of strings or of {"text": …}
// objects (Jina accepts both).
func decodeDocuments(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("'documents' is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("'documents' must be an array: %v", err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("'documents' must not be empty")
	}
	docs := make([]string, len(items))
	for i, it := range items {
		var obj struct {
			Text *string `json:"text"`
		}
		switch {
		case json.Unmarshal(it, &docs[i]) == nil:
		case json.Unmarshal(it, &obj) == nil && obj.Text != nil:
			docs[i] = *obj.Text
		default:
			return nil, fmt.Errorf("documents[%d]: expected a string or an object with 'text'", i)
		}
	}
	return docs, nil
}

// Overlap is the fake reranker's relevance score of doc for query: the
// share of the query's distinct words (words as in [Embedding]) that doc
// contains, in [0, 1]; 0 when the query has no words.
func Overlap(query, doc string) float64 {
	q := map[uint64]bool{}
	forEachWord(query, func(h uint64) { q[h] = false })
	if len(q) == 0 {
		return 0
	}
	hit := 0
	forEachWord(doc, func(h uint64) {
		if seen, ok := q[h]; ok && !seen {
			q[h] = true
			hit++
		}
	})
	return float64(hit) / float64(len(q))
}
