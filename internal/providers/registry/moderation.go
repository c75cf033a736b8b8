package registry

import (
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
)

// Moderator returns the client for spec's provider, for moderation models.
func (p *Set) Moderator(spec models.ModelSpec) (providers.Moderator, error) {
	return p.client(spec)
}
