package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// External knowledge APIs are registered for the workspace: in the config file
// (external_knowledge_apis, made sure of at start by SeedConfigured) or with
// `parley datasets external-api add`. An external knowledge base is bound to one by id.

// ExternalAPIInput describes an external knowledge API to register.
type ExternalAPIInput struct {
	Name        string
	Description string
	// Endpoint is the base URL; Parley calls Endpoint + "/retrieval".
	Endpoint string
	// APIKeyEnv names the environment variable of the server that holds the API key.
	APIKeyEnv string
}

// maxExternalAPIName bounds the name of an external knowledge API (Dify's).
const maxExternalAPIName = 100

func (in *ExternalAPIInput) check() error {
	in.Name = strings.TrimSpace(in.Name)
	in.Endpoint = strings.TrimRight(strings.TrimSpace(in.Endpoint), "/")
	in.APIKeyEnv = strings.TrimSpace(in.APIKeyEnv)
	switch n := utf8.RuneCountInString(in.Name); {
	case n == 0:
		return invalidParam("The name of an external knowledge API is required.")
	case n > maxExternalAPIName:
		return invalidParam(fmt.Sprintf("The name of an external knowledge API cannot exceed %d characters.", maxExternalAPIName))
	}
	if in.Endpoint == "" {
		return invalidParam("endpoint is required")
	}
	if err := config.CheckHTTPURL(in.Endpoint); err != nil {
		return invalidParam("invalid endpoint: " + err.Error())
	}
	if !config.ValidEnvName(in.APIKeyEnv) {
		return invalidParam(fmt.Sprintf("%q is not the name of an environment variable: name the variable that holds the API key, "+
			"never the key itself", in.APIKeyEnv))
	}
	return nil
}

// CreateExternalAPI registers an external knowledge API. A name taken is ErrNameDuplicate's
// kind, with its own message.
func (s *Service) CreateExternalAPI(ctx context.Context, in ExternalAPIInput) (store.ExternalKnowledgeAPI, error) {
	if err := in.check(); err != nil {
		return store.ExternalKnowledgeAPI{}, err
	}
	a, err := s.st.CreateExternalKnowledgeAPI(ctx, store.ExternalKnowledgeAPI{Name: in.Name, Description: in.Description,
		Endpoint: in.Endpoint, APIKeyEnv: in.APIKeyEnv, CreatedAt: s.nowUTC()})
	if errors.Is(err, store.ErrConflict) {
		return store.ExternalKnowledgeAPI{}, newError(KindNameDuplicate, fmt.Sprintf("An external knowledge API named %q already exists.", in.Name))
	}
	if err != nil {
		return store.ExternalKnowledgeAPI{}, fmt.Errorf("knowledge: create external knowledge api: %w", err)
	}
	return a, nil
}

// ExternalAPIs lists the external knowledge APIs by name, with how many knowledge bases each
// is bound to.
func (s *Service) ExternalAPIs(ctx context.Context) ([]store.ExternalKnowledgeAPI, []int, error) {
	list, err := s.st.ListExternalKnowledgeAPIs(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge: external knowledge apis: %w", err)
	}
	used := make([]int, len(list))
	for i, a := range list {
		if used[i], err = s.st.ExternalKnowledgeAPIUsage(ctx, a.ID); err != nil {
			return nil, nil, fmt.Errorf("knowledge: external knowledge apis: %w", err)
		}
	}
	return list, used, nil
}

// ExternalAPI finds an external knowledge API by id, else by name.
func (s *Service) ExternalAPI(ctx context.Context, ref string) (store.ExternalKnowledgeAPI, error) {
	a, err := s.st.ExternalKnowledgeAPI(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		a, err = s.st.ExternalKnowledgeAPIByName(ctx, ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.ExternalKnowledgeAPI{}, notFound(fmt.Sprintf("No external knowledge API has the id or name %q.", ref))
	}
	if err != nil {
		return store.ExternalKnowledgeAPI{}, fmt.Errorf("knowledge: external knowledge api %q: %w", ref, err)
	}
	return a, nil
}

// DeleteExternalAPI removes an external knowledge API (by id or name) that no knowledge base is
// bound to, as Dify refuses to delete one in use.
func (s *Service) DeleteExternalAPI(ctx context.Context, ref string) error {
	a, err := s.ExternalAPI(ctx, ref)
	if err != nil {
		return err
	}
	err = s.st.DeleteExternalKnowledgeAPI(ctx, a.ID)
	if errors.Is(err, store.ErrConflict) {
		n, _ := s.st.ExternalKnowledgeAPIUsage(ctx, a.ID)
		return newError(KindInUse, fmt.Sprintf("The external knowledge API %q is bound to %d knowledge base(s): delete them, "+
			"or bind them to another API, first.", a.Name, n))
	}
	if err != nil {
		return fmt.Errorf("knowledge: delete external knowledge api: %w", err)
	}
	return nil
}

// seedExternalAPIs makes the store hold the config file's external knowledge APIs as declared:
// a missing one is created, one whose endpoint, key variable or description changed is updated.
// It returns their ids by name.
func (s *Service) seedExternalAPIs(ctx context.Context, apis []config.ExternalKnowledgeAPI) (map[string]string, error) {
	ids := make(map[string]string, len(apis))
	for _, c := range apis {
		in := ExternalAPIInput{Name: c.Name, Description: c.Description, Endpoint: c.Endpoint, APIKeyEnv: c.APIKeyEnv}
		if err := in.check(); err != nil {
			return nil, fmt.Errorf("knowledge: external knowledge api %q: %w", c.Name, err)
		}
		a, err := s.st.ExternalKnowledgeAPIByName(ctx, in.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			a, err = s.CreateExternalAPI(ctx, in)
		case err == nil && (a.Endpoint != in.Endpoint || a.APIKeyEnv != in.APIKeyEnv || a.Description != in.Description):
			a.Endpoint, a.APIKeyEnv, a.Description, a.UpdatedAt = in.Endpoint, in.APIKeyEnv, in.Description, s.nowUTC()
			err = s.st.UpdateExternalKnowledgeAPI(ctx, a)
		}
		if err != nil {
			return nil, fmt.Errorf("knowledge: seed external knowledge api %q: %w", in.Name, err)
		}
		ids[a.Name] = a.ID
	}
	return ids, nil
}

// configuredExternal is the creation of a config file's external knowledge base.
func configuredExternal(kb config.KnowledgeBase, apiID string) CreateDatasetInput {
	x := kb.External
	es := ExternalSetting{TopK: x.TopK}
	if es.TopK == 0 {
		es.TopK = DefaultExternalTopK
	}
	if x.ScoreThreshold != nil {
		es.ScoreThreshold, es.ScoreThresholdEnabled = *x.ScoreThreshold, true
	}
	raw, _ := json.Marshal(es)
	return CreateDatasetInput{Name: kb.Name, Description: kb.Description, Provider: store.DatasetProviderExternal,
		ExternalKnowledgeAPIID: apiID, ExternalKnowledgeID: x.KnowledgeID, ExternalRetrievalModel: raw}
}
