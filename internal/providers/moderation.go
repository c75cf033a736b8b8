package providers

import "context"

// Moderator classifies text with a moderation model (OpenAI's /moderations).
type Moderator interface {
	// Moderate reports, for each input in order, whether the model flagged it. It sends one
	// request: the caller splits long text and batches inputs by the model's limits.
	Moderate(ctx context.Context, model string, inputs []string) ([]bool, error)
}
