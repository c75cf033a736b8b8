package chat

import (
	"github.com/parleyhq/parley/internal/providers"
)

// withContext puts the knowledge context at the head of the system prompt, as Dify's chat
// prompt template does (context first, then the pre-prompt).
func withContext(prompt []providers.Message, context string) []providers.Message {
	if context == "" {
		return prompt
	}
	if len(prompt) > 0 && prompt[0].Role == providers.RoleSystem {
		out := append([]providers.Message(nil), prompt...)
		out[0].Content = context + "\n" + out[0].Content
		return out
	}
	return append([]providers.Message{{Role: providers.RoleSystem, Content: context}}, prompt...)
}
