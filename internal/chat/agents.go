package chat

import (
	"context"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// What agent kinds (internal/agent) share with Chatbot apps: the model, its parameters, the
// message's files, the naming of a new conversation, and the head of a simple prompt. The agent builds the rest of its prompt
// itself, since its history replays tool calls.

// Base is what an answer of a chat kind starts from.
type Base struct {
	Model llm.Model
	// Params are the app's completion parameters as sent upstream (llm.Params).
	Params map[string]any
	// Files are the rows recording the user's files.
	Files []store.MessageFile
	// Images loads the message's images for a vision model (none for another model), to
	// call inside the run.
	Images func(ctx context.Context) ([]providers.Part, error)
	// After names a new conversation after its first query when the request asks for it
	// (run.Job.After); nil otherwise.
	After func(ctx context.Context)
}

// Base resolves the app's model, its client and parameters, the message's files, and the naming
// of a new conversation.
func (s *Service) Base(ctx context.Context, t run.Turn) (Base, error) {
	a, err := s.prepare(ctx, t)
	if err != nil {
		return Base{}, err
	}
	b := Base{Model: a.m, Params: a.params, Files: messageFiles(a.atts),
		Images: func(ctx context.Context) ([]providers.Part, error) { return s.imageParts(ctx, a.m.Spec, a.atts) }}
	if t.NewConversation && t.AutoGenerateName {
		app, endUser, conv, query := t.App, t.EndUser.ID, t.Conversation.ID, t.Query
		b.After = func(ctx context.Context) { s.generateName(ctx, app, endUser, conv, a.m, query) }
	}
	return b, nil
}

// Head is the start of a simple chat prompt: the pre-prompt with the inputs filled in, as the
// system message, and the opening statement the user was shown.
func Head(app *apps.App, inputs map[string]any) []providers.Message {
	var head []providers.Message
	if sys := render(app.PrePrompt, inputs); sys != "" {
		head = append(head, providers.Message{Role: providers.RoleSystem, Content: sys})
	}
	if app.OpeningStatement != "" {
		head = append(head, providers.Message{Role: providers.RoleAssistant, Content: render(app.OpeningStatement, inputs)})
	}
	return head
}
