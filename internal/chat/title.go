package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/metrics"
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
	m, err := s.model(app)
	if err != nil {
		return "", err
	}
	return title(ctx, m, query)
}

func title(ctx context.Context, m llm.Model, query string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, nameTimeout)
	defer cancel()
	resp, err := m.Client.Chat(ctx, providers.ChatRequest{
		Model: m.Spec.Name,
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

// NameJobKind is the job kind of conversation naming; the payload is a nameJob in JSON.
const NameJobKind = "conversation.name"

type nameJob struct {
	AppID          string `json:"app_id"`
	EndUserID      string `json:"end_user_id"`
	ConversationID string `json:"conversation_id"`
	Query          string `json:"query"`
}

// generateName names a new conversation after its first exchange. It runs after the answer, so
// it never delays it; a failure leaves the default name. ctx ends at shutdown. With a job queue,
// the naming is queued as a durable job (run at once by this process's workers, or by another
// replica if this one dies first); if queuing fails, it is done here.
func (s *Service) generateName(ctx context.Context, app *apps.App, endUserID, conversationID string, m llm.Model, query string) {
	if s.jobs != nil && s.app != nil {
		payload, err := json.Marshal(nameJob{AppID: app.ID, EndUserID: endUserID, ConversationID: conversationID, Query: query})
		if err == nil {
			err = s.jobs.Enqueue(context.WithoutCancel(ctx), jobs.Job{Kind: NameJobKind, Payload: payload})
		}
		if err == nil {
			return
		}
		s.log.WarnContext(ctx, "queue conversation naming; naming here", "conversation_id", conversationID, "error", err)
	}
	s.name(ctx, app, endUserID, conversationID, m, query)
}

// HandleNameJob is the jobs.Handler of NameJobKind. Like naming in process, a model that fails
// leaves the default name (the job is not retried); an app or model gone meanwhile ends it.
func (s *Service) HandleNameJob(ctx context.Context, job jobs.Job) error {
	var p nameJob
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return fmt.Errorf("chat: naming job payload: %w", err)
	}
	app, err := s.app(ctx, p.AppID)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		s.log.WarnContext(ctx, "generate conversation name: app", "app_id", p.AppID, "conversation_id", p.ConversationID, "error", err)
		return nil
	}
	m, err := s.model(app)
	if err != nil {
		s.log.WarnContext(ctx, "generate conversation name: model", "conversation_id", p.ConversationID, "error", err)
		return nil
	}
	// The naming call's tokens and cost are the app's, as its answers' are.
	s.name(metrics.WithApp(ctx, app.Name), app, p.EndUserID, p.ConversationID, m, p.Query)
	return ctx.Err() // cut short by shutdown: the job goes back to the queue
}

// name asks the model for the conversation's name and stores it.
func (s *Service) name(ctx context.Context, app *apps.App, endUserID, conversationID string, m llm.Model, query string) {
	name, err := title(ctx, m, query)
	if err != nil {
		s.log.WarnContext(ctx, "generate conversation name", "conversation_id", conversationID, "error", err)
		return
	}
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.store.NameConversation(saveCtx, app.ID, endUserID, conversationID, name); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.WarnContext(ctx, "save conversation name", "conversation_id", conversationID, "error", err)
	}
}
