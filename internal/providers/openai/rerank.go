package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/parleyhq/parley/internal/providers"
)

// rerankBody is the Jina/Cohere-style request that Dify's
// OpenAI-API-compatible rerank model sends to <endpoint_url>/rerank, top_n
// included even when it is every document
// (langgenius/dify-official-plugins models/openai_api_compatible/models/rerank/rerank.py).
type rerankBody struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n,omitempty"`
}

type rerankResponse struct {
	// Results is nil when the member is missing: not a rerank response.
	Results []struct {
		Index *int `json:"index"`
		// RelevanceScore is Jina's and Cohere's name; Score is the one
		// Hugging Face TEI and some vLLM builds use.
		RelevanceScore *float64 `json:"relevance_score"`
		Score          *float64 `json:"score"`
	} `json:"results"`
	Usage *wireUsage `json:"usage"`
}

// Rerank implements providers.Reranker: one POST <BaseURL>/rerank. Results
// come back sorted by score, best first (ties in document order), and cut
// to topN: servers return them in any order, and some ignore top_n. Every
// result must name a distinct document index in range. No docs, no
// request.
func (c *Client) Rerank(ctx context.Context, model, query string, docs []string, topN int) ([]providers.RerankResult, *providers.Usage, error) {
	if len(docs) == 0 {
		return []providers.RerankResult{}, nil, nil
	}
	if topN <= 0 || topN > len(docs) {
		topN = len(docs)
	}
	body, err := json.Marshal(rerankBody{Model: model, Query: query, Documents: docs, TopN: topN})
	if err != nil {
		return nil, nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	x, err := c.post(ctx, c.rerankURL, body, false)
	if err != nil {
		return nil, nil, err
	}
	var resp rerankResponse
	if derr := json.NewDecoder(x).Decode(&resp); derr != nil {
		e := c.decodeError(x, derr)
		x.finish(false)
		return nil, nil, e
	}
	x.finish(true)
	invalid := func(format string, args ...any) error {
		return providers.NewError(c.name, providers.KindInvocation, http.StatusOK, "invalid rerank response", fmt.Errorf(format, args...))
	}
	if resp.Results == nil {
		return nil, nil, invalid("no results member")
	}
	if len(resp.Results) > len(docs) {
		return nil, nil, invalid("%d results for %d documents", len(resp.Results), len(docs))
	}
	seen := make([]bool, len(docs))
	out := make([]providers.RerankResult, len(resp.Results))
	for i, r := range resp.Results {
		score := cmp.Or(r.RelevanceScore, r.Score)
		switch {
		case r.Index == nil:
			return nil, nil, invalid("result %d has no index", i)
		case *r.Index < 0 || *r.Index >= len(docs):
			return nil, nil, invalid("result %d: index %d out of range [0,%d)", i, *r.Index, len(docs))
		case seen[*r.Index]:
			return nil, nil, invalid("result %d: document %d ranked twice", i, *r.Index)
		case score == nil:
			return nil, nil, invalid("result %d has no relevance_score", i)
		}
		seen[*r.Index] = true
		out[i] = providers.RerankResult{Index: *r.Index, Score: *score}
	}
	slices.SortFunc(out, func(a, b providers.RerankResult) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Index, b.Index))
	})
	return out[:min(topN, len(out))], resp.Usage.usage(), nil
}
