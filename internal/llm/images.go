package llm

import "github.com/parleyhq/parley/internal/providers"

// WithImages puts images in the prompt's last user message, after its text. A prompt that does
// not end with one (an advanced prompt without a query) gets an empty user message to carry
// them, as in Dify.
func WithImages(prompt []providers.Message, images []providers.Part) []providers.Message {
	if len(prompt) == 0 || prompt[len(prompt)-1].Role != providers.RoleUser {
		prompt = append(prompt, providers.Message{Role: providers.RoleUser})
	}
	last := &prompt[len(prompt)-1]
	last.Parts = append([]providers.Part{{Type: providers.PartText, Text: last.Content}}, images...)
	return prompt
}
