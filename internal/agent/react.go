package agent

import (
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
)

// ReAct is the strategy of models that cannot call tools natively (llm.Agent runs it); which
// agents run it is decided here.

// useReAct reports whether an agent runs with ReAct: as in Dify, a model that calls tools
// natively always uses function calling; another runs ReAct unless the app asks for function
// calling.
func useReAct(strategy string, spec models.ModelSpec) bool {
	if spec.HasFeature(config.FeatureToolCall) || spec.HasFeature(config.FeatureMultiToolCall) {
		return false
	}
	return strategy != "function_call"
}

// completionModel reports whether the app's model continues a text rather than answering
// messages (mode completion): the app's own model mode, or the configured model's when the app
// does not say. Dify runs ReAct for such a model with its completion runner, whose prompt is one
// text (reactText).
func completionModel(app *apps.App, spec models.ModelSpec) bool {
	mode := app.Model.Mode
	if mode == "" {
		mode = spec.Mode
	}
	return mode == config.ModelModeCompletion
}
