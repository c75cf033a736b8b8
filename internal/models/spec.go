package models

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parleyhq/parley/internal/config"
)

// Lookup errors. server/ can map them to Dify's errors: an unknown or
// unconfigured provider is provider_not_initialize, an unknown or disabled
// model is model_currently_not_support.
var (
	ErrProviderNotFound      = errors.New("provider not found")
	ErrProviderNotConfigured = errors.New("provider credentials are not configured")
	ErrModelNotFound         = errors.New("model not found")
)

// UnusableError is a lookup of a provider that cannot be used: Reason says why and what to set.
// It wraps ErrProviderNotFound or ErrProviderNotConfigured.
type UnusableError struct {
	Provider string
	Reason   string
	err      error
}

func (e *UnusableError) Error() string {
	return fmt.Sprintf("provider %q: %v: %s", e.Provider, e.err, e.Reason)
}

func (e *UnusableError) Unwrap() error { return e.err }

// Problem is a provider of the configuration that cannot be used, and why.
type Problem struct {
	Provider string
	Reason   string
}

// Problems lists, in configuration order, the providers that are not usable and why (an API key
// variable that is not set, say), for the server to warn about at start-up.
func (c *Catalog) Problems() []Problem {
	var out []Problem
	for _, p := range c.providers {
		if r := p.Problem(c.getenv); r != "" {
			out = append(out, Problem{Provider: p.Name, Reason: r})
		}
	}
	return out
}

// Pricing is a model's price list as decimal strings (Dify's PriceConfig):
// the cost of n tokens is n × price × Unit, in Currency.
type Pricing struct {
	// Input is the price of prompt (or embedded) tokens per Unit.
	Input string
	// Output is the price of completion tokens per Unit; empty when the
	// model has none.
	Output string
	// Unit is the token multiplier, e.g. "0.000001" for per-1M prices.
	Unit string
	// Currency is a code such as USD.
	Currency string
}

// ModelSpec is what a runtime needs to call a model: where, how, and its
// limits and prices. Unlike the listing, a lookup also finds deprecated
// models, which keep working for apps that use them.
type ModelSpec struct {
	// Provider is the provider id.
	Provider string
	// ProviderType is the wire protocol (config.ProviderTypeOpenAICompatible).
	ProviderType string
	// BaseURL is the provider's API root without a trailing slash.
	BaseURL string
	// Timeout bounds one upstream request.
	Timeout time.Duration
	// CallTimeout caps the whole of one call; 0 means the process default.
	CallTimeout time.Duration
	// Name is the upstream model id.
	Name string
	// Type is the model type.
	Type Type
	// Mode is "chat" or "completion" for llm models, empty otherwise.
	Mode string
	// ContextSize is the context window in tokens (0 = unknown).
	ContextSize int
	// MaxChunks is the embedding batch limit (0 = unknown).
	MaxChunks int
	// MaxOutputTokens caps completion tokens (0 = unset).
	MaxOutputTokens int
	// Features are ModelFeature names.
	Features []string
	// Deprecated is true for models kept only for existing apps.
	Deprecated bool
	// Pricing is nil for models without prices (cost 0, as in Dify).
	Pricing *Pricing
}

// HasFeature reports whether the model declares feature f (one of the
// config.Feature* constants).
func (s ModelSpec) HasFeature(f string) bool { return slices.Contains(s.Features, f) }

// Lookup finds an enabled model of type t. The provider must be configured.
// Errors wrap ErrProviderNotFound, ErrProviderNotConfigured or
// ErrModelNotFound (also for disabled models).
func (c *Catalog) Lookup(t Type, provider, name string) (ModelSpec, error) {
	i := slices.IndexFunc(c.providers, func(p config.Provider) bool { return p.Name == provider })
	if i < 0 {
		return ModelSpec{}, &UnusableError{Provider: provider, err: ErrProviderNotFound,
			Reason: "it is not among the providers of the config file: add it there (PARLEY_CONFIG names the file), or change the app's model"}
	}
	p := c.providers[i]
	if r := p.Problem(c.getenv); r != "" {
		return ModelSpec{}, &UnusableError{Provider: provider, Reason: r, err: ErrProviderNotConfigured}
	}
	m, ok := p.Model(string(t), name)
	if !ok {
		return ModelSpec{}, fmt.Errorf("%s model %q of provider %q: %w", t, name, provider, ErrModelNotFound)
	}
	if !m.Enabled {
		return ModelSpec{}, fmt.Errorf("%s model %q of provider %q is disabled: %w", t, name, provider, ErrModelNotFound)
	}
	spec := ModelSpec{
		Provider:        p.Name,
		ProviderType:    p.Type,
		BaseURL:         p.BaseURL,
		Timeout:         p.Timeout,
		CallTimeout:     p.CallTimeout,
		Name:            m.Name,
		Type:            t,
		Mode:            m.Mode,
		ContextSize:     m.ContextSize,
		MaxChunks:       m.MaxChunks,
		MaxOutputTokens: m.MaxOutputTokens,
		Features:        slices.Clone(m.Features),
		Deprecated:      m.Deprecated,
	}
	if t == TypeLLM && spec.Mode == "" {
		spec.Mode = config.ModelModeChat
	}
	if m.Pricing != nil {
		spec.Pricing = &Pricing{Input: m.Pricing.Input, Output: m.Pricing.Output, Unit: m.Pricing.Unit, Currency: m.Pricing.Currency}
	}
	return spec, nil
}

// LLM is Lookup for TypeLLM, reporting only success.
func (c *Catalog) LLM(provider, name string) (ModelSpec, bool) {
	s, err := c.Lookup(TypeLLM, provider, name)
	return s, err == nil
}

// TextEmbedding is Lookup for TypeTextEmbedding, reporting only success.
func (c *Catalog) TextEmbedding(provider, name string) (ModelSpec, bool) {
	s, err := c.Lookup(TypeTextEmbedding, provider, name)
	return s, err == nil
}

// APIKey returns the API key of a provider (empty when it needs none or is
// unknown). Use it at call time; do not store or log the result.
func (c *Catalog) APIKey(provider string) string {
	for _, p := range c.providers {
		if p.Name == provider {
			return p.APIKey(c.getenv)
		}
	}
	return ""
}
