package chat

import (
	"maps"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
)

// ModelParameters are a model's completion parameters as a Dify file writes them (an app's or a
// workflow LLM node's completion_params), turned into what is sent upstream with prompt: the
// renames and type fixes every runner applies, the model's own output cap when none is set, and
// a reply budget that fits the model's context.
func ModelParameters(params map[string]any, spec models.ModelSpec, prompt []providers.Message) map[string]any {
	p := maps.Clone(params)
	if p == nil {
		p = map[string]any{}
	}
	upstreamParams(p)
	if _, ok := p["max_tokens"]; !ok && spec.MaxOutputTokens > 0 {
		p["max_tokens"] = spec.MaxOutputTokens
	}
	return fitReply(p, spec, prompt)
}
