// Package llm is the one path by which Parley calls a chat model: finding the model and its
// provider's client, turning completion parameters as a Dify file writes them into what the
// upstream accepts, fitting the reply into the model's context, streaming the answer while
// metering it, and the tool loops agents run (function calling and ReAct). Chatbot, Completion
// and agent apps and the workflow nodes that call models all go through it, so that making a
// model call cheaper makes every one of them cheaper.
package llm

import (
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
)

// Catalog finds a model's spec; *models.Catalog implements it.
type Catalog interface {
	Lookup(t models.Type, provider, name string) (models.ModelSpec, error)
}

// Clients gives the client of a model's provider; the provider registry implements it.
type Clients interface {
	ChatModel(spec models.ModelSpec) (providers.ChatModel, error)
}

// Model is a chat model ready to call: its spec and its provider's client.
type Model struct {
	Spec   models.ModelSpec
	Client providers.ChatModel
}

// Resolve looks up a chat model by provider and name and gets its provider's client.
func Resolve(c Catalog, p Clients, provider, name string) (Model, error) {
	spec, err := c.Lookup(models.TypeLLM, provider, name)
	if err != nil {
		return Model{}, err
	}
	client, err := p.ChatModel(spec)
	if err != nil {
		return Model{}, err
	}
	return Model{Spec: spec, Client: client}, nil
}
