package run

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/providers"
)

// TestStoredError: a failed answer keeps the text the client was shown — a domain error's safe
// message, wrapped or not — and never an internal cause.
func TestStoredError(t *testing.T) {
	t.Parallel()
	provider := &providers.Error{Kind: providers.KindInvocation, Message: "[openai] Rate Limit Error"}
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"provider":         {provider, "[openai] Rate Limit Error"},
		"wrapped provider": {fmt.Errorf("chat: stream: %w", provider), "[openai] Rate Limit Error"},
		"knowledge":        {fmt.Errorf("retrieve: %w", knowledge.ErrNoEmbeddingModel), knowledge.ErrNoEmbeddingModel.SafeMessage()},
		"internal":         {fmt.Errorf("store: insert into messages at 10.0.0.7:5432: %w", errors.New("connection reset")), "Internal Server Error."},
	} {
		if got := storedError(tc.err); got != tc.want {
			t.Errorf("%s: storedError = %q, want %q", name, got, tc.want)
		}
	}
}
