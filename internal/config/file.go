package config

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// File is the YAML configuration file: the workspace, its model providers,
// apps and knowledge bases. [ParseFile] returns it with defaults applied
// and all cross references checked.
type File struct {
	// Workspace describes the single workspace this server hosts.
	Workspace Workspace `yaml:"workspace"`
	// Providers are the model providers, in the order the API lists them.
	Providers []Provider `yaml:"providers"`
	// Apps are the apps served through the Service API.
	Apps []App `yaml:"apps"`
	// KnowledgeBases are the declared knowledge bases (datasets).
	KnowledgeBases []KnowledgeBase `yaml:"knowledge_bases"`
}

// Workspace describes the workspace (Dify's tenant).
type Workspace struct {
	// Name is the display name; defaults to DefaultWorkspaceName.
	Name string `yaml:"name"`
}

// DefaultWorkspaceName is used when workspace.name is empty.
const DefaultWorkspaceName = "Parley"

// I18n is a locale → text map such as {en_US: OpenAI, zh_Hans: OpenAI}, the
// shape of Dify's I18nObject. In YAML a plain string is accepted as a
// shorthand for {en_US: <string>}.
type I18n map[string]string

// Locales that Dify always fills in.
const (
	LocaleEnUS   = "en_US"
	LocaleZhHans = "zh_Hans"
)

// UnmarshalYAML accepts either a mapping or a single string (taken as en_US).
func (l *I18n) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = I18n{LocaleEnUS: n.Value}
		return nil
	}
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	*l = m
	return nil
}

// WithFallback returns a copy of l in which en_US defaults to def and
// zh_Hans defaults to en_US, as Dify's I18nObject does. Blank values count
// as missing.
func (l I18n) WithFallback(def string) I18n {
	out := make(I18n, len(l)+2)
	for k, v := range l {
		if strings.TrimSpace(v) != "" {
			out[k] = v
		}
	}
	if out[LocaleEnUS] == "" {
		out[LocaleEnUS] = def
	}
	if out[LocaleZhHans] == "" {
		out[LocaleZhHans] = out[LocaleEnUS]
	}
	return out
}

// ProviderTypeOpenAICompatible is the only provider protocol for now: any
// server that speaks OpenAI's /chat/completions and /embeddings.
const ProviderTypeOpenAICompatible = "openai-compatible"

// DefaultProviderTimeout is the per-request timeout of a provider when
// timeout is not set.
const DefaultProviderTimeout = 60 * time.Second

// Provider is one upstream model provider.
type Provider struct {
	// Name is the unique provider id shown by the API (e.g. "openai" or
	// "langgenius/openai/openai").
	Name string `yaml:"name"`
	// Type is the wire protocol; only ProviderTypeOpenAICompatible (the
	// default) is supported.
	Type string `yaml:"type"`
	// Label is the display name; en_US defaults to Name, zh_Hans to en_US.
	Label I18n `yaml:"label"`
	// IconSmall maps locales to absolute icon URLs; empty when unset.
	IconSmall I18n `yaml:"icon_small"`
	// IconSmallDark maps locales to absolute dark-theme icon URLs; nil when
	// unset.
	IconSmallDark I18n `yaml:"icon_small_dark"`
	// BaseURL is the API root, e.g. https://api.openai.com/v1, without a
	// trailing slash.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable that holds the API key. The
	// key itself is never written in the file.
	APIKeyEnv string `yaml:"api_key_env"`
	// RequiresAPIKey is true (the default) when the provider is unusable
	// without a key; local servers such as Ollama or vLLM set it false.
	RequiresAPIKey bool `yaml:"requires_api_key"`
	// Timeout bounds one upstream request; defaults to 60s.
	Timeout time.Duration `yaml:"timeout"`
	// CallTimeout caps the whole of one model call, a stream included; 0 (the default) means
	// the process setting PARLEY_MODEL_CALL_TIMEOUT.
	CallTimeout time.Duration `yaml:"call_timeout"`
	// Models are the models this provider offers, in listing order.
	Models []Model `yaml:"models"`
}

// UnmarshalYAML applies the defaults of fields whose zero value is a
// legitimate setting (requires_api_key: false) before decoding.
func (p *Provider) UnmarshalYAML(n *yaml.Node) error {
	type plain Provider
	v := plain{Type: ProviderTypeOpenAICompatible, RequiresAPIKey: true, Timeout: DefaultProviderTimeout}
	if err := n.Decode(&v); err != nil {
		return err
	}
	*p = Provider(v)
	return nil
}

// APIKey reads the provider's API key from the environment variable named
// by APIKeyEnv, trimming surrounding white space. It is empty when
// APIKeyEnv is empty or the variable is unset.
func (p Provider) APIKey(getenv func(string) string) string {
	if p.APIKeyEnv == "" || getenv == nil {
		return ""
	}
	return strings.TrimSpace(getenv(p.APIKeyEnv))
}

// Configured reports whether the provider's configuration is complete: it
// needs no key, or its key variable is set and non-empty. Like Dify, only
// configured providers are listed and usable.
func (p Provider) Configured(getenv func(string) string) bool {
	return !p.RequiresAPIKey || p.APIKey(getenv) != ""
}

// Problem says why the provider is not usable and what to set, or "" when it is configured
// (see Configured).
func (p Provider) Problem(getenv func(string) string) string {
	switch {
	case p.Configured(getenv):
		return ""
	case p.APIKeyEnv == "":
		return "it requires an API key but its api_key_env names no variable: set api_key_env in the config file " +
			"to the environment variable that holds the key, or requires_api_key: false for a server that needs none"
	default:
		return fmt.Sprintf("its API key variable %s is not set: set the environment variable %s to the provider's API key "+
			"(or requires_api_key: false in the config file for a server that needs none)", p.APIKeyEnv, p.APIKeyEnv)
	}
}

// Model returns the model of the given type and name.
func (p Provider) Model(modelType, name string) (Model, bool) {
	for _, m := range p.Models {
		if m.Type == modelType && m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// Model types (Dify's ModelType values, used verbatim in the API path).
const (
	ModelTypeLLM           = "llm"
	ModelTypeTextEmbedding = "text-embedding"
	ModelTypeRerank        = "rerank"
	ModelTypeTTS           = "tts"
	ModelTypeSpeech2Text   = "speech2text"
	ModelTypeModeration    = "moderation"
)

// ModelTypes lists the accepted model types in Dify's order.
func ModelTypes() []string {
	return []string{ModelTypeLLM, ModelTypeTextEmbedding, ModelTypeRerank,
		ModelTypeTTS, ModelTypeSpeech2Text, ModelTypeModeration}
}

// LLM modes (model_properties.mode).
const (
	ModelModeChat       = "chat"
	ModelModeCompletion = "completion"
)

// Model features (Dify's ModelFeature values).
const (
	FeatureToolCall         = "tool-call"
	FeatureMultiToolCall    = "multi-tool-call"
	FeatureAgentThought     = "agent-thought"
	FeatureStreamToolCall   = "stream-tool-call"
	FeatureVision           = "vision"
	FeatureDocument         = "document"
	FeatureVideo            = "video"
	FeatureAudio            = "audio"
	FeatureStructuredOutput = "structured-output"
)

// ModelFeatures lists the accepted feature names.
func ModelFeatures() []string {
	return []string{FeatureToolCall, FeatureMultiToolCall, FeatureAgentThought,
		FeatureStreamToolCall, FeatureVision, FeatureDocument, FeatureVideo,
		FeatureAudio, FeatureStructuredOutput}
}

// Model is one model offered by a provider.
type Model struct {
	// Name is the upstream model id, sent as "model" to the provider.
	Name string `yaml:"name"`
	// Label is the display name; en_US defaults to Name, zh_Hans to en_US.
	Label I18n `yaml:"label"`
	// Type is one of the ModelType* constants.
	Type string `yaml:"type"`
	// ContextSize is the context window in tokens; required for llm and
	// text-embedding, optional (0 = unset) otherwise.
	ContextSize int `yaml:"context_size"`
	// MaxChunks is the maximum number of texts per embedding request
	// (text-embedding only; 0 = unset).
	MaxChunks int `yaml:"max_chunks"`
	// Mode is ModelModeChat (default) or ModelModeCompletion; llm only.
	Mode string `yaml:"mode"`
	// Features are ModelFeature names (Feature* constants).
	Features []string `yaml:"features"`
	// Pricing is nil when the model is free or the price is unknown.
	Pricing *Pricing `yaml:"pricing"`
	// Deprecated models still work for apps that use them but are not
	// listed.
	Deprecated bool `yaml:"deprecated"`
	// Enabled is true by default; disabled models are neither listed nor
	// usable.
	Enabled bool `yaml:"enabled"`
	// MaxOutputTokens caps completion tokens (llm only; 0 = unset).
	MaxOutputTokens int `yaml:"max_output_tokens"`
}

// UnmarshalYAML defaults enabled to true before decoding.
func (m *Model) UnmarshalYAML(n *yaml.Node) error {
	type plain Model
	v := plain{Enabled: true}
	if err := n.Decode(&v); err != nil {
		return err
	}
	*m = Model(v)
	return nil
}

// Pricing is Dify's PriceConfig. Prices are decimal strings so that they
// reach usage records without floating-point rounding: the cost of n tokens
// is n × Input × Unit.
type Pricing struct {
	// Input is the price of prompt tokens per Unit, e.g. "0.15".
	Input string `yaml:"input"`
	// Output is the price of completion tokens per Unit; empty for models
	// without output tokens (embeddings).
	Output string `yaml:"output"`
	// Unit is the token multiplier: "0.000001" means prices are per 1M
	// tokens. After parsing it is always set, also when Per was used.
	Unit string `yaml:"unit"`
	// Per is a shorthand for Unit: "1k" (Unit "0.001") or "1m" (Unit
	// "0.000001"). Use either Unit or Per.
	Per string `yaml:"per"`
	// Currency is an ISO-style code such as USD (the default) or RMB.
	Currency string `yaml:"currency"`
}

// DefaultCurrency is the pricing currency when none is set.
const DefaultCurrency = "USD"

// App modes (Dify's AppMode values).
const (
	AppModeChat         = "chat"
	AppModeAgentChat    = "agent-chat"
	AppModeAgent        = "agent"
	AppModeAdvancedChat = "advanced-chat"
	AppModeCompletion   = "completion"
	AppModeWorkflow     = "workflow"
)

// AppModes lists the accepted app modes.
func AppModes() []string {
	return []string{AppModeChat, AppModeAgentChat, AppModeAgent,
		AppModeAdvancedChat, AppModeCompletion, AppModeWorkflow}
}

// App is one app served through the Service API.
type App struct {
	// Name is the unique app id, matching [a-z0-9][a-z0-9_-]*.
	Name string `yaml:"name"`
	// Mode is one of the AppMode* constants.
	Mode string `yaml:"mode"`
	// Description is shown by GET /info.
	Description string `yaml:"description"`
	// Enabled is true by default; a disabled app rejects requests.
	Enabled bool `yaml:"enabled"`
	// Model is the LLM the app calls. Required for chat, agent-chat, agent
	// and completion apps; optional for advanced-chat and workflow.
	Model AppModel `yaml:"model"`
	// PrePrompt is the system prompt (Dify's pre_prompt); it may reference
	// inputs as {{variable}}.
	PrePrompt string `yaml:"pre_prompt"`
	// OpeningStatement is returned by GET /parameters.
	OpeningStatement string `yaml:"opening_statement"`
	// SuggestedQuestions are returned by GET /parameters.
	SuggestedQuestions []string `yaml:"suggested_questions"`
	// SuggestedQuestionsAfterAnswer enables follow-up suggestions.
	SuggestedQuestionsAfterAnswer bool `yaml:"suggested_questions_after_answer"`
	// UserInputForm declares the app's inputs.
	UserInputForm []InputField `yaml:"user_input_form"`
	// MaxActiveRequests is the app's concurrency limit (0 = use
	// APP_DEFAULT_ACTIVE_REQUESTS); see Config.MaxActiveRequests.
	MaxActiveRequests int `yaml:"max_active_requests"`
	// RateLimits are the app's rate limits, whatever key calls it (docs/limits.md).
	RateLimits RateLimits `yaml:"rate_limits"`
	// Site sets the app's web page (docs/web-pages.md); what it sets wins over the app's DSL
	// and `parley apps site`. Nil: nothing set.
	Site *AppSite `yaml:"site"`
	// KnowledgeBases names the knowledge bases the app retrieves from.
	KnowledgeBases []string `yaml:"knowledge_bases"`
	// DatasetQueryVariable names the input whose value a completion app searches its
	// knowledge bases with (Dify's dataset_query_variable); required for completion apps with
	// knowledge bases, which have no conversation to take a query from.
	DatasetQueryVariable string `yaml:"dataset_query_variable"`
	// SpeechToText lets clients transcribe speech for the app (POST /audio-to-text).
	SpeechToText AppSpeechToText `yaml:"speech_to_text"`
	// TextToSpeech reads the app's answers aloud (POST /text-to-audio; with auto_play
	// "enabled", streamed answers carry tts_message events).
	TextToSpeech AppTextToSpeech `yaml:"text_to_speech"`
}

// AppSpeechToText is an app's speech-to-text switch.
type AppSpeechToText struct {
	Enabled bool `yaml:"enabled"`
}

// AppTextToSpeech is an app's text-to-speech setting, as Dify's feature has it.
type AppTextToSpeech struct {
	Enabled bool `yaml:"enabled"`
	// Voice is the tts model's voice (default: the model's first, alloy).
	Voice string `yaml:"voice"`
	// Language is shown by GET /parameters.
	Language string `yaml:"language"`
	// AutoPlay is "enabled" or "disabled" (default).
	AutoPlay string `yaml:"auto_play"`
}

// UnmarshalYAML defaults enabled to true before decoding.
func (a *App) UnmarshalYAML(n *yaml.Node) error {
	type plain App
	v := plain{Enabled: true}
	if err := n.Decode(&v); err != nil {
		return err
	}
	*a = App(v)
	return nil
}

// HasModel reports whether the app declares a model.
func (a App) HasModel() bool { return a.Model.Provider != "" || a.Model.Name != "" }

// AppModel selects an LLM and its completion parameters.
type AppModel struct {
	// Provider is the name of a declared provider.
	Provider string `yaml:"provider"`
	// Name is an llm model of that provider.
	Name string `yaml:"name"`
	// Parameters are completion parameters passed to the model
	// (temperature, top_p, max_tokens, stop, …); never nil after parsing.
	Parameters map[string]any `yaml:"parameters"`
}

// Input field types of user_input_form.
const (
	InputText      = "text-input"
	InputParagraph = "paragraph"
	InputSelect    = "select"
	InputNumber    = "number"
	InputCheckbox  = "checkbox"
)

// InputField is one entry of an app's user_input_form, written flat in
// YAML ({type, variable, …}); the API renders it in Dify's
// {"<type>": {…}} shape.
type InputField struct {
	// Type is one of the Input* constants.
	Type string `yaml:"type"`
	// Variable is the key in the request's inputs object.
	Variable string `yaml:"variable"`
	// Label is the display label; defaults to Variable.
	Label string `yaml:"label"`
	// Required makes the input mandatory.
	Required bool `yaml:"required"`
	// Default is the default value as written: text for text inputs, a
	// number for number, true/false for checkbox, one of Options for
	// select.
	Default string `yaml:"default"`
	// MaxLength limits text-input and paragraph values (0 = unset).
	MaxLength int `yaml:"max_length"`
	// Options are the choices of a select.
	Options []string `yaml:"options"`
}

// KnowledgeBase is a declared knowledge base (dataset).
type KnowledgeBase struct {
	// Name is the unique name apps refer to.
	Name string `yaml:"name"`
	// Description is free text.
	Description string `yaml:"description"`
	// Embedding selects the text-embedding model used for indexing and
	// queries; without one the knowledge base is economy (keyword search).
	Embedding EmbeddingRef `yaml:"embedding"`
}

// EmbeddingRef names a text-embedding model of a declared provider.
type EmbeddingRef struct {
	// Provider is the name of a declared provider.
	Provider string `yaml:"provider"`
	// Model is a text-embedding model of that provider.
	Model string `yaml:"model"`
}

// Provider returns the provider with the given name.
func (f *File) Provider(name string) (Provider, bool) {
	for _, p := range f.Providers {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// App returns the app with the given name.
func (f *File) App(name string) (App, bool) {
	for _, a := range f.Apps {
		if a.Name == name {
			return a, true
		}
	}
	return App{}, false
}

// KnowledgeBase returns the knowledge base with the given name.
func (f *File) KnowledgeBase(name string) (KnowledgeBase, bool) {
	for _, kb := range f.KnowledgeBases {
		if kb.Name == name {
			return kb, true
		}
	}
	return KnowledgeBase{}, false
}

// AppSite is the `site` block of an app: the settings of its web page. A member left out is
// not set here (the app's DSL, `parley apps site` or the default decides it).
type AppSite struct {
	Enabled           *bool   `yaml:"enabled"`
	Title             *string `yaml:"title"`
	Icon              *string `yaml:"icon"`
	IconBackground    *string `yaml:"icon_background"`
	Description       *string `yaml:"description"`
	Copyright         *string `yaml:"copyright"`
	PrivacyPolicy     *string `yaml:"privacy_policy"`
	DefaultLanguage   *string `yaml:"default_language"`
	CustomDisclaimer  *string `yaml:"custom_disclaimer"`
	InputPlaceholder  *string `yaml:"input_placeholder"`
	ChatColorTheme    *string `yaml:"chat_color_theme"`
	ShowWorkflowSteps *bool   `yaml:"show_workflow_steps"`
	// Passcode is what the page asks for before it answers ("" for none).
	Passcode *string `yaml:"passcode"`
	// AllowedOrigins are the origins allowed to embed the page.
	AllowedOrigins    []string `yaml:"allowed_origins"`
	RequestsPerMinute *int64   `yaml:"requests_per_minute"`
}

// RateLimits are an app's rate limits; zero (or unset) is no limit.
type RateLimits struct {
	RequestsPerMinute  int64 `yaml:"requests_per_minute"`
	TokensPerDay       int64 `yaml:"tokens_per_day"`
	WorkflowRunsPerDay int64 `yaml:"workflow_runs_per_day"`
}
