// Package registry is the provider factory: it turns a configured model into the client of its
// provider, one pooled client per provider, for every part of the server that calls models
// (chat and completion runners, knowledge indexing and retrieval, and later agents and workflow
// nodes).
package registry

import (
	"cmp"
	"fmt"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
)

// Set keeps one client per configured provider, so connections to a provider are
// pooled and reused across requests.
type Set struct {
	apiKey  func(provider string) string
	callCap time.Duration
	metrics *metrics.Metrics
	mu      sync.Mutex
	clients map[string]*openai.Client
}

// New returns a Set; apiKey gives a provider's key (models.Catalog.APIKey).
func New(apiKey func(provider string) string) *Set {
	return &Set{apiKey: apiKey, clients: map[string]*openai.Client{}}
}

// WithCallTimeout sets the cap on the whole of one model call (PARLEY_MODEL_CALL_TIMEOUT) for
// providers that set none of their own; without it the client's default applies. Call it
// before the set is used. It returns p.
func (p *Set) WithCallTimeout(d time.Duration) *Set {
	p.callCap = d
	return p
}

// WithMetrics has the set's clients count their calls in m (observe.go). Call it before the
// set is used. It returns p.
func (p *Set) WithMetrics(m *metrics.Metrics) *Set {
	p.metrics = m
	return p
}

// ChatModel returns the client for spec's provider.
func (p *Set) ChatModel(spec models.ModelSpec) (providers.ChatModel, error) {
	c, err := p.client(spec)
	if err != nil || !p.observing() {
		return c, err
	}
	return &observedChat{ChatModel: c, m: model{spec: spec, metrics: p.metrics}}, nil
}

func (p *Set) client(spec models.ModelSpec) (*openai.Client, error) {
	switch spec.ProviderType {
	case "", "openai-compatible":
	default:
		return nil, fmt.Errorf("registry: provider %s: unsupported type %q", spec.Provider, spec.ProviderType)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.clients[spec.Provider]
	if !ok {
		c = openai.New(openai.Config{Name: spec.Provider, BaseURL: spec.BaseURL, APIKey: p.apiKey(spec.Provider),
			Timeout: spec.Timeout, CallTimeout: cmp.Or(spec.CallTimeout, p.callCap)})
		p.clients[spec.Provider] = c
	}
	return c, nil
}

// Embedder returns the client for spec's provider, for embeddings.
func (p *Set) Embedder(spec models.ModelSpec) (providers.Embedder, error) {
	c, err := p.client(spec)
	if err != nil || !p.observing() {
		return c, err
	}
	return &observedEmbedder{Embedder: c, m: model{spec: spec, metrics: p.metrics}}, nil
}

// Reranker returns the client for spec's provider, for reranking.
func (p *Set) Reranker(spec models.ModelSpec) (providers.Reranker, error) {
	c, err := p.client(spec)
	if err != nil || !p.observing() {
		return c, err
	}
	return &observedReranker{Reranker: c, m: model{spec: spec, metrics: p.metrics}}, nil
}

// Transcriber returns the client for spec's provider, for speech to text.
func (p *Set) Transcriber(spec models.ModelSpec) (providers.Transcriber, error) {
	return p.client(spec)
}

// Synthesizer returns the client for spec's provider, for text to speech.
func (p *Set) Synthesizer(spec models.ModelSpec) (providers.Synthesizer, error) {
	return p.client(spec)
}
