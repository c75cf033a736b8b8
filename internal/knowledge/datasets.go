package knowledge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/store"
)

// CreateDatasetInput is the body of POST /datasets.
type CreateDatasetInput struct {
	Name                   string
	Description            string
	IndexingTechnique      string
	Permission             string
	EmbeddingModel         string
	EmbeddingModelProvider string
	RetrievalModel         json.RawMessage
	// Provider is store.DatasetProviderExternal for an external knowledge base, bound to the
	// external knowledge API ExternalKnowledgeAPIID and its knowledge ExternalKnowledgeID,
	// retrieving with ExternalRetrievalModel (else the top_k and threshold of RetrievalModel);
	// "" or vendor for Parley's own. An external knowledge base has no indexing technique or
	// embedding model.
	Provider               string
	ExternalKnowledgeAPIID string
	ExternalKnowledgeID    string
	ExternalRetrievalModel json.RawMessage
}

// UpdateDatasetInput is the body of PATCH /datasets/{id}; nil fields are left unchanged.
type UpdateDatasetInput struct {
	Name                   *string
	Description            *string
	IndexingTechnique      *string
	Permission             *string
	EmbeddingModel         *string
	EmbeddingModelProvider *string
	RetrievalModel         json.RawMessage
	// The binding and setting of an external knowledge base (ignored for others); the technique
	// and embedding model are ignored for an external one.
	ExternalKnowledgeAPIID *string
	ExternalKnowledgeID    *string
	ExternalRetrievalModel json.RawMessage
}

// DatasetView is a dataset with everything its API shape derives.
type DatasetView struct {
	store.Dataset
	Stats              store.DatasetStats
	Tags               []store.Tag
	MetadataFields     []store.MetadataField
	EmbeddingAvailable bool
	RetrievalModel     RetrievalModel
	AppCount           int
	// External is the binding of an external knowledge base; nil for Parley's own.
	External *ExternalView
}

// ExternalView is what an external knowledge base is bound to.
type ExternalView struct {
	// API is the external knowledge API (only its ID when it no longer exists).
	API         store.ExternalKnowledgeAPI
	KnowledgeID string
	Setting     ExternalSetting
}

func validName(name string) error {
	n := utf8.RuneCountInString(strings.TrimSpace(name))
	if n < 1 || n > 40 {
		return invalidParam("Name must be between 1 to 40 characters.")
	}
	return nil
}

// checkEmbedding validates a high-quality dataset's embedding model and any rerank model named in
// its retrieval model, as Dify does on create and update.
func (s *Service) checkEmbedding(provider, model string, rm RetrievalModel) error {
	if provider != "" && model != "" {
		if _, err := s.catalog.Lookup(models.TypeTextEmbedding, providerName(provider), model); err != nil {
			return ErrNoEmbeddingModel.withCause(err)
		}
	}
	if rm.RerankingEnable && rm.RerankingModel.ModelName != "" {
		if _, err := s.catalog.Lookup(models.TypeRerank, providerName(rm.RerankingModel.ProviderName), rm.RerankingModel.ModelName); err != nil {
			return invalidParam("Invalid rerank model: " + rm.RerankingModel.ModelName).withCause(err)
		}
	}
	return nil
}

func (e *Error) withCause(err error) *Error {
	c := *e
	c.cause = err
	return &c
}

// defaultEmbedding picks the first configured text-embedding model (Dify's workspace default).
func (s *Service) defaultEmbedding() (provider, model string, ok bool) {
	for _, p := range s.catalog.ByType(models.TypeTextEmbedding) {
		for _, m := range p.Models {
			return p.Provider, m.Name, true
		}
	}
	return "", "", false
}

// CreateDataset creates an empty knowledge base, or an external one.
func (s *Service) CreateDataset(ctx context.Context, in CreateDatasetInput) (DatasetView, error) {
	if err := validName(in.Name); err != nil {
		return DatasetView{}, err
	}
	if utf8.RuneCountInString(in.Description) > 400 {
		return DatasetView{}, invalidParam("Description cannot exceed 400 characters.")
	}
	switch in.Provider {
	case "", store.DatasetProviderVendor:
	case store.DatasetProviderExternal:
		return s.createExternalDataset(ctx, in)
	default:
		return DatasetView{}, invalidParam("Invalid provider.")
	}
	switch in.IndexingTechnique {
	case "", store.TechniqueEconomy, store.TechniqueHighQuality:
	default:
		return DatasetView{}, invalidParam("Invalid indexing technique.")
	}
	if in.Permission == "" {
		in.Permission = store.PermissionOnlyMe
	}
	rm, err := parseRetrievalModel(in.RetrievalModel, 2)
	if err != nil {
		return DatasetView{}, err
	}
	d := store.Dataset{Name: strings.TrimSpace(in.Name), Description: in.Description, Provider: store.DatasetProviderVendor,
		Permission: in.Permission, IndexingTechnique: in.IndexingTechnique, EnableAPI: true, KeywordNumber: 10,
		CreatedBy: s.account, UpdatedBy: s.account}
	if len(in.RetrievalModel) > 0 && string(in.RetrievalModel) != "null" {
		d.RetrievalModel, _ = json.Marshal(rm)
	}
	if in.IndexingTechnique == store.TechniqueHighQuality {
		if in.EmbeddingModel == "" || in.EmbeddingModelProvider == "" {
			p, m, ok := s.defaultEmbedding()
			if !ok {
				return DatasetView{}, ErrNoEmbeddingModel
			}
			in.EmbeddingModelProvider, in.EmbeddingModel = p, m
		}
		d.EmbeddingModel, d.EmbeddingModelProvider = in.EmbeddingModel, providerName(in.EmbeddingModelProvider)
	}
	if err := s.checkEmbedding(d.EmbeddingModelProvider, d.EmbeddingModel, rm); err != nil {
		return DatasetView{}, err
	}
	return s.createDataset(ctx, d)
}

func (s *Service) createDataset(ctx context.Context, d store.Dataset) (DatasetView, error) {
	d.CreatedAt = s.nowUTC()
	d.UpdatedAt = d.CreatedAt
	created, err := s.st.CreateDataset(ctx, d)
	if errors.Is(err, store.ErrConflict) {
		return DatasetView{}, ErrNameDuplicate
	}
	if errors.Is(err, store.ErrNotFound) {
		// The API was removed between the check and the insert.
		return DatasetView{}, errExternalAPINotFound
	}
	if err != nil {
		return DatasetView{}, fmt.Errorf("knowledge: create dataset: %w", err)
	}
	return s.view(ctx, created)
}

// errExternalAPINotFound: no external knowledge API has the id given (Dify's message).
var errExternalAPINotFound = invalidParam("External API template not found.")

// maxExternalKnowledgeID bounds the id of a knowledge in an external service.
const maxExternalKnowledgeID = 255

// createExternalDataset creates an external knowledge base, as Dify's create_empty_dataset
// does with provider external: bound to an existing external knowledge API and a knowledge id
// of that service, with its retrieval setting.
func (s *Service) createExternalDataset(ctx context.Context, in CreateDatasetInput) (DatasetView, error) {
	d := store.Dataset{Name: strings.TrimSpace(in.Name), Description: in.Description, Provider: store.DatasetProviderExternal,
		Permission: cmp.Or(in.Permission, store.PermissionOnlyMe), EnableAPI: true, KeywordNumber: 10,
		CreatedBy: s.account, UpdatedBy: s.account}
	if err := s.bindExternal(ctx, &d, &in.ExternalKnowledgeAPIID, &in.ExternalKnowledgeID); err != nil {
		return DatasetView{}, err
	}
	raw := in.ExternalRetrievalModel
	if len(raw) == 0 || string(raw) == "null" {
		raw = in.RetrievalModel
	}
	es, err := parseExternalSetting(raw)
	if err != nil {
		return DatasetView{}, err
	}
	d.RetrievalModel, _ = json.Marshal(es)
	return s.createDataset(ctx, d)
}

// bindExternal checks and sets the binding of external knowledge base d: the API apiID (which
// must exist) and the knowledge id; nil keeps d's.
func (s *Service) bindExternal(ctx context.Context, d *store.Dataset, apiID, knowledgeID *string) error {
	if apiID != nil {
		id := strings.TrimSpace(*apiID)
		if id == "" {
			return invalidParam("external_knowledge_api_id is required")
		}
		api, err := s.st.ExternalKnowledgeAPI(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return errExternalAPINotFound
		}
		if err != nil {
			return fmt.Errorf("knowledge: external knowledge api %s: %w", id, err)
		}
		d.ExternalKnowledgeAPIID = api.ID
	}
	if knowledgeID != nil {
		id := strings.TrimSpace(*knowledgeID)
		switch {
		case id == "":
			return invalidParam("external_knowledge_id is required")
		case utf8.RuneCountInString(id) > maxExternalKnowledgeID:
			return invalidParam(fmt.Sprintf("external_knowledge_id cannot exceed %d characters", maxExternalKnowledgeID))
		}
		d.ExternalKnowledgeID = id
	}
	return nil
}

// dataset loads a dataset for a request: an unknown (or non-uuid) id is 404, API access off 403.
func (s *Service) dataset(ctx context.Context, id string) (store.Dataset, error) {
	if !isUUID(id) {
		return store.Dataset{}, ErrDatasetNotFound
	}
	d, err := s.st.Dataset(ctx, strings.ToLower(id))
	if err != nil {
		return store.Dataset{}, storeErr(err, ErrDatasetNotFound, "dataset")
	}
	if !d.EnableAPI {
		return store.Dataset{}, ErrAPIDisabled
	}
	return d, nil
}

// GetDataset returns one dataset.
func (s *Service) GetDataset(ctx context.Context, id string) (DatasetView, error) {
	d, err := s.dataset(ctx, id)
	if err != nil {
		return DatasetView{}, err
	}
	return s.view(ctx, d)
}

// CheckDataset runs the dataset guard alone.
func (s *Service) CheckDataset(ctx context.Context, id string) (store.Dataset, error) {
	return s.dataset(ctx, id)
}

// localDataset is dataset for an operation on documents, chunks or metadata fields, which an
// external knowledge base refuses (ErrExternalDataset).
func (s *Service) localDataset(ctx context.Context, id string) (store.Dataset, error) {
	d, err := s.dataset(ctx, id)
	if err == nil && d.Provider == store.DatasetProviderExternal {
		return store.Dataset{}, ErrExternalDataset
	}
	return d, err
}

// CheckLocalDataset runs the guard of the operations on documents alone: CheckDataset, and
// ErrExternalDataset for an external knowledge base.
func (s *Service) CheckLocalDataset(ctx context.Context, id string) (store.Dataset, error) {
	return s.localDataset(ctx, id)
}

// ListDatasets returns a page of datasets.
func (s *Service) ListDatasets(ctx context.Context, q store.DatasetQuery) ([]DatasetView, int, error) {
	items, total, err := s.st.ListDatasets(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("knowledge: list datasets: %w", err)
	}
	views, err := s.views(ctx, items)
	return views, total, err
}

// UpdateDataset changes the fields given.
func (s *Service) UpdateDataset(ctx context.Context, id string, in UpdateDatasetInput) (DatasetView, error) {
	d, err := s.dataset(ctx, id)
	if err != nil {
		return DatasetView{}, err
	}
	if d.Provider == store.DatasetProviderExternal {
		return s.updateExternalDataset(ctx, d, in)
	}
	if in.Name != nil {
		if err := validName(*in.Name); err != nil {
			return DatasetView{}, err
		}
		d.Name = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > 400 {
			return DatasetView{}, invalidParam("Description cannot exceed 400 characters.")
		}
		d.Description = *in.Description
	}
	if in.Permission != nil && *in.Permission != "" {
		d.Permission = *in.Permission
	}
	if in.IndexingTechnique != nil && *in.IndexingTechnique != "" && *in.IndexingTechnique != d.IndexingTechnique {
		if d.IndexingTechnique != "" {
			// Switching technique would need every document re-indexed; Parley does not do that
			// behind the client's back.
			return DatasetView{}, invalidParam("Changing the indexing technique of a knowledge base that has one is not supported.")
		}
		d.IndexingTechnique = *in.IndexingTechnique
	}
	if in.EmbeddingModel != nil && in.EmbeddingModelProvider != nil && *in.EmbeddingModel != "" {
		if d.EmbeddingModel != "" && (d.EmbeddingModel != *in.EmbeddingModel || d.EmbeddingModelProvider != providerName(*in.EmbeddingModelProvider)) && s.hasDocuments(ctx, d.ID) {
			return DatasetView{}, invalidParam("Changing the embedding model of a knowledge base with documents is not supported.")
		}
		d.EmbeddingModel, d.EmbeddingModelProvider = *in.EmbeddingModel, providerName(*in.EmbeddingModelProvider)
	}
	rm, err := parseRetrievalModel(d.RetrievalModel, 2)
	if err != nil {
		return DatasetView{}, err
	}
	if len(in.RetrievalModel) > 0 && string(in.RetrievalModel) != "null" {
		if rm, err = parseRetrievalModel(in.RetrievalModel, 2); err != nil {
			return DatasetView{}, err
		}
		d.RetrievalModel, _ = json.Marshal(rm)
	}
	if d.IndexingTechnique == store.TechniqueHighQuality {
		if d.EmbeddingModel == "" {
			p, m, ok := s.defaultEmbedding()
			if !ok {
				return DatasetView{}, ErrNoEmbeddingModel
			}
			d.EmbeddingModelProvider, d.EmbeddingModel = p, m
		}
		if err := s.checkEmbedding(d.EmbeddingModelProvider, d.EmbeddingModel, rm); err != nil {
			return DatasetView{}, err
		}
	}
	return s.saveDataset(ctx, d)
}

func (s *Service) saveDataset(ctx context.Context, d store.Dataset) (DatasetView, error) {
	d.UpdatedBy = s.account
	d.UpdatedAt = s.nowUTC()
	err := s.st.UpdateDataset(ctx, d)
	switch {
	case errors.Is(err, store.ErrConflict):
		// Dify's update raises a plain ValueError here (400), unlike create's 409.
		return DatasetView{}, invalidParam("Dataset name already exists")
	case errors.Is(err, store.ErrNotFound) && d.ExternalKnowledgeAPIID != "":
		if _, gone := s.st.Dataset(ctx, d.ID); errors.Is(gone, store.ErrNotFound) {
			return DatasetView{}, ErrDatasetNotFound
		}
		return DatasetView{}, errExternalAPINotFound
	case errors.Is(err, store.ErrNotFound):
		return DatasetView{}, ErrDatasetNotFound
	case err != nil:
		return DatasetView{}, fmt.Errorf("knowledge: update dataset: %w", err)
	}
	return s.view(ctx, d)
}

// updateExternalDataset is UpdateDataset for an external knowledge base, as Dify's
// _update_external_dataset: name, description, permission, the retrieval setting
// (external_retrieval_model, else the top_k and threshold of retrieval_model) and the binding.
func (s *Service) updateExternalDataset(ctx context.Context, d store.Dataset, in UpdateDatasetInput) (DatasetView, error) {
	if in.Name != nil {
		if err := validName(*in.Name); err != nil {
			return DatasetView{}, err
		}
		d.Name = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > 400 {
			return DatasetView{}, invalidParam("Description cannot exceed 400 characters.")
		}
		d.Description = *in.Description
	}
	if in.Permission != nil && *in.Permission != "" {
		d.Permission = *in.Permission
	}
	if err := s.bindExternal(ctx, &d, in.ExternalKnowledgeAPIID, in.ExternalKnowledgeID); err != nil {
		return DatasetView{}, err
	}
	for _, raw := range []json.RawMessage{in.ExternalRetrievalModel, in.RetrievalModel} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		// A partial setting changes only the members it has.
		es, err := parseExternalSetting(d.RetrievalModel)
		if err != nil {
			return DatasetView{}, err
		}
		merged, _ := json.Marshal(es)
		if merged, err = mergeJSON(merged, raw); err != nil {
			return DatasetView{}, invalidParam(fmt.Sprintf("external_retrieval_model is invalid: %v", err))
		}
		if es, err = parseExternalSetting(merged); err != nil {
			return DatasetView{}, err
		}
		d.RetrievalModel, _ = json.Marshal(es)
		break
	}
	return s.saveDataset(ctx, d)
}

// mergeJSON lays the members of object patch over object base.
func mergeJSON(base, patch json.RawMessage) (json.RawMessage, error) {
	var b, p map[string]json.RawMessage
	if err := json.Unmarshal(base, &b); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	maps.Copy(b, p)
	return json.Marshal(b)
}

func (s *Service) hasDocuments(ctx context.Context, datasetID string) bool {
	st, err := s.st.DatasetStats(ctx, []string{datasetID})
	return err != nil || st[datasetID].DocumentCount > 0
}

// DeleteDataset deletes a dataset that no app uses, stopping the indexing of its documents.
func (s *Service) DeleteDataset(ctx context.Context, id string) error {
	d, err := s.dataset(ctx, id)
	if err != nil {
		return err
	}
	if s.appsUsing(d.Name) > 0 {
		return ErrDatasetInUse
	}
	done := s.stopDataset(d.ID)
	defer done()
	if err := s.st.DeleteDataset(ctx, d.ID); err != nil {
		return storeErr(err, ErrDatasetNotFound, "delete dataset")
	}
	return nil
}

func (s *Service) view(ctx context.Context, d store.Dataset) (DatasetView, error) {
	v, err := s.views(ctx, []store.Dataset{d})
	if err != nil {
		return DatasetView{}, err
	}
	return v[0], nil
}

func (s *Service) views(ctx context.Context, ds []store.Dataset) ([]DatasetView, error) {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	stats, err := s.st.DatasetStats(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("knowledge: dataset stats: %w", err)
	}
	tags, err := s.st.DatasetTags(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("knowledge: dataset tags: %w", err)
	}
	out := make([]DatasetView, len(ds))
	for i, d := range ds {
		if d.Provider == store.DatasetProviderExternal {
			v, err := s.externalView(ctx, d)
			if err != nil {
				return nil, err
			}
			v.Stats, v.Tags = stats[d.ID], tags[d.ID]
			out[i] = v
			continue
		}
		fields, err := s.st.ListMetadataFields(ctx, d.ID)
		if err != nil {
			return nil, fmt.Errorf("knowledge: metadata fields: %w", err)
		}
		rm, _ := parseRetrievalModel(d.RetrievalModel, 2)
		if d.IndexingTechnique == store.TechniqueEconomy {
			rm.SearchMethod = SearchKeyword
		}
		avail := true
		if d.IndexingTechnique == store.TechniqueHighQuality {
			_, err := s.catalog.Lookup(models.TypeTextEmbedding, d.EmbeddingModelProvider, d.EmbeddingModel)
			avail = err == nil
		}
		out[i] = DatasetView{Dataset: d, Stats: stats[d.ID], Tags: tags[d.ID], MetadataFields: fields,
			EmbeddingAvailable: avail, RetrievalModel: rm, AppCount: s.appsUsing(d.Name)}
	}
	return out, nil
}

// externalView is the view of an external knowledge base: its binding and setting, and a
// retrieval model that says the same top_k and threshold.
func (s *Service) externalView(ctx context.Context, d store.Dataset) (DatasetView, error) {
	es, _ := parseExternalSetting(d.RetrievalModel)
	api, err := s.st.ExternalKnowledgeAPI(ctx, d.ExternalKnowledgeAPIID)
	if errors.Is(err, store.ErrNotFound) {
		api = store.ExternalKnowledgeAPI{ID: d.ExternalKnowledgeAPIID}
	} else if err != nil {
		return DatasetView{}, fmt.Errorf("knowledge: external knowledge api of %s: %w", d.ID, err)
	}
	rm := DefaultRetrievalModel()
	threshold := es.ScoreThreshold
	rm.TopK, rm.ScoreThresholdEnabled, rm.ScoreThreshold = es.TopK, es.ScoreThresholdEnabled, &threshold
	return DatasetView{Dataset: d, EmbeddingAvailable: true, RetrievalModel: rm, AppCount: s.appsUsing(d.Name),
		External: &ExternalView{API: api, KnowledgeID: d.ExternalKnowledgeID, Setting: es}}, nil
}
