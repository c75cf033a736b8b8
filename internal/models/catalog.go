// Package models is the model catalog: which providers and models the
// workspace offers, as listed by Dify's
// GET /workspaces/current/models/model-types/{model_type}, and the model
// specs the chat and embedding runtimes look up.
//
// The catalog is pure domain logic over the declared providers
// (config.Provider); it knows nothing about HTTP. Whether a provider is
// configured is decided on every call through the injected getenv, so the
// catalog never holds an API key.
package models

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/parleyhq/parley/internal/config"
)

// Type is a model type, as used in the API path.
type Type string

// Model types (Dify's ModelType values).
const (
	TypeLLM           Type = config.ModelTypeLLM
	TypeTextEmbedding Type = config.ModelTypeTextEmbedding
	TypeRerank        Type = config.ModelTypeRerank
	TypeTTS           Type = config.ModelTypeTTS
	TypeSpeech2Text   Type = config.ModelTypeSpeech2Text
	TypeModeration    Type = config.ModelTypeModeration
)

// ErrUnknownType is returned by ParseType for a value outside the six model
// types; the API maps it to 400 invalid_param.
var ErrUnknownType = errors.New("unknown model type")

// ParseType validates a model type from a request. It is exact and case
// sensitive, like Dify's enum conversion; legacy aliases such as
// "text-generation" are not accepted.
func ParseType(s string) (Type, error) {
	switch t := Type(s); t {
	case TypeLLM, TypeTextEmbedding, TypeRerank, TypeTTS, TypeSpeech2Text, TypeModeration:
		return t, nil
	}
	return "", fmt.Errorf("%w %q", ErrUnknownType, s)
}

// Status values. In this listing both providers and models are always
// active: inactive ones are left out (Dify hard-codes the provider status
// and lists only active models).
const (
	StatusActive = "active"
)

// FetchFromPredefined marks models declared in configuration, as opposed to
// Dify's "customizable-model" added by users through the console.
const FetchFromPredefined = "predefined-model"

// ProviderModels is one provider with its listed models (Dify's
// ProviderWithModelsResponse without tenant_id, which the server adds).
type ProviderModels struct {
	// Provider is the provider id.
	Provider string
	// Label has en_US and zh_Hans.
	Label map[string]string
	// IconSmall maps locales to icon URLs; an empty map when unset.
	IconSmall map[string]string
	// IconSmallDark maps locales to dark icon URLs; nil when unset.
	IconSmallDark map[string]string
	// Status is always StatusActive.
	Status string
	// Models are the provider's active models of the requested type, in
	// configuration order; never empty.
	Models []Model
}

// Model is one listed model (Dify's ProviderModelWithStatusEntity).
type Model struct {
	// Name is the model id (Dify's "model").
	Name string
	// Label has en_US and zh_Hans.
	Label map[string]string
	// Type is the model type (Dify's "model_type").
	Type Type
	// Features are ModelFeature names; nil when none, which the API renders
	// as null.
	Features []string
	// FetchFrom is always FetchFromPredefined.
	FetchFrom string
	// Properties is Dify's model_properties: mode and context_size for llm;
	// context_size and max_chunks (when set) for text-embedding;
	// context_size (when set) for other types. Never nil.
	Properties map[string]any
	// Deprecated is always false: deprecated models are not listed.
	Deprecated bool
	// Status is always StatusActive.
	Status string
	// LoadBalancingEnabled is always false (no load balancing yet).
	LoadBalancingEnabled bool
	// HasInvalidLoadBalancingConfigs is always false.
	HasInvalidLoadBalancingConfigs bool
}

// Catalog answers model listing and lookup questions over the declared
// providers. It is safe for concurrent use.
type Catalog struct {
	providers []config.Provider
	getenv    func(string) string
}

// NewCatalog builds a catalog over providers (in listing order). getenv
// resolves API key variables to decide which providers are configured; the
// slice is copied, the providers are not modified.
func NewCatalog(providers []config.Provider, getenv func(string) string) *Catalog {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	return &Catalog{providers: slices.Clone(providers), getenv: getenv}
}

// ByType lists, in configuration order, the configured providers that have
// at least one enabled, non-deprecated model of type t, each with only
// those models. The result is freshly allocated; callers may modify it.
// An empty result is a nil slice.
func (c *Catalog) ByType(t Type) []ProviderModels {
	var out []ProviderModels
	for _, p := range c.providers {
		if !p.Configured(c.getenv) {
			continue
		}
		var listed []Model
		for _, m := range p.Models {
			if Type(m.Type) != t || !m.Enabled || m.Deprecated {
				continue
			}
			listed = append(listed, listModel(m))
		}
		if len(listed) == 0 {
			continue
		}
		icon := copyMap(p.IconSmall)
		if icon == nil {
			icon = map[string]string{}
		}
		out = append(out, ProviderModels{
			Provider:      p.Name,
			Label:         p.Label.WithFallback(p.Name),
			IconSmall:     icon,
			IconSmallDark: copyMap(p.IconSmallDark),
			Status:        StatusActive,
			Models:        listed,
		})
	}
	return out
}

func listModel(m config.Model) Model {
	props := map[string]any{}
	switch Type(m.Type) {
	case TypeLLM:
		mode := m.Mode
		if mode == "" {
			mode = config.ModelModeChat
		}
		props["mode"] = mode
		props["context_size"] = m.ContextSize
	case TypeTextEmbedding:
		props["context_size"] = m.ContextSize
		if m.MaxChunks > 0 {
			props["max_chunks"] = m.MaxChunks
		}
	default:
		if m.ContextSize > 0 {
			props["context_size"] = m.ContextSize
		}
	}
	var features []string
	if len(m.Features) > 0 {
		features = slices.Clone(m.Features)
	}
	return Model{
		Name:       m.Name,
		Label:      m.Label.WithFallback(m.Name),
		Type:       Type(m.Type),
		Features:   features,
		FetchFrom:  FetchFromPredefined,
		Properties: props,
		Status:     StatusActive,
	}
}

// copyMap clones m, treating an empty map as unset (nil).
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
