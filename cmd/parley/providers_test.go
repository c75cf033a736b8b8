package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
)

// TestWarnUnusableProviders: every provider that cannot be used gets one warning naming it and
// what to set; usable ones (a key set, or none needed) get none.
func TestWarnUnusableProviders(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	env := map[string]string{"MISTRAL_API_KEY": "k"}
	catalog := models.NewCatalog([]config.Provider{
		{Name: "openai", APIKeyEnv: "OPENAI_API_KEY", RequiresAPIKey: true},
		{Name: "mistral", APIKeyEnv: "MISTRAL_API_KEY", RequiresAPIKey: true},
		{Name: "ollama", RequiresAPIKey: false},
		{Name: "keyless", RequiresAPIKey: true},
	}, func(k string) string { return env[k] })
	warnUnusableProviders(log, catalog)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("warnings:\n%s", buf.String())
	}
	if !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "provider=openai") ||
		!strings.Contains(lines[0], "set the environment variable OPENAI_API_KEY") {
		t.Fatalf("openai: %s", lines[0])
	}
	if !strings.Contains(lines[1], "provider=keyless") || !strings.Contains(lines[1], "api_key_env") {
		t.Fatalf("keyless: %s", lines[1])
	}
}
