// Package conversations serves an end user's conversations with a chat app: listing, history,
// renaming, deleting, and feedback on messages. Everything is scoped to one app and one end
// user: another user's conversation or message is indistinguishable from one that does not exist.
package conversations

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// AnonymousUser is the end user of requests that name none, as in Dify.
const AnonymousUser = run.AnonymousUser

// Errors, each meaning one client-visible outcome.
var (
	ErrConversationNotFound = errors.New("conversation not found")
	ErrLastNotFound         = errors.New("last conversation not found")
	ErrMessageNotFound      = errors.New("message not found")
	ErrFirstNotFound        = errors.New("first message not found")
	ErrNoFeedback           = errors.New("no feedback to revoke")
	ErrNameRequired         = errors.New("name is required when auto_generate is false")
	ErrNoMessages           = errors.New("the conversation has no message to name it from")
	ErrSuggestDisabled      = errors.New("suggested questions are disabled")
)

// Store is what this package needs from storage; *store.Store implements it.
type Store interface {
	Conversation(ctx context.Context, appID, endUserID, id string) (store.Conversation, error)
	ListConversations(ctx context.Context, q store.ConversationQuery) ([]store.Conversation, bool, error)
	RenameConversation(ctx context.Context, appID, endUserID, id, name string) (store.Conversation, error)
	DeleteConversation(ctx context.Context, appID, endUserID, id string) error
	PinConversation(ctx context.Context, appID, endUserID, id string, pinned bool) error
	Message(ctx context.Context, appID, endUserID, id string) (store.Message, error)
	ListMessages(ctx context.Context, q store.MessageQuery) ([]store.Message, bool, error)
	FirstMessage(ctx context.Context, appID, endUserID, conversationID string) (store.Message, error)
	RecentMessages(ctx context.Context, conversationID string, n int) ([]store.Message, error)
	UpsertFeedback(ctx context.Context, f store.Feedback) (store.Feedback, error)
	DeleteFeedback(ctx context.Context, messageID string) error
	FeedbackForMessages(ctx context.Context, ids []string) (map[string]store.Feedback, error)
	ListAppFeedbacks(ctx context.Context, appID string, page, limit int) ([]store.Feedback, error)
	MessageFiles(ctx context.Context, messageIDs []string) (map[string][]store.MessageFile, error)
	AgentThoughts(ctx context.Context, messageIDs []string) (map[string][]store.AgentThought, error)
	ConversationVariables(ctx context.Context, conversationID string) ([]store.ConversationVariable, error)
	SaveConversationVariables(ctx context.Context, vs []store.ConversationVariable) error
}

// Generator is the model work some operations need; *chat.Service implements it.
type Generator interface {
	Title(ctx context.Context, app *apps.App, query string) (string, error)
	Suggest(ctx context.Context, app *apps.App, history []store.Message) []string
}

// EndUsers resolves the end user a request's `user` names (empty: the anonymous one);
// *run.Engine implements it.
type EndUsers interface {
	EndUser(ctx context.Context, appID, user string) (store.EndUser, error)
}

// Service serves conversations.
type Service struct {
	store Store
	gen   Generator
	users EndUsers
}

// New returns a Service.
func New(st Store, gen Generator, users EndUsers) *Service {
	return &Service{store: st, gen: gen, users: users}
}

func (s *Service) endUser(ctx context.Context, app *apps.App, user string) (store.EndUser, error) {
	return s.users.EndUser(ctx, app.ID, user)
}

// List returns a page of the user's conversations after lastID.
func (s *Service) List(ctx context.Context, app *apps.App, user, lastID string, limit int, sortBy string) ([]store.Conversation, bool, error) {
	return s.ListPinned(ctx, app, user, lastID, limit, sortBy, nil)
}

// ListPinned is List keeping, when pinned is set, only the pinned conversations (true) or
// only the others (false).
func (s *Service) ListPinned(ctx context.Context, app *apps.App, user, lastID string, limit int, sortBy string, pinned *bool) ([]store.Conversation, bool, error) {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return nil, false, err
	}
	items, more, err := s.store.ListConversations(ctx, store.ConversationQuery{
		AppID: app.ID, EndUserID: u.ID, LastID: strings.TrimSpace(lastID), Limit: limit, SortBy: sortBy, Pinned: pinned,
	})
	if errors.Is(err, store.ErrCursorNotFound) {
		return nil, false, ErrLastNotFound
	}
	return items, more, err
}

// Rename sets a conversation's name, or generates one from its first message.
func (s *Service) Rename(ctx context.Context, app *apps.App, user, id, name string, auto bool) (store.Conversation, error) {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return store.Conversation{}, err
	}
	conv, err := s.store.Conversation(ctx, app.ID, u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, ErrConversationNotFound
	}
	if err != nil {
		return store.Conversation{}, err
	}
	if auto {
		first, err := s.store.FirstMessage(ctx, app.ID, u.ID, conv.ID)
		if errors.Is(err, store.ErrNotFound) {
			return store.Conversation{}, ErrNoMessages
		}
		if err != nil {
			return store.Conversation{}, err
		}
		if name, err = s.gen.Title(ctx, app, first.Query); err != nil {
			return store.Conversation{}, err
		}
	} else if name = strings.TrimSpace(name); name == "" {
		return store.Conversation{}, ErrNameRequired
	}
	c, err := s.store.RenameConversation(ctx, app.ID, u.ID, conv.ID, name)
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, ErrConversationNotFound
	}
	return c, err
}

// Pin pins (pinned) or unpins a conversation of the user.
func (s *Service) Pin(ctx context.Context, app *apps.App, user, id string, pinned bool) error {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return err
	}
	err = s.store.PinConversation(ctx, app.ID, u.ID, id, pinned)
	if errors.Is(err, store.ErrNotFound) {
		return ErrConversationNotFound
	}
	return err
}

// Delete deletes a conversation.
func (s *Service) Delete(ctx context.Context, app *apps.App, user, id string) error {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return err
	}
	err = s.store.DeleteConversation(ctx, app.ID, u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return ErrConversationNotFound
	}
	return err
}

// HistoryMessage is a message with what history shows about it.
type HistoryMessage struct {
	store.Message
	Feedback *store.Feedback
	Files    []store.MessageFile
	// Thoughts are the steps of an agent's answer, in order.
	Thoughts []store.AgentThought
}

// Messages returns a page of a conversation's messages older than firstID, oldest first.
func (s *Service) Messages(ctx context.Context, app *apps.App, user, conversationID, firstID string, limit int) ([]HistoryMessage, bool, error) {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return nil, false, err
	}
	if _, err := s.store.Conversation(ctx, app.ID, u.ID, conversationID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, ErrConversationNotFound
		}
		return nil, false, err
	}
	msgs, more, err := s.store.ListMessages(ctx, store.MessageQuery{
		AppID: app.ID, EndUserID: u.ID, ConversationID: conversationID, FirstID: strings.TrimSpace(firstID), Limit: limit,
	})
	switch {
	case errors.Is(err, store.ErrCursorNotFound):
		return nil, false, ErrFirstNotFound
	case errors.Is(err, store.ErrNotFound):
		return nil, false, ErrConversationNotFound
	}
	if err != nil {
		return nil, false, err
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	fbs, err := s.store.FeedbackForMessages(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	files, err := s.store.MessageFiles(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	thoughts, err := s.store.AgentThoughts(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	out := make([]HistoryMessage, len(msgs))
	for i, m := range msgs {
		out[i] = HistoryMessage{Message: m, Files: files[m.ID], Thoughts: thoughts[m.ID]}
		if fb, ok := fbs[m.ID]; ok {
			out[i].Feedback = &fb
		}
	}
	return out, more, nil
}

// message finds a message of the user's.
func (s *Service) message(ctx context.Context, app *apps.App, u store.EndUser, id string) (store.Message, error) {
	m, err := s.store.Message(ctx, app.ID, u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Message{}, ErrMessageNotFound
	}
	return m, err
}

// MessageConversation is the conversation of the user's message of the app (ErrMessageNotFound
// when the user has no such message).
func (s *Service) MessageConversation(ctx context.Context, app *apps.App, user, messageID string) (string, error) {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return "", err
	}
	m, err := s.message(ctx, app, u, messageID)
	if err != nil {
		return "", err
	}
	return m.ConversationID, nil
}

// Feedback rates a message; a nil rating revokes the user's rating.
func (s *Service) Feedback(ctx context.Context, app *apps.App, user, messageID string, rating *string, content string) error {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return err
	}
	m, err := s.message(ctx, app, u, messageID)
	if err != nil {
		return err
	}
	if rating == nil {
		err := s.store.DeleteFeedback(ctx, m.ID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrNoFeedback
		}
		return err
	}
	_, err = s.store.UpsertFeedback(ctx, store.Feedback{
		AppID: app.ID, ConversationID: m.ConversationID, MessageID: m.ID, Rating: *rating,
		Content: content, FromSource: store.FeedbackFromUser, FromEndUserID: u.ID,
	})
	return err
}

// AppFeedbacks returns a page of all feedback on the app's messages, newest first.
func (s *Service) AppFeedbacks(ctx context.Context, app *apps.App, page, limit int) ([]store.Feedback, error) {
	return s.store.ListAppFeedbacks(ctx, app.ID, page, limit)
}

// suggestHistory is how many exchanges up to the message the suggestion prompt sees.
const suggestHistory = 3

// Suggested returns follow-up questions after a message of the user's.
func (s *Service) Suggested(ctx context.Context, app *apps.App, user, messageID string) ([]string, error) {
	if !app.SuggestedQuestionsAfterAnswer {
		return nil, ErrSuggestDisabled
	}
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return nil, err
	}
	m, err := s.message(ctx, app, u, messageID)
	if err != nil {
		return nil, err
	}
	recent, err := s.store.RecentMessages(ctx, m.ConversationID, 50)
	if err != nil {
		return nil, fmt.Errorf("conversations: history for suggestions: %w", err)
	}
	// The exchanges up to and including the message.
	end := len(recent)
	for i, r := range recent {
		if r.ID == m.ID {
			end = i + 1
		}
	}
	start := max(0, end-suggestHistory)
	return s.gen.Suggest(ctx, app, recent[start:end]), nil
}
