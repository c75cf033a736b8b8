package chat

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
)

// titlePrompt asks for a title the way Dify's conversation title generator does: short, in the
// language of the user's message, nothing else.
const titlePrompt = `You name conversations. Read the user's first message below and reply with a title for ` +
	`the conversation: at most 8 words, in the same language as the message, with no quotes, no ` +
	`trailing punctuation and nothing but the title.`

// maxTitle is where a generated title is cut (Dify cuts at 75 characters and adds "...").
const maxTitle = 75

// nameTimeout bounds title generation.
const nameTimeout = 30 * time.Second

// Title asks the app's model for a conversation title from the conversation's first query.
func (s *Service) Title(ctx context.Context, app *apps.App, query string) (string, error) {
	spec, err := s.models.Lookup(models.TypeLLM, app.Model.Provider, app.Model.Name)
	if err != nil {
		return "", err
	}
	model, err := s.providers.ChatModel(spec)
	if err != nil {
		return "", err
	}
	return title(ctx, model, spec, query)
}

func title(ctx context.Context, model providers.ChatModel, spec models.ModelSpec, query string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, nameTimeout)
	defer cancel()
	resp, err := model.Chat(ctx, providers.ChatRequest{
		Model: spec.Name,
		// One user message with the instruction and the text: small local models follow that
		// more reliably than a system prompt.
		Messages: []providers.Message{
			{Role: providers.RoleUser, Content: titlePrompt + "\n\nThe message:\n" + query},
		},
		Parameters: map[string]any{"max_tokens": 32, "temperature": 0.2},
	})
	if err != nil {
		return "", err
	}
	return cleanTitle(resp.Content)
}

// cleanTitle trims what models add around a title and bounds its length.
func cleanTitle(s string) (string, error) {
	s = strings.TrimSpace(strings.SplitN(strings.TrimSpace(s), "\n", 2)[0])
	s = strings.Trim(s, "\"'`“”‘’*# ")
	s = strings.TrimRight(s, ".。")
	if s == "" {
		return "", errors.New("chat: the model gave an empty title")
	}
	if utf8.RuneCountInString(s) > maxTitle {
		r := []rune(s)
		s = string(r[:maxTitle]) + "..."
	}
	return s, nil
}

// generateName names a new conversation after its first exchange. It runs after the answer, so
// it never delays it; a failure leaves the default name. ctx ends at shutdown.
func (s *Service) generateName(ctx context.Context, app *apps.App, endUserID, conversationID string, spec models.ModelSpec, model providers.ChatModel, query string) {
	name, err := title(ctx, model, spec, query)
	if err != nil {
		s.log.WarnContext(ctx, "generate conversation name", "conversation_id", conversationID, "error", err)
		return
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.store.RenameConversation(saveCtx, app.ID, endUserID, conversationID, name); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.WarnContext(ctx, "save conversation name", "conversation_id", conversationID, "error", err)
	}
}
