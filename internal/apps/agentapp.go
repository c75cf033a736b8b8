package apps

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Errors of Agent apps (mode agent), before one runs.
var (
	// ErrNoBoundAgent: the Agent app has no active Agent bound to it.
	ErrNoBoundAgent = errors.New("the agent app has no bound agent")
	// ErrAgentNotPublished: the bound Agent has a draft but no published version.
	ErrAgentNotPublished = errors.New("the agent has not been published")
	// ErrQueryRequired: an Agent app's message needs a query that is not blank.
	ErrQueryRequired = errors.New("query is required")
)

// AgentConfig is the configuration of an Agent (Dify's "Agent Soul" with the agent's display
// metadata): what the draft holds and a published version freezes. Its JSON form is how both
// are stored. The fields reuse the app model's types; an Agent app runs as an app whose model,
// prompt, tools, knowledge bases, features and form come from the published AgentConfig.
type AgentConfig struct {
	// Name and the rest of the metadata are display only.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Role        string `json:"role,omitempty"`
	Icon        Icon   `json:"icon,omitzero"`

	// Model is the LLM the agent calls, with its settings as completion parameters.
	Model Model `json:"model,omitzero"`
	// SystemPrompt is the agent's instructions; it may reference inputs as {{variable}}.
	SystemPrompt string `json:"system_prompt,omitempty"`
	// Tools are the agent's tools (the DSL's dify_tools).
	Tools []Tool `json:"tools,omitempty"`
	// MaxIteration caps the tool rounds (0: the runner's default).
	MaxIteration int `json:"max_iteration,omitempty"`
	// KnowledgeBases names the Parley knowledge bases the agent has as retrieval tools.
	KnowledgeBases []string `json:"knowledge_bases,omitempty"`

	// OpeningStatement, SuggestedQuestions, SuggestedQuestionsAfterAnswer and Features are the
	// app features the agent carries (app_features).
	OpeningStatement              string   `json:"opening_statement,omitempty"`
	SuggestedQuestions            []string `json:"suggested_questions,omitempty"`
	SuggestedQuestionsAfterAnswer bool     `json:"suggested_questions_after_answer,omitempty"`
	Features                      Features `json:"features,omitzero"`
	// UserInputForm are the agent's input variables (app_variables).
	UserInputForm []InputField `json:"user_input_form,omitempty"`

	// Extra keeps what the DSL package held that this model does not, by the dotted path of the
	// mapping it was found in ("soul", "soul.tools", "metadata", …), for the export.
	Extra map[string]map[string]any `json:"extra,omitempty"`
}

// BoundAgent is the Agent an Agent app is bound to, as the registry loaded it.
type BoundAgent struct {
	ID string
	// Draft is the configuration being edited; the API never runs it.
	Draft *AgentConfig
	// Published is the active published version; nil until the agent is published.
	Published *AgentConfig
	// Version is the number of the published version (0 when none).
	Version int64
}

// EncodeAgentConfig is how an agent's draft and versions are stored.
func EncodeAgentConfig(c *AgentConfig) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("%w: agent: %w", ErrInvalid, err)
	}
	return string(b), nil
}

// DecodeAgentConfig reads a stored agent configuration.
func DecodeAgentConfig(s string) (*AgentConfig, error) {
	var c AgentConfig
	if err := decodeJSON(s, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// AgentRun is the app an Agent app's message runs: a copy of a whose model, prompt, tools,
// knowledge bases, features and input form are those of the bound Agent's published version.
// It refuses a blank query, an app without a bound agent and an agent never published, in the
// order Dify checks them. Apps of other modes are returned as they are.
func AgentRun(a *App, query string) (*App, error) {
	if a.Mode != ModeAgent {
		return a, nil
	}
	if strings.TrimSpace(query) == "" {
		return nil, ErrQueryRequired
	}
	return a.PublishedAgent()
}

// PublishedAgent is an Agent app as its bound Agent's published version makes it (see
// [AgentRun]), or ErrNoBoundAgent or ErrAgentNotPublished.
func (a *App) PublishedAgent() (*App, error) {
	switch {
	case a.Bound == nil:
		return nil, fmt.Errorf("app %s: %w", a.ID, ErrNoBoundAgent)
	case a.Bound.Published == nil:
		return nil, fmt.Errorf("app %s: %w", a.ID, ErrAgentNotPublished)
	}
	c := a.Bound.Published
	r := *a
	r.Model = c.Model
	r.PromptType, r.PrePrompt, r.ChatPrompt, r.CompletionPrompt = PromptSimple, c.SystemPrompt, nil, nil
	r.OpeningStatement, r.SuggestedQuestions = c.OpeningStatement, c.SuggestedQuestions
	r.SuggestedQuestionsAfterAnswer, r.Features = c.SuggestedQuestionsAfterAnswer, c.Features
	r.UserInputForm, r.KnowledgeBases = c.UserInputForm, c.KnowledgeBases
	// Agent apps never cite: their message_end has no retriever_resources.
	r.Features.RetrieverResource = Toggle{}
	// The strategy follows the model, as for a Legacy Agent without one: function calling when
	// it calls tools natively, ReAct otherwise.
	r.Agent = &Agent{Enabled: true, MaxIteration: c.MaxIteration, Tools: c.Tools}
	return &r, nil
}

// agentName is the name an agent is stored under: its own, or its app's.
func agentName(c *AgentConfig, app string) string {
	if c.Name != "" {
		return c.Name
	}
	return app
}
