package main

import (
	"log/slog"

	"github.com/parleyhq/parley/internal/models"
)

// warnUnusableProviders logs a warning for every model provider of the configuration that cannot
// be used, saying why and what to set, so that a server started without, say, OPENAI_API_KEY says
// so at once rather than at the first chat.
func warnUnusableProviders(log *slog.Logger, catalog *models.Catalog) {
	for _, p := range catalog.Problems() {
		log.Warn("model provider is not usable: apps that use it answer provider_not_initialize",
			"provider", p.Provider, "reason", p.Reason)
	}
}
