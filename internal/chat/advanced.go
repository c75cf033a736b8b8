package chat

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
)

// Advanced prompts (prompt_type advanced) are run the way Dify's advanced prompt transform runs
// them for Chatbot and Completion apps; docs/apps.md spells the rules out. In short:
//
//   - a chat model gets the app's prompt messages, filled in, then (Chatbot) the conversation's
//     history, then the query as the last user message;
//   - a completion model gets the app's completion prompt, filled in with the history as text,
//     the query and the knowledge context, as one user message (Parley's providers all speak
//     the chat API).

// ErrNoPrompt is an advanced prompt without a template for the kind of model the app calls: a
// chat model needs chat_prompt_config, a completion model completion_prompt_config. Imports
// refuse such apps; it happens when the configured model changes its mode afterwards.
var ErrNoPrompt = errors.New("the app's advanced prompt has no template for its model")

// The placeholders the runtime fills in.
const (
	keyHistories = "#histories#"
	keyQuery     = "#query#"
	keyContext   = "#context#"
)

// controlTokens are <|…|> sequences (special tokens of some models), which Dify strips from a
// filled-in template.
var controlTokens = regexp.MustCompile(`<\|.*?\|>`)

// Dify's default labels of the turns of a history rendered as text.
const (
	defaultUserPrefix      = "Human"
	defaultAssistantPrefix = "Assistant"
)

// fill fills in a template as Dify's template parser does. A placeholder with a value becomes
// the value, with any placeholder written inside it defused to single braces ({{x}} → {x}), so
// that an input cannot smuggle in another variable; a placeholder without a value is defused
// the same way and stays as text. Control tokens are then removed from the whole.
func fill(tmpl string, values map[string]string) string {
	out := replacePlaceholders(tmpl, func(key, m string) string {
		v, ok := values[key]
		if !ok {
			v = m
		}
		return defuse(v)
	})
	if !strings.Contains(out, "<|") {
		return out
	}
	return controlTokens.ReplaceAllString(out, "")
}

// defuse turns every placeholder in s into its single-braced form.
func defuse(s string) string {
	return replacePlaceholders(s, func(key, _ string) string { return "{" + key + "}" })
}

// replacePlaceholders replaces each placeholder of s, left to right, by what repl returns for
// its key and its text. A placeholder is a variable of Dify's prompt templates: {{name}}, where
// name is a letter or underscore and at most 29 more letters, digits or underscores, or one of
// the three the runtime fills in, {{#histories#}}, {{#query#}} and {{#context#}}. (A scanner
// rather than a regular expression: it runs on every prompt message of every run.)
func replacePlaceholders(s string, repl func(key, m string) string) string {
	i := strings.Index(s, "{{")
	if i < 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for i+1 < len(s) {
		if s[i] != '{' || s[i+1] != '{' {
			i++
			continue
		}
		key, end, ok := placeholderAt(s, i)
		if !ok {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(repl(key, s[i:end]))
		last, i = end, end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// placeholderAt reads the placeholder whose "{{" is at s[i]: its key and where it ends.
func placeholderAt(s string, i int) (key string, end int, ok bool) {
	j := i + 2
	if j < len(s) && s[j] == '#' {
		for _, k := range [...]string{keyHistories, keyQuery, keyContext} {
			if strings.HasPrefix(s[j:], k) && strings.HasPrefix(s[j+len(k):], "}}") {
				return k, j + len(k) + 2, true
			}
		}
		return "", 0, false
	}
	k := j
	for k < len(s) && (s[k] == '_' || 'a' <= s[k] && s[k] <= 'z' || 'A' <= s[k] && s[k] <= 'Z' || k > j && '0' <= s[k] && s[k] <= '9') {
		k++
	}
	if n := k - j; n == 0 || n > 30 || !strings.HasPrefix(s[k:], "}}") {
		return "", 0, false
	}
	return s[j:k], k + 2, true
}

// templateValues are the app's inputs as the text they put in a template.
func templateValues(inputs map[string]any) map[string]string {
	out := make(map[string]string, len(inputs)+3)
	for k, v := range inputs {
		if strings.HasPrefix(k, "#") {
			continue // the runtime's own placeholders
		}
		switch x := v.(type) {
		case nil:
			out[k] = ""
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// completionModel reports whether the app's model takes text rather than messages: the app's
// own model mode, or the configured model's when the app does not say.
func completionModel(app *apps.App, spec models.ModelSpec) bool {
	mode := app.Model.Mode
	if mode == "" {
		mode = spec.Mode
	}
	return mode == config.ModelModeCompletion
}

// chatMessages are an advanced chat prompt's messages filled in from values. As in Dify, a
// system message left empty is dropped while user and assistant messages are kept even when
// empty, and tool messages are skipped.
func chatMessages(prompt []apps.PromptMessage, values map[string]string) []providers.Message {
	out := make([]providers.Message, 0, len(prompt))
	for _, m := range prompt {
		text := fill(m.Text, values)
		switch m.Role {
		case providers.RoleSystem:
			if text != "" {
				out = append(out, providers.Message{Role: providers.RoleSystem, Content: text})
			}
		case providers.RoleUser, providers.RoleAssistant:
			out = append(out, providers.Message{Role: m.Role, Content: text})
		}
	}
	return out
}

// advancedHead is an advanced chat prompt's messages before the history, as buildPrompt sizes
// the history against them: inputs filled in, the knowledge context not known yet.
func advancedHead(app *apps.App, inputs map[string]any) []providers.Message {
	values := templateValues(inputs)
	values[keyContext] = ""
	return chatMessages(app.ChatPrompt, values)
}

// historyText is the history as a completion prompt's {{#histories#}} takes it: one
// "prefix: text" line per turn.
func historyText(turns []providers.Message, userPrefix, assistantPrefix string) string {
	if userPrefix == "" {
		userPrefix = defaultUserPrefix
	}
	if assistantPrefix == "" {
		assistantPrefix = defaultAssistantPrefix
	}
	lines := make([]string, 0, len(turns))
	for _, m := range turns {
		switch m.Role {
		case providers.RoleUser:
			lines = append(lines, userPrefix+": "+m.Text())
		case providers.RoleAssistant:
			lines = append(lines, assistantPrefix+": "+m.Text())
		}
	}
	return strings.Join(lines, "\n")
}

// advancedPrompt is an advanced prompt prepared for one run, waiting for the knowledge context,
// which the run retrieves later.
type advancedPrompt struct {
	app        *apps.App
	values     map[string]string
	query      string
	completion bool
	// memory: the run continues a conversation, whose history fills {{#histories#}} (Dify
	// gives a prompt the conversation's memory only then; a Completion has none).
	memory    bool
	histories string
	// tail follows a chat model's prompt messages: the history kept and the query.
	tail []providers.Message
}

// newAdvanced checks that the app has the template its model needs.
func newAdvanced(app *apps.App, spec models.ModelSpec, inputs map[string]any, query string) (*advancedPrompt, error) {
	p := &advancedPrompt{app: app, values: templateValues(inputs), query: query, completion: completionModel(app, spec)}
	switch {
	case p.completion && (app.CompletionPrompt == nil || app.CompletionPrompt.Text == ""):
		return nil, fmt.Errorf("%w: %s is a completion model, and the app has no completion prompt", ErrNoPrompt, spec.Name)
	case !p.completion && len(app.ChatPrompt) == 0:
		return nil, fmt.Errorf("%w: %s is a chat model, and the app has no chat prompt messages", ErrNoPrompt, spec.Name)
	}
	return p, nil
}

// advancedChatbot prepares a Chatbot's advanced prompt. The history is chosen now, by the rules
// of the simple prompt (buildPrompt): as many of the newest exchanges as fit the model's context
// beside the prompt and the answer.
func advancedChatbot(app *apps.App, spec models.ModelSpec, inputs map[string]any, history []store.Message, newConversation bool, query string) (*advancedPrompt, error) {
	p, err := newAdvanced(app, spec, inputs, query)
	if err != nil {
		return nil, err
	}
	p.memory = !newConversation
	if !p.completion {
		// buildPrompt puts the history between the prompt messages and the query.
		all := buildPrompt(app, spec, inputs, history, query)
		p.tail = all[len(advancedHead(app, inputs)):]
		return p, nil
	}
	if p.memory {
		// The history is sized against the prompt filled in without it (and without the
		// knowledge context, as for the simple prompt), sent as the query is.
		probe := p.completionText("", "")
		fit := buildPrompt(&apps.App{Model: app.Model}, spec, nil, history, probe)
		cp := app.CompletionPrompt
		p.histories = historyText(fit[:len(fit)-1], cp.UserPrefix, cp.AssistantPrefix)
	}
	return p, nil
}

// advancedCompletion prepares a Completion app's advanced prompt: no conversation, so no
// history.
func advancedCompletion(app *apps.App, spec models.ModelSpec, inputs map[string]any, query string) (*advancedPrompt, error) {
	p, err := newAdvanced(app, spec, inputs, query)
	if err != nil {
		return nil, err
	}
	if !p.completion && query != "" {
		p.tail = []providers.Message{{Role: providers.RoleUser, Content: query}}
	}
	return p, nil
}

// completionText is the completion prompt filled in. {{#context#}} is the knowledge context
// (empty without one); {{#histories#}} is filled only with memory and {{#query#}} only with a
// query, so that without them they stay as text, defused, as Dify leaves them.
func (p *advancedPrompt) completionText(knowledgeContext, histories string) string {
	values := make(map[string]string, len(p.values)+3)
	for k, v := range p.values {
		values[k] = v
	}
	values[keyContext] = knowledgeContext
	if p.memory {
		values[keyHistories] = histories
	}
	if p.query != "" {
		values[keyQuery] = p.query
	}
	return fill(p.app.CompletionPrompt.Text, values)
}

// messages are the messages sent to the model, with the knowledge context retrieved for the
// run (empty without one) in place of {{#context#}}.
func (p *advancedPrompt) messages(knowledgeContext string) []providers.Message {
	if p.completion {
		return []providers.Message{{Role: providers.RoleUser, Content: p.completionText(knowledgeContext, p.histories)}}
	}
	values := make(map[string]string, len(p.values)+1)
	for k, v := range p.values {
		values[k] = v
	}
	values[keyContext] = knowledgeContext
	head := chatMessages(p.app.ChatPrompt, values)
	return append(head, p.tail...)
}
