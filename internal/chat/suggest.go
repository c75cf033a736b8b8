package chat

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
)

// suggestPrompt asks for follow-up questions as Dify's suggested-questions generator does: three
// short questions the user might ask next, as a JSON array.
const suggestPrompt = `Given the conversation below, predict the three questions the user is most likely to ask ` +
	`next. Each question is at most 20 words, in the language of the conversation. Reply with a JSON ` +
	`array of three strings and nothing else.`

// Suggest returns up to three follow-up questions after a message. A model failure gives no
// questions and no error, as in Dify.
func (s *Service) Suggest(ctx context.Context, app *apps.App, history []store.Message) []string {
	m, err := s.model(app)
	if err != nil {
		return []string{}
	}
	var convo strings.Builder
	for _, m := range history {
		convo.WriteString("User: " + m.Query + "\n")
		if m.Answer != "" {
			convo.WriteString("Assistant: " + m.Answer + "\n")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, nameTimeout)
	defer cancel()
	resp, err := m.Client.Chat(ctx, providers.ChatRequest{
		Model: m.Spec.Name,
		Messages: []providers.Message{
			{Role: providers.RoleUser, Content: suggestPrompt + "\n\nThe conversation:\n" + convo.String()},
		},
		Parameters: map[string]any{"max_tokens": 256, "temperature": 0},
	})
	if err != nil {
		s.log.WarnContext(ctx, "suggest questions", "error", err)
		return []string{}
	}
	return parseQuestions(resp.Content)
}

// parseQuestions reads the JSON array in a model's reply, tolerating text around it.
func parseQuestions(reply string) []string {
	start, end := strings.Index(reply, "["), strings.LastIndex(reply, "]")
	if start < 0 || end <= start {
		return []string{}
	}
	var qs []string
	if err := json.Unmarshal([]byte(reply[start:end+1]), &qs); err != nil {
		return []string{}
	}
	out := make([]string, 0, 3)
	for _, q := range qs {
		if q = strings.TrimSpace(q); q != "" && len(out) < 3 {
			out = append(out, q)
		}
	}
	return out
}
