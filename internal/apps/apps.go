// Package apps is Parley's app model: what an app is (its mode, model, prompt, features, input
// form, knowledge bases, and room for agent settings and workflow graphs), where apps come from
// (the config file or an import into the database), and the registry through which the server
// finds them, by id, on every request.
//
// The model is independent of both sources: the config file's structs and Dify's DSL are
// converted into it (FromConfig here, package dsl for DSL files), and a stored import is this
// model as JSON.
package apps

import (
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// App modes, Dify's AppMode values.
const (
	ModeChat         = "chat"
	ModeAgentChat    = "agent-chat"
	ModeAgent        = "agent"
	ModeAdvancedChat = "advanced-chat"
	ModeCompletion   = "completion"
	ModeWorkflow     = "workflow"
)

// Modes lists every app mode.
func Modes() []string {
	return []string{ModeChat, ModeAgentChat, ModeAgent, ModeAdvancedChat, ModeCompletion, ModeWorkflow}
}

// Versioned reports whether apps of mode have drafts and published versions (Agent apps and
// workflow graphs): the API runs the published version, and publishing makes a new one. Other
// kinds run what was imported or configured, as soon as it is stored.
func Versioned(mode string) bool {
	return mode == ModeAgent || mode == ModeAdvancedChat || mode == ModeWorkflow
}

// Source says where an app is defined.
type Source string

// Sources of apps.
const (
	// SourceConfig apps are declared in the config file; the file is their only definition
	// and the database keeps just their id.
	SourceConfig Source = "config"
	// SourceImport apps were imported (parley apps import) and live in the database.
	SourceImport Source = "import"
)

// Prompt types (model_config.prompt_type).
const (
	PromptSimple   = "simple"
	PromptAdvanced = "advanced"
)

// Input field types of the user input form, as Dify names them.
const (
	InputText      = "text-input"
	InputParagraph = "paragraph"
	InputSelect    = "select"
	InputNumber    = "number"
	InputCheckbox  = "checkbox"

	// inputFile and inputFileList are Dify's file inputs (Chatflow and Workflow start nodes).
	inputFile     = "file"
	inputFileList = "file-list"
)

// App is one app as the runtime sees it. Its JSON form is how an imported app is stored; the
// fields marked `json:"-"` come from where it is stored, not from its definition.
type App struct {
	// ID is the app's id in the store, stable across restarts.
	ID string `json:"-"`
	// Source is where the app is defined.
	Source Source `json:"-"`
	// PublishedVersion is the id of the app's published version; empty when it has none.
	PublishedVersion string `json:"-"`
	// CreatedAt is when an imported app was stored; zero for an app of the config file.
	CreatedAt time.Time `json:"-"`
	// Limits are the app's rate limits: from the config file, or (an imported app) set by
	// `parley apps limits`.
	Limits store.Limits `json:"-"`
	// SiteConfig is the `site` block of a config app's entry (nil: none; always nil for an
	// imported app, whose DSL's `site` section is kept in Extra).
	SiteConfig *config.AppSite `json:"-"`
	// MaxActiveRequests is the app's effective concurrency cap; 0 means unlimited.
	MaxActiveRequests int `json:"-"`
	// Bound is the Agent an Agent app (mode agent) is bound to; nil when it has none, and for
	// other modes. It is stored as a resource of its own, not in the definition.
	Bound *BoundAgent `json:"-"`

	// Name is unique among all apps, whatever their source.
	Name string `json:"name"`
	// Mode is one of the Mode* constants.
	Mode string `json:"mode"`
	// Description is shown by GET /info.
	Description string `json:"description,omitempty"`
	// Enabled apps answer requests; a disabled one is unavailable.
	Enabled bool `json:"enabled"`
	// Icon is display only.
	Icon Icon `json:"icon,omitzero"`

	// Model is the LLM the app calls.
	Model Model `json:"model,omitzero"`
	// PromptType is PromptSimple (PrePrompt) or PromptAdvanced (ChatPrompt or CompletionPrompt).
	PromptType string `json:"prompt_type,omitempty"`
	// PrePrompt is the instruction prompt of a simple prompt; it may reference inputs as
	// {{variable}}.
	PrePrompt string `json:"pre_prompt,omitempty"`
	// ChatPrompt is an advanced prompt for chat models: messages with roles.
	ChatPrompt []PromptMessage `json:"chat_prompt,omitempty"`
	// CompletionPrompt is an advanced prompt for completion models.
	CompletionPrompt *CompletionPrompt `json:"completion_prompt,omitempty"`

	// OpeningStatement is the greeting returned by GET /parameters.
	OpeningStatement string `json:"opening_statement,omitempty"`
	// SuggestedQuestions are shown with the greeting.
	SuggestedQuestions []string `json:"suggested_questions,omitempty"`
	// SuggestedQuestionsAfterAnswer enables follow-up suggestions (GET /messages/{id}/suggested).
	SuggestedQuestionsAfterAnswer bool `json:"suggested_questions_after_answer,omitempty"`
	// Features are the app's other feature switches.
	Features Features `json:"features,omitzero"`

	// UserInputForm declares the app's inputs.
	UserInputForm []InputField `json:"user_input_form,omitempty"`

	// KnowledgeBases names the Parley knowledge bases the app retrieves from.
	KnowledgeBases []string `json:"knowledge_bases,omitempty"`
	// UnmappedDatasets are the dataset references (Dify ids) of an imported file that no
	// knowledge base of this server matched and no --dataset flag mapped. Retrieval leaves
	// them out, as Dify leaves out datasets that are not in its workspace; an export writes
	// them back where they were, so that importing it again with --dataset maps them.
	UnmappedDatasets []string `json:"unmapped_datasets,omitempty"`
	// Retrieval is how the app retrieves from its knowledge bases.
	Retrieval Retrieval `json:"retrieval,omitzero"`
	// DatasetQueryVariable is, for completion apps, the input whose value is the retrieval query.
	DatasetQueryVariable string `json:"dataset_query_variable,omitempty"`

	// Agent holds the settings of agent kinds (tools, strategy); nil for other kinds.
	Agent *Agent `json:"agent,omitempty"`
	// Workflow holds the graph of workflow kinds; nil for other kinds.
	Workflow *Workflow `json:"workflow,omitempty"`

	// DSLVersion is the DSL version of the file an imported app came from; an export keeps it.
	DSLVersion string `json:"dsl_version,omitempty"`
	// Extra keeps what an imported DSL file held that this model does not, by the dotted path
	// of the mapping it was found in ("" for the top level, "model_config", "app", …), so an
	// export gives it back.
	Extra map[string]map[string]any `json:"extra,omitempty"`
}

// Icon is how an app is shown; Parley only keeps it.
type Icon struct {
	// Type is emoji, image or link.
	Type       string `json:"type,omitempty"`
	Icon       string `json:"icon,omitempty"`
	Background string `json:"background,omitempty"`
	// UseAsAnswerIcon shows the icon beside answers.
	UseAsAnswerIcon bool `json:"use_as_answer_icon,omitempty"`
}

// Model selects an LLM and its completion parameters.
type Model struct {
	// Provider is the name of a configured provider.
	Provider string `json:"provider"`
	// Name is an llm model of that provider.
	Name string `json:"name"`
	// Mode is the model's API style, chat or completion; empty means the model's own.
	Mode string `json:"mode,omitempty"`
	// Parameters are completion parameters passed to the model (temperature, top_p,
	// max_tokens, stop, …).
	Parameters map[string]any `json:"parameters,omitempty"`
}

// ModelRef names a model of a configured provider (a rerank or embedding model).
type ModelRef struct {
	Provider string `json:"provider"`
	Name     string `json:"name"`
}

// PromptMessage is one message of an advanced chat prompt.
type PromptMessage struct {
	// Role is system, user or assistant.
	Role string `json:"role"`
	// Text may reference inputs as {{variable}}, and Dify's #histories#, #query# and #context#
	// placeholders.
	Text string `json:"text"`
	// Extra keeps the message's other keys.
	Extra map[string]any `json:"extra,omitempty"`
}

// CompletionPrompt is an advanced prompt for completion models.
type CompletionPrompt struct {
	Text string `json:"text"`
	// UserPrefix and AssistantPrefix label the turns of the conversation history.
	UserPrefix      string `json:"user_prefix,omitempty"`
	AssistantPrefix string `json:"assistant_prefix,omitempty"`
}

// Toggle is a feature that is only on or off.
type Toggle struct {
	Enabled bool `json:"enabled,omitempty"`
}

// Features are an app's feature switches (besides SuggestedQuestionsAfterAnswer, which App holds
// itself).
type Features struct {
	SpeechToText Toggle       `json:"speech_to_text,omitzero"`
	TextToSpeech TextToSpeech `json:"text_to_speech,omitzero"`
	// RetrieverResource returns the retrieved chunks as retriever_resources (citations).
	RetrieverResource Toggle `json:"retriever_resource,omitzero"`
	// MoreLikeThis offers variations of an answer (completion apps).
	MoreLikeThis           Toggle                 `json:"more_like_this,omitzero"`
	SensitiveWordAvoidance SensitiveWordAvoidance `json:"sensitive_word_avoidance,omitzero"`
	AnnotationReply        AnnotationReply        `json:"annotation_reply,omitzero"`
	FileUpload             FileUpload             `json:"file_upload,omitzero"`
}

// TextToSpeech reads answers aloud.
type TextToSpeech struct {
	Enabled  bool   `json:"enabled,omitempty"`
	Voice    string `json:"voice,omitempty"`
	Language string `json:"language,omitempty"`
	// AutoPlay is "enabled" or "disabled".
	AutoPlay string `json:"auto_play,omitempty"`
}

// SensitiveWordAvoidance is content moderation.
type SensitiveWordAvoidance struct {
	Enabled bool `json:"enabled,omitempty"`
	// Type is keywords, openai_moderation or api.
	Type string `json:"type,omitempty"`
	// Config is the moderation's settings as the type defines them.
	Config map[string]any `json:"config,omitempty"`
}

// AnnotationReply answers from curated annotations when a question matches one.
type AnnotationReply struct {
	Enabled        bool      `json:"enabled,omitempty"`
	ScoreThreshold *float64  `json:"score_threshold,omitempty"`
	EmbeddingModel *ModelRef `json:"embedding_model,omitempty"`
}

// FileUpload is what files a client may send with a message.
type FileUpload struct {
	Enabled               bool     `json:"enabled,omitempty"`
	AllowedFileTypes      []string `json:"allowed_file_types,omitempty"`
	AllowedFileExtensions []string `json:"allowed_file_extensions,omitempty"`
	// AllowedUploadMethods are remote_url and local_file.
	AllowedUploadMethods []string    `json:"allowed_upload_methods,omitempty"`
	NumberLimits         int         `json:"number_limits,omitempty"`
	Image                ImageUpload `json:"image,omitzero"`
}

// ImageUpload is the image part of file upload (the older, image-only form of it).
type ImageUpload struct {
	Enabled bool `json:"enabled,omitempty"`
	// Detail is high or low.
	Detail          string   `json:"detail,omitempty"`
	NumberLimits    int      `json:"number_limits,omitempty"`
	TransferMethods []string `json:"transfer_methods,omitempty"`
}

// InputField is one input of an app's form.
type InputField struct {
	// Type is one of the Input* constants, or another of Dify's (file, file-list, json_object,
	// external_data_tool), whose values are passed through unchecked.
	Type string `json:"type"`
	// Variable is the key in the request's inputs object.
	Variable string `json:"variable"`
	// Label is the display label.
	Label string `json:"label,omitempty"`
	// Required makes the input mandatory.
	Required bool `json:"required,omitempty"`
	// Default is the default value as text: a number for number inputs, true or false for
	// checkboxes, one of Options for a select.
	Default string `json:"default,omitempty"`
	// MaxLength limits text-input and paragraph values (0 = unset).
	MaxLength int `json:"max_length,omitempty"`
	// Options are the choices of a select.
	Options []string `json:"options,omitempty"`
	// Extra keeps the field's other keys (placeholder, hide, allowed file types, …).
	Extra map[string]any `json:"extra,omitempty"`
}

// Retrieval is how an app retrieves from its knowledge bases (Dify's dataset_configs).
type Retrieval struct {
	// Mode is single (one knowledge base chosen per query) or multiple (all, merged).
	Mode                  string   `json:"mode,omitempty"`
	TopK                  int      `json:"top_k,omitempty"`
	ScoreThreshold        *float64 `json:"score_threshold,omitempty"`
	ScoreThresholdEnabled bool     `json:"score_threshold_enabled,omitempty"`
	RerankingEnabled      bool     `json:"reranking_enabled,omitempty"`
	// RerankingMode is reranking_model or weighted_score.
	RerankingMode  string    `json:"reranking_mode,omitempty"`
	RerankingModel *ModelRef `json:"reranking_model,omitempty"`
}

// Agent holds the settings of the agent kinds (Dify's agent_mode).
type Agent struct {
	Enabled bool `json:"enabled"`
	// Strategy is function_call or react.
	Strategy string `json:"strategy,omitempty"`
	// MaxIteration caps the reasoning rounds.
	MaxIteration int `json:"max_iteration,omitempty"`
	// Tools are the tools the agent may call.
	Tools []Tool `json:"tools,omitempty"`
	// Prompt holds the ReAct prompt templates (first_prompt, next_iteration).
	Prompt map[string]any `json:"prompt,omitempty"`
	// Extra keeps agent_mode's other keys.
	Extra map[string]any `json:"extra,omitempty"`
}

// Tool is one tool of an agent.
type Tool struct {
	// ProviderType is builtin, api, workflow, plugin or mcp.
	ProviderType string         `json:"provider_type"`
	ProviderID   string         `json:"provider_id"`
	ProviderName string         `json:"provider_name,omitempty"`
	Name         string         `json:"tool_name"`
	Label        string         `json:"tool_label,omitempty"`
	Parameters   map[string]any `json:"tool_parameters,omitempty"`
	Enabled      bool           `json:"enabled"`
	// Missing marks a tool Parley does not have, imported anyway (--lenient); calling it fails
	// at run time with a clear error.
	Missing bool `json:"missing,omitempty"`
	// Extra keeps the entry's other keys.
	Extra map[string]any `json:"extra,omitempty"`
}

// Workflow is the graph of a workflow kind, kept as the DSL file has it.
type Workflow struct {
	Graph                 map[string]any   `json:"graph,omitempty"`
	Features              map[string]any   `json:"features,omitempty"`
	EnvironmentVariables  []map[string]any `json:"environment_variables,omitempty"`
	ConversationVariables []map[string]any `json:"conversation_variables,omitempty"`
}

// IsChat reports whether the app is served by the chat routes (/chat-messages, /conversations,
// /messages): Chatbot, Legacy Agent, Agent and Chatflow apps.
func (a *App) IsChat() bool {
	switch a.Mode {
	case ModeChat, ModeAgentChat, ModeAgent, ModeAdvancedChat:
		return true
	}
	return false
}

// StreamingOnly reports whether the app answers only in streaming mode (Legacy Agent and Agent).
func (a *App) StreamingOnly() bool {
	return a.Mode == ModeAgentChat || a.Mode == ModeAgent
}

// Versioned reports whether the app has drafts and published versions (see [Versioned]).
func (a *App) Versioned() bool { return Versioned(a.Mode) }

// UsesKnowledgeBase reports whether the app retrieves from the named knowledge base.
func (a *App) UsesKnowledgeBase(name string) bool { return slices.Contains(a.KnowledgeBases, name) }

// Limits are the server's upload limits in MB, shown in the app's parameters.
type Limits struct {
	File, Image, Audio, Video, WorkflowFiles int
}

// Parameters is what GET /parameters shows about an app.
type Parameters struct {
	OpeningStatement              string
	SuggestedQuestions            []string
	SuggestedQuestionsAfterAnswer bool
	RetrieverResource             bool
	// UserInputForm has one entry per input: its type and its description.
	UserInputForm []FormItem
	Limits        Limits
}

// FormItem is one input of an app's form.
type FormItem struct {
	Type      string
	Label     string
	Variable  string
	Required  bool
	Default   string
	MaxLength int
	Options   []string
	// Hide hides the input from a web app's form (newer Dify's `hide`, kept in the field's Extra).
	Hide bool
}

// Parameters returns the app's parameters.
func (a *App) Parameters(l Limits) Parameters {
	p := Parameters{
		OpeningStatement:              a.OpeningStatement,
		SuggestedQuestions:            append([]string{}, a.SuggestedQuestions...),
		SuggestedQuestionsAfterAnswer: a.SuggestedQuestionsAfterAnswer,
		RetrieverResource:             a.Features.RetrieverResource.Enabled,
		Limits:                        l,
		UserInputForm:                 make([]FormItem, 0, len(a.UserInputForm)),
	}
	for _, f := range a.UserInputForm {
		label := f.Label
		if label == "" {
			label = f.Variable
		}
		hide, _ := f.Extra["hide"].(bool)
		p.UserInputForm = append(p.UserInputForm, FormItem{
			Type: f.Type, Label: label, Variable: f.Variable, Required: f.Required,
			Default: f.Default, MaxLength: f.MaxLength, Options: append([]string(nil), f.Options...), Hide: hide,
		})
	}
	return p
}

// validName reports whether name can name an app: not blank, no surrounding space, no control
// characters, at most 255 characters (Dify's limit).
func validName(name string) bool {
	if strings.TrimSpace(name) != name || name == "" || len([]rune(name)) > 255 {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
