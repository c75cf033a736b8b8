package moderation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
)

// Limits of one moderation call, Dify's defaults for OpenAI's moderation models: text is cut
// into pieces of at most MaxCharactersPerChunk characters, sent MaxChunks at a time (a model's
// max_chunks in the config overrides it).
const (
	MaxCharactersPerChunk = 2000
	MaxChunks             = 32
)

// Models finds the moderation model; *models.Catalog implements it.
type Models interface {
	ByType(t models.Type) []models.ProviderModels
	Lookup(t models.Type, provider, name string) (models.ModelSpec, error)
}

// Providers gives the client of a model's provider; the provider registry implements it.
type Providers interface {
	Moderator(spec models.ModelSpec) (providers.Moderator, error)
}

// Service builds the checker of an app's rule.
type Service struct {
	models    Models
	providers Providers
}

// New returns a Service over the config's models and their providers.
func New(m Models, p Providers) *Service { return &Service{models: m, providers: p} }

// For returns the checker of an app's moderation, or nil when moderation is off. A rule that
// cannot run is an error wrapping ErrInvalid (imports refuse such rules, so only an app edited
// by hand gets here).
func (s *Service) For(a *apps.App) (Checker, error) {
	r, err := Parse(a.Features.SensitiveWordAvoidance)
	if err != nil || r == nil {
		return nil, err
	}
	if r.Type == TypeOpenAI {
		return &openAI{rule: r, s: s}, nil
	}
	return Keywords(r), nil
}

// openAI asks the config's moderation model, as Dify's openai_moderation asks OpenAI's.
type openAI struct {
	rule *Rule
	s    *Service
}

func (o *openAI) Rule() *Rule { return o.rule }

func (o *openAI) CheckInputs(ctx context.Context, inputs map[string]any, query string) (Result, error) {
	if !o.rule.Inputs.Enabled {
		return Result{}, nil
	}
	// The query and the input values, one per line; keys are sorted so a request reads the same
	// every time.
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(inputs)) {
		if t := text(inputs[k]); t != "" {
			b.WriteString(t)
			b.WriteByte('\n')
		}
	}
	b.WriteString(query)
	flagged, err := o.s.flagged(ctx, strings.TrimSuffix(b.String(), "\n"))
	if err != nil {
		return Result{}, err
	}
	return verdict(flagged, o.rule.Inputs), nil
}

func (o *openAI) CheckOutput(ctx context.Context, text string) (Result, error) {
	if !o.rule.Outputs.Enabled {
		return Result{}, nil
	}
	flagged, err := o.s.flagged(ctx, text)
	if err != nil {
		return Result{}, err
	}
	return verdict(flagged, o.rule.Outputs), nil
}

// flagged asks the moderation model about text: the first moderation model of the config, in
// its order. Empty text is never flagged and costs no call.
func (s *Service) flagged(ctx context.Context, text string) (bool, error) {
	if text == "" {
		return false, nil
	}
	spec, err := s.model()
	if err != nil {
		return false, err
	}
	m, err := s.providers.Moderator(spec)
	if err != nil {
		return false, err
	}
	batch := spec.MaxChunks
	if batch <= 0 {
		batch = MaxChunks
	}
	pieces := split(text, MaxCharactersPerChunk)
	for len(pieces) > 0 {
		n := min(batch, len(pieces))
		res, err := m.Moderate(ctx, spec.Name, pieces[:n])
		if err != nil {
			return false, err
		}
		if slices.Contains(res, true) {
			return true, nil
		}
		pieces = pieces[n:]
	}
	return false, nil
}

// model is the moderation model to call.
func (s *Service) model() (models.ModelSpec, error) {
	for _, p := range s.models.ByType(models.TypeModeration) {
		for _, m := range p.Models {
			return s.models.Lookup(models.TypeModeration, p.Provider, m.Name)
		}
	}
	return models.ModelSpec{}, fmt.Errorf("moderation: no moderation model is configured (a model of type moderation of a configured provider): %w",
		models.ErrProviderNotConfigured)
}

// split cuts s into pieces of at most n characters.
func split(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, string(r))
}
