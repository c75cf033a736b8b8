package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"context"

	"github.com/parleyhq/parley/internal/providers"
)

var _ providers.Moderator = (*Client)(nil)

// moderationBody is OpenAI's moderation request: the inputs as an array of strings.
type moderationBody struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type moderationResponse struct {
	// Results is nil when the member is missing: not a moderation response.
	Results []struct {
		Flagged *bool `json:"flagged"`
	} `json:"results"`
}

// moderationURL is <BaseURL>/moderations, beside chat/completions (Azure's api-version query
// kept).
func (c *Client) moderationURL() (string, error) {
	if c.urlErr != nil {
		return "", c.urlErr
	}
	u, err := url.Parse(c.chatURL)
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(u.Path, "chat/completions") + "moderations"
	u.RawPath = ""
	return u.String(), nil
}

// Moderate implements providers.Moderator: one POST <BaseURL>/moderations with every input.
// Every input must get a result with a flagged member; no inputs, no request.
func (c *Client) Moderate(ctx context.Context, model string, inputs []string) ([]bool, error) {
	if len(inputs) == 0 {
		return []bool{}, nil
	}
	endpoint, err := c.moderationURL()
	if err != nil {
		return nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid base URL", err)
	}
	body, err := json.Marshal(moderationBody{Model: model, Input: inputs})
	if err != nil {
		return nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	x, err := c.post(ctx, endpoint, body, false)
	if err != nil {
		return nil, err
	}
	var resp moderationResponse
	if derr := json.NewDecoder(x).Decode(&resp); derr != nil {
		e := c.decodeError(x, derr)
		x.finish(false)
		return nil, e
	}
	x.finish(true)
	invalid := func(format string, args ...any) error {
		return providers.NewError(c.name, providers.KindInvocation, http.StatusOK, "invalid moderation response", fmt.Errorf(format, args...))
	}
	if resp.Results == nil {
		return nil, invalid("no results member")
	}
	if len(resp.Results) != len(inputs) {
		return nil, invalid("%d results for %d inputs", len(resp.Results), len(inputs))
	}
	out := make([]bool, len(inputs))
	for i, r := range resp.Results {
		if r.Flagged == nil {
			return nil, invalid("result %d has no flagged member", i)
		}
		out[i] = *r.Flagged
	}
	return out, nil
}
