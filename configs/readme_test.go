package configs_test

import (
	"os"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/config"
)

// TestREADMELocalModelConfig parses the local-model config the README shows, so that the copy a
// newcomer pastes is a valid config: a provider usable without a key, and an app that chats
// with the knowledge base the walkthrough fills.
func TestREADMELocalModelConfig(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## A local model\n")
	if !ok {
		t.Fatal("README has no local model section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the local model section has no yaml block")
	}
	block, _, _ = strings.Cut(block, "```")
	noEnv := func(string) string { return "" }
	f, err := config.ParseFile([]byte(block), noEnv)
	if err != nil {
		t.Fatalf("the README's config does not parse: %v\n%s", err, block)
	}
	p, ok := f.Provider("local")
	if !ok || p.RequiresAPIKey || !p.Configured(noEnv) || p.BaseURL != "http://127.0.0.1:11434/v1" {
		t.Fatalf("provider %+v", p)
	}
	if _, ok := p.Model(config.ModelTypeLLM, "llama3.2"); !ok {
		t.Fatal("no llm llama3.2")
	}
	if _, ok := p.Model(config.ModelTypeTextEmbedding, "nomic-embed-text"); !ok {
		t.Fatal("no text-embedding nomic-embed-text")
	}
	app, ok := f.App("helpdesk")
	if !ok || len(app.KnowledgeBases) != 1 || app.KnowledgeBases[0] != "handbook" {
		t.Fatalf("app %+v", app)
	}
	if kb, ok := f.KnowledgeBase("handbook"); !ok || kb.Embedding.Model != "nomic-embed-text" {
		t.Fatalf("knowledge base %+v", kb)
	}
}
