package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/parleyhq/parley/internal/providers"
)

// Embed implements providers.Embedder: one POST <BaseURL>/embeddings with
// all inputs (the caller batches by the model's max_chunks). Vectors are
// returned in input order, placed by each item's "index"; servers that
// omit the index are assumed to answer in order. No inputs, no request.
func (c *Client) Embed(ctx context.Context, model string, inputs []string) ([][]float32, *providers.Usage, error) {
	if len(inputs) == 0 {
		return [][]float32{}, nil, nil
	}
	body, err := json.Marshal(embedBody{Model: model, Input: inputs})
	if err != nil {
		return nil, nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	x, err := c.post(ctx, c.embedURL, body, false)
	if err != nil {
		return nil, nil, err
	}
	var resp embedResponse
	if derr := json.NewDecoder(x).Decode(&resp); derr != nil {
		e := c.decodeError(x, derr)
		x.finish(false)
		return nil, nil, e
	}
	x.finish(true)
	if len(resp.Data) != len(inputs) {
		return nil, nil, providers.NewError(c.name, providers.KindInvocation, http.StatusOK, "invalid embeddings response",
			fmt.Errorf("%d embeddings for %d inputs", len(resp.Data), len(inputs)))
	}
	out := make([][]float32, len(inputs))
	byIndex := true
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(out) || out[d.Index] != nil {
			byIndex = false
			break
		}
		out[d.Index] = d.Embedding
	}
	if !byIndex {
		for i, d := range resp.Data {
			out[i] = d.Embedding
		}
	}
	for i, v := range out {
		if len(v) == 0 {
			return nil, nil, providers.NewError(c.name, providers.KindInvocation, http.StatusOK, "invalid embeddings response",
				fmt.Errorf("empty embedding for input %d", i))
		}
	}
	return out, resp.Usage.usage(), nil
}
