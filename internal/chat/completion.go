package chat

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
)

// Completion is the runner of Completion apps (mode completion): text generation from the app's
// prompt and the request's inputs, one message at a time. There is no history and no
// conversation to name; the engine stores each message on its own (run.Kind.OneShot).
func (s *Service) Completion() run.Runner { return completion{s} }

type completion struct{ s *Service }

// Prepare implements run.Runner: the app's model and the message's files.
func (c completion) Prepare(ctx context.Context, t run.Turn) (run.Job, error) {
	s, app := c.s, t.App
	a, err := s.prepare(ctx, t)
	if err != nil {
		return run.Job{}, err
	}
	// An app with knowledge bases searches them with the value of its dataset query variable,
	// and, as in Dify, that value is then the query of the prompt too, in place of the
	// request's.
	query := t.Query
	if len(app.KnowledgeBases) > 0 && app.DatasetQueryVariable != "" {
		query = datasetQuery(app, t.Inputs)
	}
	if app.PromptType == apps.PromptAdvanced {
		if a.advanced, err = advancedCompletion(app, a.m.Spec, t.Inputs, query); err != nil {
			return run.Job{}, err
		}
	} else {
		a.completion = completionInput{app: app, inputs: t.Inputs, query: query}
	}
	if s.knowledge != nil && len(app.KnowledgeBases) > 0 && query != "" {
		a.retrieve = s.retriever(app, query)
	}
	return a.job(), nil
}

// completionInput is what a Completion's prompt is built from.
type completionInput struct {
	app    *apps.App
	inputs map[string]any
	query  string
}

// completionPrompt is a Completion app's prompt as Dify builds it for chat models: the knowledge
// context (if any) and the pre-prompt with its variables filled in make the system message, and
// the query is the user's message. Without a query — the usual case, the inputs carrying
// everything — that filled-in prompt is the user's message itself.
func completionPrompt(app *apps.App, inputs map[string]any, query, knowledgeContext string) []providers.Message {
	text := render(app.PrePrompt, inputs)
	if knowledgeContext != "" {
		if text != "" {
			text = knowledgeContext + "\n" + text
		} else {
			text = knowledgeContext
		}
	}
	if query == "" {
		return []providers.Message{{Role: providers.RoleUser, Content: text}}
	}
	msgs := make([]providers.Message, 0, 2)
	if text != "" {
		msgs = append(msgs, providers.Message{Role: providers.RoleSystem, Content: text})
	}
	return append(msgs, providers.Message{Role: providers.RoleUser, Content: query})
}

// datasetQuery is what a Completion app searches its knowledge bases with: the value of the
// input its config names (dataset_query_variable), as Dify does; a Completion has no
// conversation query to search with.
func datasetQuery(app *apps.App, inputs map[string]any) string {
	if app.DatasetQueryVariable == "" {
		return ""
	}
	switch v := inputs[app.DatasetQueryVariable].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}
