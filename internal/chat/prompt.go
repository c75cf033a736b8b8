package chat

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/llm"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
)

// variable matches {{name}} in a pre-prompt, as Dify's prompt template parser does.
var variable = regexp.MustCompile(`\{\{([a-zA-Z_][a-zA-Z0-9_]{0,29})\}\}`)

// render fills {{name}} from inputs; a name with no input stays as written.
func render(tmpl string, inputs map[string]any) string {
	return variable.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, ok := inputs[m[2:len(m)-2]]
		if !ok {
			return m
		}
		switch x := v.(type) {
		case string:
			return x
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return fmt.Sprint(x)
		}
	})
}

// defaultReply is the completion budget kept free when neither the app nor the model says how
// long an answer may be.
const defaultReply = 1024

// ReplyBudget is how many tokens of the model's context an app's answer may need: the app's
// max_tokens, else the model's output cap, else a default share of the context. An agent's
// prompt keeps it free too.
func ReplyBudget(app *apps.App, spec models.ModelSpec) int {
	if n, ok := llm.IntParam(app.Model.Parameters["max_tokens"]); ok {
		return n
	}
	if spec.MaxOutputTokens > 0 {
		return spec.MaxOutputTokens
	}
	return min(defaultReply, spec.ContextSize/4)
}

// buildPrompt assembles the messages sent to the model: the pre-prompt with its variables
// filled in, the opening statement the user was shown, as much of the conversation's history as
// fits the model's context (oldest exchanges dropped first), and the query. An advanced prompt's
// messages take the place of the pre-prompt and the opening statement (advanced.go).
func buildPrompt(app *apps.App, spec models.ModelSpec, inputs map[string]any, history []store.Message, query string) []providers.Message {
	var head []providers.Message
	if app.PromptType == apps.PromptAdvanced {
		head = advancedHead(app, inputs)
	} else {
		if sys := render(app.PrePrompt, inputs); sys != "" {
			head = append(head, providers.Message{Role: providers.RoleSystem, Content: sys})
		}
		if app.OpeningStatement != "" {
			head = append(head, providers.Message{Role: providers.RoleAssistant, Content: render(app.OpeningStatement, inputs)})
		}
	}
	last := providers.Message{Role: providers.RoleUser, Content: query}

	budget := spec.ContextSize - ReplyBudget(app, spec)
	msgs := make([]providers.Message, 0, len(head)+2*len(history)+1)
	msgs = append(msgs, head...)
	// A prompt whose bytes fit the budget fits in tokens (llm.UpperBound): the common case
	// needs no tokenizer.
	if llm.UpperBound(head)+historyBound(history)+llm.UpperBound([]providers.Message{last}) <= budget {
		for _, m := range history {
			msgs = appendExchange(msgs, m)
		}
		return append(msgs, last)
	}
	// The counter remembers the texts it has counted, so an exchange is tokenized once, on the
	// first turn that needs it, not again on every later turn of the conversation.
	budget -= tokens.CountMessages(append(head, last))
	// history is oldest → newest; keep the newest exchanges that fit.
	keep := len(history)
	var pair [2]providers.Message
	for i := len(history) - 1; i >= 0; i-- {
		cost := tokens.CountMessages(appendExchange(pair[:0], history[i]))
		if cost > budget {
			break
		}
		budget -= cost
		keep = i
	}
	for _, m := range history[keep:] {
		msgs = appendExchange(msgs, m)
	}
	return append(msgs, last)
}

// historyBound is more than the tokens the exchanges can take (llm.UpperBound for history).
func historyBound(ms []store.Message) int {
	n := 3
	for _, m := range ms {
		n += len(m.Query) + len(m.Answer) + 2*llm.MessageOverhead
	}
	return n
}

// appendExchange appends an earlier message to msgs as the user's query and the assistant's
// answer.
func appendExchange(msgs []providers.Message, m store.Message) []providers.Message {
	msgs = append(msgs, providers.Message{Role: providers.RoleUser, Content: m.Query})
	if m.Answer != "" {
		msgs = append(msgs, providers.Message{Role: providers.RoleAssistant, Content: m.Answer})
	}
	return msgs
}
