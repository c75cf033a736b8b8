package dsl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
)

// Env is what an import resolves the file's references against: this server's providers and
// models, knowledge bases and tools.
type Env struct {
	// Providers are the providers of the config file. A model resolves when its provider
	// declares it, enabled; whether the provider's key is set is checked when the app runs.
	Providers []config.Provider
	// KnowledgeBases are the knowledge bases that exist or that the config file declares.
	KnowledgeBases []KnowledgeBase
	// Tool reports whether the server has a tool; nil means it has none.
	Tool func(apps.Tool) bool
}

// KnowledgeBase is a Parley knowledge base a DSL dataset reference may resolve to.
type KnowledgeBase struct {
	// ID is empty for one the config file declares that has not been created yet.
	ID   string
	Name string
}

// Model types a DSL file refers to.
const (
	modelLLM    = config.ModelTypeLLM
	modelRerank = config.ModelTypeRerank
)

// resolvedModel is a configured model a reference resolved to.
type resolvedModel struct {
	provider config.Provider
	model    config.Model
}

// resolveModel finds the configured model a DSL reference names. The rule, in order:
//
//  1. a provider whose name is the reference exactly;
//  2. a provider whose name, or the last "/" segment of its name, is the last segment of the
//     reference: langgenius/openai/openai and the older openai both find a provider named
//     openai or langgenius/openai/openai;
//  3. a provider whose type is that segment, with "_" read as "-" (Dify's
//     openai_api_compatible is Parley's openai-compatible).
//
// The first of these providers, in config order, that declares an enabled model of the type
// and name wins. On failure the reason is returned.
func (e Env) resolveModel(typ, provider, name string) (resolvedModel, string) {
	if strings.TrimSpace(provider) == "" || strings.TrimSpace(name) == "" {
		return resolvedModel{}, fmt.Sprintf("provider %q model %q is incomplete", provider, name)
	}
	cands := e.providerCandidates(provider)
	for _, p := range cands {
		if m, ok := p.Model(typ, name); ok && m.Enabled {
			return resolvedModel{provider: p, model: m}, ""
		}
	}
	if len(cands) == 0 {
		return resolvedModel{}, fmt.Sprintf("provider %q model %q is not configured (no provider of this server matches %q)", provider, name, lastSegment(provider))
	}
	names := make([]string, len(cands))
	for i, p := range cands {
		names[i] = fmt.Sprintf("%q", p.Name)
	}
	return resolvedModel{}, fmt.Sprintf("provider %q model %q is not configured (provider %s declares no enabled %s model %q)",
		provider, name, strings.Join(names, ", "), typ, name)
}

func (e Env) providerCandidates(ref string) []config.Provider {
	seg := lastSegment(ref)
	typ := strings.ReplaceAll(strings.ToLower(seg), "_", "-")
	if typ == "openai-api-compatible" {
		typ = config.ProviderTypeOpenAICompatible
	}
	var out []config.Provider
	add := func(match func(config.Provider) bool) {
		for _, p := range e.Providers {
			if match(p) && !slices.ContainsFunc(out, func(q config.Provider) bool { return q.Name == p.Name }) {
				out = append(out, p)
			}
		}
	}
	add(func(p config.Provider) bool { return p.Name == ref })
	add(func(p config.Provider) bool { return p.Name == seg || lastSegment(p.Name) == seg })
	add(func(p config.Provider) bool { return p.Type == typ })
	return out
}

func lastSegment(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// parseFallback reads --model-fallback's PROVIDER:MODEL (the model may contain ':', as
// Ollama's names do) and resolves it as an llm.
func (e Env) parseFallback(s string) (resolvedModel, error) {
	provider, name, ok := strings.Cut(s, ":")
	if !ok || provider == "" || name == "" {
		return resolvedModel{}, fmt.Errorf("%q is not PROVIDER:MODEL", s)
	}
	m, why := e.resolveModel(modelLLM, provider, name)
	if why != "" {
		return resolvedModel{}, fmt.Errorf("%s", why)
	}
	return m, nil
}

// resolveDataset finds the Parley knowledge base a DSL dataset reference means. Dify writes
// dataset ids, which mean nothing outside the workspace that exported them (newer versions
// even encrypt them per workspace). In order: the --dataset mapping of that reference (to a
// knowledge base name or id), a knowledge base with that id, one with that name. Parley's own
// exports write names, so they resolve on any server with the same knowledge bases.
func (e Env) resolveDataset(ref string, mapping map[string]string) (string, string) {
	if target, ok := mapping[ref]; ok {
		if kb, ok := e.knowledgeBase(target); ok {
			return kb.Name, ""
		}
		return "", fmt.Sprintf("--dataset %s=%s: there is no knowledge base %q", ref, target, target)
	}
	if kb, ok := e.knowledgeBase(ref); ok {
		return kb.Name, ""
	}
	return "", fmt.Sprintf("dataset %q is not a knowledge base of this server", ref)
}

func (e Env) knowledgeBase(ref string) (KnowledgeBase, bool) {
	for _, kb := range e.KnowledgeBases {
		if kb.ID != "" && kb.ID == ref {
			return kb, true
		}
	}
	for _, kb := range e.KnowledgeBases {
		if kb.Name == ref {
			return kb, true
		}
	}
	return KnowledgeBase{}, false
}

// hasTool reports whether the server offers the tool.
func (e Env) hasTool(t apps.Tool) bool {
	return e.Tool != nil && e.Tool(t)
}

// modelMode is the API style of a configured llm (chat when it does not say).
func (e Env) modelMode(provider, name string) string {
	for _, p := range e.Providers {
		if p.Name != provider {
			continue
		}
		if m, ok := p.Model(modelLLM, name); ok && m.Mode != "" {
			return m.Mode
		}
	}
	return config.ModelModeChat
}
