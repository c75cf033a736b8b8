package apps

import (
	"maps"
	"slices"

	"github.com/parleyhq/parley/internal/store"

	"github.com/parleyhq/parley/internal/config"
)

// FromConfig converts an app of the config file (already checked by config.ParseFile) into the
// model. The config file has no switch for citations: an app that names knowledge bases returns
// them, as it always has.
func FromConfig(c config.App) *App {
	a := &App{
		Source:                        SourceConfig,
		Name:                          c.Name,
		Mode:                          c.Mode,
		Description:                   c.Description,
		Enabled:                       c.Enabled,
		Model:                         Model{Provider: c.Model.Provider, Name: c.Model.Name, Parameters: maps.Clone(c.Model.Parameters)},
		PromptType:                    PromptSimple,
		PrePrompt:                     c.PrePrompt,
		OpeningStatement:              c.OpeningStatement,
		SuggestedQuestions:            slices.Clone(c.SuggestedQuestions),
		SuggestedQuestionsAfterAnswer: c.SuggestedQuestionsAfterAnswer,
		KnowledgeBases:                slices.Clone(c.KnowledgeBases),
		DatasetQueryVariable:          c.DatasetQueryVariable,
		MaxActiveRequests:             c.MaxActiveRequests,
		SiteConfig:                    c.Site,
		Limits: store.Limits{RequestsPerMinute: c.RateLimits.RequestsPerMinute, TokensPerDay: c.RateLimits.TokensPerDay,
			WorkflowRunsPerDay: c.RateLimits.WorkflowRunsPerDay},
	}
	if a.Model.Parameters == nil {
		a.Model.Parameters = map[string]any{}
	}
	a.Features.RetrieverResource.Enabled = len(c.KnowledgeBases) > 0
	a.Features.SpeechToText.Enabled = c.SpeechToText.Enabled
	a.Features.TextToSpeech = TextToSpeech{Enabled: c.TextToSpeech.Enabled, Voice: c.TextToSpeech.Voice,
		Language: c.TextToSpeech.Language, AutoPlay: c.TextToSpeech.AutoPlay}
	if len(c.KnowledgeBases) > 0 {
		a.Retrieval.Mode = "multiple"
	}
	for _, f := range c.UserInputForm {
		a.UserInputForm = append(a.UserInputForm, InputField{
			Type: f.Type, Variable: f.Variable, Label: f.Label, Required: f.Required,
			Default: f.Default, MaxLength: f.MaxLength, Options: slices.Clone(f.Options),
		})
	}
	return a
}
