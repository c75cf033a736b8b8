package chat

import (
	"context"
	"maps"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
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

// MessageFiles checks a message's file references as a Chatbot's are checked (a remote file needs
// an absolute http(s) URL, an upload must be this end user's) and returns the rows recording them
// on the message, with the upload behind each (zero for a remote file): for runners of other
// kinds that take files.
func (s *Service) MessageFiles(ctx context.Context, appID, endUserID string, refs []run.File) ([]store.MessageFile, []store.UploadFile, error) {
	atts, err := s.resolveFiles(ctx, appID, endUserID, refs)
	if err != nil {
		return nil, nil, err
	}
	uploads := make([]store.UploadFile, len(atts))
	for i, a := range atts {
		uploads[i] = a.upload
	}
	return messageFiles(atts), uploads, nil
}
