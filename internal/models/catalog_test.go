package models

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/config"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func llm(name string, opts ...func(*config.Model)) config.Model {
	m := config.Model{Name: name, Type: config.ModelTypeLLM, ContextSize: 4096, Mode: "chat", Enabled: true}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func model(name, typ string, opts ...func(*config.Model)) config.Model {
	m := config.Model{Name: name, Type: typ, Enabled: true}
	for _, o := range opts {
		o(&m)
	}
	return m
}

var (
	deprecated = func(m *config.Model) { m.Deprecated = true }
	disabled   = func(m *config.Model) { m.Enabled = false }
)

func TestParseType(t *testing.T) {
	t.Parallel()
	for _, s := range config.ModelTypes() {
		if got, err := ParseType(s); err != nil || string(got) != s {
			t.Errorf("ParseType(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "LLM", "text-generation", "embeddings", "reranking", "chat"} {
		if _, err := ParseType(s); !errors.Is(err, ErrUnknownType) {
			t.Errorf("ParseType(%q) error = %v, want ErrUnknownType", s, err)
		}
	}
}

func TestByType(t *testing.T) {
	t.Parallel()
	openai := config.Provider{
		Name: "openai", Label: config.I18n{"en_US": "OpenAI"}, APIKeyEnv: "OPENAI_API_KEY", RequiresAPIKey: true,
		IconSmall: config.I18n{"en_US": "https://x/o.svg", "zh_Hans": "https://x/o.svg"},
		Models: []config.Model{
			llm("gpt-4o-mini", func(m *config.Model) {
				m.ContextSize = 128000
				m.Features = []string{"multi-tool-call", "vision"}
				m.Label = config.I18n{"en_US": "GPT-4o mini"}
			}),
			llm("gpt-3.5", deprecated),
			llm("gpt-5", disabled),
			model("text-embedding-3-small", config.ModelTypeTextEmbedding, func(m *config.Model) { m.ContextSize = 8191; m.MaxChunks = 32 }),
			llm("o1", func(m *config.Model) { m.Mode = "" }),
		},
	}
	local := config.Provider{
		Name: "ollama", RequiresAPIKey: false,
		IconSmallDark: config.I18n{"en_US": "https://x/d.svg"},
		Models: []config.Model{
			llm("llama3", func(m *config.Model) { m.Mode = "completion"; m.ContextSize = 8192 }),
			model("nomic", config.ModelTypeTextEmbedding, func(m *config.Model) { m.ContextSize = 2048 }),
			model("bge-rerank", config.ModelTypeRerank),
			model("ctx-rerank", config.ModelTypeRerank, func(m *config.Model) { m.ContextSize = 512 }),
		},
	}
	unconfigured := config.Provider{
		Name: "anthropic", APIKeyEnv: "ANTHROPIC_API_KEY", RequiresAPIKey: true,
		Models: []config.Model{llm("claude")},
	}
	onlyDeprecated := config.Provider{
		Name: "legacy", RequiresAPIKey: false,
		Models: []config.Model{llm("old", deprecated), llm("off", disabled)},
	}
	providers := []config.Provider{unconfigured, openai, onlyDeprecated, local}
	withKey := env(map[string]string{"OPENAI_API_KEY": "sk-test"})

	wantOpenAILLM := ProviderModels{
		Provider:      "openai",
		Label:         map[string]string{"en_US": "OpenAI", "zh_Hans": "OpenAI"},
		IconSmall:     map[string]string{"en_US": "https://x/o.svg", "zh_Hans": "https://x/o.svg"},
		IconSmallDark: nil,
		Status:        "active",
		Models: []Model{
			{
				Name: "gpt-4o-mini", Label: map[string]string{"en_US": "GPT-4o mini", "zh_Hans": "GPT-4o mini"},
				Type: TypeLLM, Features: []string{"multi-tool-call", "vision"}, FetchFrom: "predefined-model",
				Properties: map[string]any{"mode": "chat", "context_size": 128000}, Status: "active",
			},
			{
				Name: "o1", Label: map[string]string{"en_US": "o1", "zh_Hans": "o1"}, Type: TypeLLM,
				FetchFrom: "predefined-model", Properties: map[string]any{"mode": "chat", "context_size": 4096}, Status: "active",
			},
		},
	}
	wantOllamaLLM := ProviderModels{
		Provider:      "ollama",
		Label:         map[string]string{"en_US": "ollama", "zh_Hans": "ollama"},
		IconSmall:     map[string]string{},
		IconSmallDark: map[string]string{"en_US": "https://x/d.svg"},
		Status:        "active",
		Models: []Model{{
			Name: "llama3", Label: map[string]string{"en_US": "llama3", "zh_Hans": "llama3"}, Type: TypeLLM,
			FetchFrom: "predefined-model", Properties: map[string]any{"mode": "completion", "context_size": 8192}, Status: "active",
		}},
	}

	tests := []struct {
		name   string
		getenv func(string) string
		typ    Type
		want   []ProviderModels
	}{
		{
			name:   "llm with key: unconfigured and all-deprecated providers omitted",
			getenv: withKey, typ: TypeLLM,
			want: []ProviderModels{wantOpenAILLM, wantOllamaLLM},
		},
		{
			name:   "llm without key: only the keyless provider",
			getenv: env(nil), typ: TypeLLM,
			want: []ProviderModels{wantOllamaLLM},
		},
		{
			name: "blank key does not configure", getenv: env(map[string]string{"OPENAI_API_KEY": "  "}), typ: TypeLLM,
			want: []ProviderModels{wantOllamaLLM},
		},
		{
			name: "text-embedding properties", getenv: withKey, typ: TypeTextEmbedding,
			want: []ProviderModels{
				{
					Provider: "openai", Label: wantOpenAILLM.Label, IconSmall: wantOpenAILLM.IconSmall, Status: "active",
					Models: []Model{{
						Name: "text-embedding-3-small", Label: map[string]string{"en_US": "text-embedding-3-small", "zh_Hans": "text-embedding-3-small"},
						Type: TypeTextEmbedding, FetchFrom: "predefined-model",
						Properties: map[string]any{"context_size": 8191, "max_chunks": 32}, Status: "active",
					}},
				},
				{
					Provider: "ollama", Label: wantOllamaLLM.Label, IconSmall: map[string]string{}, IconSmallDark: wantOllamaLLM.IconSmallDark, Status: "active",
					Models: []Model{{
						Name: "nomic", Label: map[string]string{"en_US": "nomic", "zh_Hans": "nomic"},
						Type: TypeTextEmbedding, FetchFrom: "predefined-model",
						Properties: map[string]any{"context_size": 2048}, Status: "active",
					}},
				},
			},
		},
		{
			name: "rerank: context_size only when set", getenv: withKey, typ: TypeRerank,
			want: []ProviderModels{{
				Provider: "ollama", Label: wantOllamaLLM.Label, IconSmall: map[string]string{}, IconSmallDark: wantOllamaLLM.IconSmallDark, Status: "active",
				Models: []Model{
					{Name: "bge-rerank", Label: map[string]string{"en_US": "bge-rerank", "zh_Hans": "bge-rerank"}, Type: TypeRerank,
						FetchFrom: "predefined-model", Properties: map[string]any{}, Status: "active"},
					{Name: "ctx-rerank", Label: map[string]string{"en_US": "ctx-rerank", "zh_Hans": "ctx-rerank"}, Type: TypeRerank,
						FetchFrom: "predefined-model", Properties: map[string]any{"context_size": 512}, Status: "active"},
				},
			}},
		},
		{name: "no provider has the type", getenv: withKey, typ: TypeTTS, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := NewCatalog(providers, tt.getenv).ByType(tt.typ)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ByType(%s)\n got %#v\nwant %#v", tt.typ, got, tt.want)
			}
		})
	}
}

func TestByTypeDoesNotAlias(t *testing.T) {
	t.Parallel()
	p := config.Provider{Name: "p", Label: config.I18n{"en_US": "P"}, IconSmall: config.I18n{"en_US": "https://x"},
		Models: []config.Model{llm("m", func(m *config.Model) { m.Features = []string{"vision"} })}}
	c := NewCatalog([]config.Provider{p}, nil)
	got := c.ByType(TypeLLM)
	got[0].Label["en_US"] = "changed"
	got[0].IconSmall["en_US"] = "changed"
	got[0].Models[0].Features[0] = "changed"
	if p.Label["en_US"] != "P" || p.IconSmall["en_US"] != "https://x" || p.Models[0].Features[0] != "vision" {
		t.Fatal("ByType result aliases the configuration")
	}
	if again := c.ByType(TypeLLM); again[0].Label["en_US"] != "P" {
		t.Fatal("ByType result aliases the catalog")
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	providers := []config.Provider{
		{
			Name: "openai", Type: config.ProviderTypeOpenAICompatible, BaseURL: "https://api.openai.com/v1", Timeout: time.Minute,
			APIKeyEnv: "OPENAI_API_KEY", RequiresAPIKey: true,
			Models: []config.Model{
				llm("gpt", func(m *config.Model) {
					m.MaxOutputTokens = 1000
					m.Features = []string{"vision"}
					m.Pricing = &config.Pricing{Input: "0.15", Output: "0.60", Unit: "0.000001", Per: "1m", Currency: "USD"}
				}),
				llm("old", deprecated),
				llm("off", disabled),
				model("emb", config.ModelTypeTextEmbedding, func(m *config.Model) { m.ContextSize = 8191; m.MaxChunks = 32 }),
			},
		},
		{Name: "closed", APIKeyEnv: "CLOSED_KEY", RequiresAPIKey: true, Models: []config.Model{llm("x")}},
	}
	c := NewCatalog(providers, env(map[string]string{"OPENAI_API_KEY": "sk-1"}))

	spec, err := c.Lookup(TypeLLM, "openai", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	want := ModelSpec{
		Provider: "openai", ProviderType: "openai-compatible", BaseURL: "https://api.openai.com/v1", Timeout: time.Minute,
		Name: "gpt", Type: TypeLLM, Mode: "chat", ContextSize: 4096, MaxOutputTokens: 1000, Features: []string{"vision"},
		Pricing: &Pricing{Input: "0.15", Output: "0.60", Unit: "0.000001", Currency: "USD"},
	}
	if !reflect.DeepEqual(spec, want) {
		t.Fatalf("Lookup\n got %+v\nwant %+v", spec, want)
	}
	if !spec.HasFeature("vision") || spec.HasFeature("tool-call") {
		t.Fatal("HasFeature")
	}
	if c.APIKey("openai") != "sk-1" || c.APIKey("closed") != "" || c.APIKey("nope") != "" {
		t.Fatal("APIKey")
	}

	tests := []struct {
		typ            Type
		provider, name string
		want           error
	}{
		{TypeLLM, "openai", "old", nil},
		{TypeTextEmbedding, "openai", "emb", nil},
		{TypeLLM, "openai", "emb", ErrModelNotFound},
		{TypeLLM, "openai", "off", ErrModelNotFound},
		{TypeLLM, "openai", "missing", ErrModelNotFound},
		{TypeLLM, "nope", "gpt", ErrProviderNotFound},
		{TypeLLM, "closed", "x", ErrProviderNotConfigured},
	}
	for _, tt := range tests {
		_, err := c.Lookup(tt.typ, tt.provider, tt.name)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("Lookup(%s, %s, %s) = %v, want %v", tt.typ, tt.provider, tt.name, err, tt.want)
		}
	}
	if s, ok := c.LLM("openai", "old"); !ok || !s.Deprecated {
		t.Error("deprecated model should still be usable")
	}
	if _, ok := c.LLM("openai", "off"); ok {
		t.Error("disabled model found")
	}
	if s, ok := c.TextEmbedding("openai", "emb"); !ok || s.MaxChunks != 32 || s.Mode != "" || s.Pricing != nil {
		t.Errorf("TextEmbedding: %+v %v", s, ok)
	}
}

// TestSampleCatalog runs the shipped sample config through the catalog: the
// listing the server gives out of the box.
func TestSampleCatalog(t *testing.T) {
	t.Parallel()
	f, err := config.LoadFile("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := NewCatalog(f.Providers, env(nil)).ByType(TypeLLM); got != nil {
		t.Fatalf("without OPENAI_API_KEY nothing is listed, got %+v", got)
	}
	c := NewCatalog(f.Providers, env(map[string]string{"OPENAI_API_KEY": "sk-x"}))
	emb := c.ByType(TypeTextEmbedding)
	if len(emb) != 1 || emb[0].Provider != "openai" || len(emb[0].Models) != 1 ||
		!reflect.DeepEqual(emb[0].Models[0].Properties, map[string]any{"context_size": 8191, "max_chunks": 32}) || emb[0].Models[0].Features != nil {
		t.Fatalf("sample embeddings: %+v", emb)
	}
	llms := c.ByType(TypeLLM)
	if len(llms) != 1 || llms[0].Models[0].Name != "gpt-4o-mini" || !slices.Contains(llms[0].Models[0].Features, "vision") {
		t.Fatalf("sample llms: %+v", llms)
	}
}
