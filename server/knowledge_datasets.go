package server

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/store"
)

// Knowledge bases, their tags and their metadata fields (dataset-key routes).

// maxDatasetPage is the largest page of knowledge bases served; Dify caps `limit` silently.
const maxDatasetPage = 100

// CreateDataset answers POST /datasets.
func (s *Server) CreateDataset(ctx context.Context, req gen.CreateDatasetRequestObject) (gen.CreateDatasetResponseObject, error) {
	b := req.Body
	in := knowledge.CreateDatasetInput{
		Name: b.Name, Description: str(b.Description),
		EmbeddingModel: str(b.EmbeddingModel), EmbeddingModelProvider: str(b.EmbeddingModelProvider),
		ExternalKnowledgeAPIID: str(b.ExternalKnowledgeApiId), ExternalKnowledgeID: str(b.ExternalKnowledgeId),
	}
	if b.Provider != nil {
		in.Provider = string(*b.Provider)
	}
	ext, err := rawExternalModel(b.ExternalRetrievalModel)
	if err != nil {
		return nil, err
	}
	in.ExternalRetrievalModel = ext
	if b.IndexingTechnique != nil {
		in.IndexingTechnique = string(*b.IndexingTechnique)
	}
	if b.Permission != nil {
		in.Permission = string(*b.Permission)
	}
	rm, err := rawRetrievalModel(b.RetrievalModel)
	if err != nil {
		return nil, err
	}
	in.RetrievalModel = rm
	v, err := s.knowledge.CreateDataset(ctx, in)
	if err != nil {
		return nil, err
	}
	d, err := s.genDataset(v)
	if err != nil {
		return nil, errInternal(err)
	}
	return gen.CreateDataset200JSONResponse(d), nil
}

// ListDatasets answers GET /datasets.
func (s *Server) ListDatasets(ctx context.Context, req gen.ListDatasetsRequestObject) (gen.ListDatasetsResponseObject, error) {
	p := req.Params
	page, limit := intOr(p.Page, 1), min(intOr(p.Limit, 20), maxDatasetPage)
	q := store.DatasetQuery{Keyword: str(p.Keyword), Page: page, Limit: limit}
	if p.TagIds != nil {
		q.TagIDs = *p.TagIds
	}
	views, total, err := s.knowledge.ListDatasets(ctx, q)
	if err != nil {
		return nil, err
	}
	out := gen.ListDatasets200JSONResponse{Data: make([]gen.Dataset, 0, len(views)), Page: page, Limit: limit, Total: total}
	for _, v := range views {
		d, err := s.genDataset(v)
		if err != nil {
			return nil, errInternal(err)
		}
		out.Data = append(out.Data, d)
	}
	// Dify's rule: a full page says there is more, even when it is the last one.
	out.HasMore = len(out.Data) == limit
	return out, nil
}

// GetDataset answers GET /datasets/{dataset_id}.
func (s *Server) GetDataset(ctx context.Context, req gen.GetDatasetRequestObject) (gen.GetDatasetResponseObject, error) {
	v, err := s.knowledge.GetDataset(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	d, err := s.genDataset(v)
	if err != nil {
		return nil, errInternal(err)
	}
	if v.Permission == store.PermissionPartialMembers {
		d.PartialMemberList = &[]string{}
	}
	return gen.GetDataset200JSONResponse(d), nil
}

// UpdateDataset answers PATCH /datasets/{dataset_id}.
func (s *Server) UpdateDataset(ctx context.Context, req gen.UpdateDatasetRequestObject) (gen.UpdateDatasetResponseObject, error) {
	b := req.Body
	in := knowledge.UpdateDatasetInput{
		Name: b.Name, Description: b.Description,
		EmbeddingModel: b.EmbeddingModel, EmbeddingModelProvider: b.EmbeddingModelProvider,
	}
	if b.IndexingTechnique != nil {
		t := string(*b.IndexingTechnique)
		in.IndexingTechnique = &t
	}
	if b.Permission != nil {
		p := string(*b.Permission)
		in.Permission = &p
	}
	rm, err := rawRetrievalModel(b.RetrievalModel)
	if err != nil {
		return nil, err
	}
	in.RetrievalModel = rm
	in.ExternalKnowledgeAPIID, in.ExternalKnowledgeID = b.ExternalKnowledgeApiId, b.ExternalKnowledgeId
	if in.ExternalRetrievalModel, err = rawExternalModel(b.ExternalRetrievalModel); err != nil {
		return nil, err
	}
	v, err := s.knowledge.UpdateDataset(ctx, req.DatasetId, in)
	if err != nil {
		return nil, err
	}
	d, err := s.genDataset(v)
	if err != nil {
		return nil, errInternal(err)
	}
	// Parley has no per-member access lists; the update response always carries the member.
	d.PartialMemberList = &[]string{}
	return gen.UpdateDataset200JSONResponse(d), nil
}

// DeleteDataset answers DELETE /datasets/{dataset_id}.
func (s *Server) DeleteDataset(ctx context.Context, req gen.DeleteDatasetRequestObject) (gen.DeleteDatasetResponseObject, error) {
	if err := s.knowledge.DeleteDataset(ctx, req.DatasetId); err != nil {
		return nil, err
	}
	return gen.DeleteDataset204Response{}, nil
}

// rawRetrievalModel re-encodes a request's retrieval_model for the knowledge service (nil when
// absent or null).
func rawRetrievalModel(m *gen.RetrievalModel) (json.RawMessage, error) {
	if m == nil {
		return nil, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, errInvalidParam("retrieval_model is invalid: " + err.Error())
	}
	return raw, nil
}

// rawExternalModel re-encodes a request's external_retrieval_model for the knowledge service
// (nil when absent or null).
func rawExternalModel(m *gen.ExternalRetrievalModel) (json.RawMessage, error) {
	if m == nil {
		return nil, nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, errInvalidParam("external_retrieval_model is invalid: " + err.Error())
	}
	return raw, nil
}

// genDataset maps a knowledge base to the contract's Dataset. Parley has no pipelines, icons or
// summary indexes, so those members are null; so are the external members of a vendor one.
func (s *Server) genDataset(v knowledge.DatasetView) (gen.Dataset, error) {
	d := gen.Dataset{
		Id:                      mustUUID(v.ID),
		Name:                    v.Name,
		Description:             v.Description,
		Provider:                gen.DatasetProvider(v.Provider),
		Permission:              gen.DatasetPermission(v.Permission),
		DataSourceType:          emptyAsNull(v.DataSourceType),
		AppCount:                v.AppCount,
		DocumentCount:           v.Stats.DocumentCount,
		WordCount:               v.Stats.WordCount,
		CreatedBy:               v.CreatedBy,
		AuthorName:              emptyAsNull(s.workspaceName),
		CreatedAt:               v.CreatedAt.Unix(),
		UpdatedBy:               emptyAsNull(v.UpdatedBy),
		UpdatedAt:               v.UpdatedAt.Unix(),
		EmbeddingModel:          emptyAsNull(v.EmbeddingModel),
		EmbeddingModelProvider:  emptyAsNull(v.EmbeddingModelProvider),
		EmbeddingAvailable:      v.EmbeddingAvailable,
		Tags:                    make([]gen.TagRef, 0, len(v.Tags)),
		DocForm:                 emptyAsNull(v.DocForm),
		DocMetadata:             make([]gen.MetadataField, 0, len(v.MetadataFields)+len(knowledge.BuiltInFields)),
		BuiltInFieldEnabled:     v.BuiltInFieldEnabled,
		RuntimeMode:             emptyAsNull("general"),
		IsPublished:             false,
		TotalDocuments:          v.Stats.DocumentCount,
		TotalAvailableDocuments: v.Stats.AvailableDocumentCount,
		EnableApi:               v.EnableAPI,
		IsMultimodal:            false,
	}
	if v.IndexingTechnique != "" {
		t := gen.IndexingTechnique(v.IndexingTechnique)
		d.IndexingTechnique = &t
	}
	raw, err := json.Marshal(v.RetrievalModel)
	if err != nil {
		return gen.Dataset{}, err
	}
	if err := json.Unmarshal(raw, &d.RetrievalModelDict); err != nil {
		return gen.Dataset{}, err
	}
	for _, t := range v.Tags {
		d.Tags = append(d.Tags, gen.TagRef{Id: mustUUID(t.ID), Name: t.Name, Type: gen.TagRefType(store.TagTypeKnowledge)})
	}
	if x := v.External; x != nil {
		d.ExternalKnowledgeInfo = &gen.ExternalKnowledgeInfo{ExternalKnowledgeId: &x.KnowledgeID,
			ExternalKnowledgeApiId: &x.API.ID, ExternalKnowledgeApiName: emptyAsNull(x.API.Name),
			ExternalKnowledgeApiEndpoint: emptyAsNull(x.API.Endpoint)}
		es := x.Setting
		d.ExternalRetrievalModel = &gen.ExternalRetrievalModel{TopK: &es.TopK, ScoreThreshold: &es.ScoreThreshold,
			ScoreThresholdEnabled: &es.ScoreThresholdEnabled}
	}
	for _, f := range v.MetadataFields {
		d.DocMetadata = append(d.DocMetadata, gen.MetadataField{Id: f.ID, Name: f.Name, Type: gen.MetadataType(f.Type)})
	}
	if v.BuiltInFieldEnabled {
		for _, f := range knowledge.BuiltInFields {
			d.DocMetadata = append(d.DocMetadata, gen.MetadataField{Id: "built-in", Name: f.Name, Type: gen.MetadataType(f.Type)})
		}
	}
	return d, nil
}

// emptyAsNull is nil for "" (a null member), else a pointer to s.
func emptyAsNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---------------------------------------------------------------- tags

func genTag(t store.Tag) gen.Tag {
	n := strconv.Itoa(t.BindingCount)
	return gen.Tag{Id: mustUUID(t.ID), Name: t.Name, Type: gen.TagType(store.TagTypeKnowledge), BindingCount: &n}
}

// ListTags answers GET /datasets/tags.
func (s *Server) ListTags(ctx context.Context, _ gen.ListTagsRequestObject) (gen.ListTagsResponseObject, error) {
	tags, err := s.knowledge.ListTags(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make(gen.ListTags200JSONResponse, 0, len(tags))
	for _, t := range tags {
		out = append(out, genTag(t))
	}
	return out, nil
}

// CreateTag answers POST /datasets/tags.
func (s *Server) CreateTag(ctx context.Context, req gen.CreateTagRequestObject) (gen.CreateTagResponseObject, error) {
	t, err := s.knowledge.CreateTag(ctx, req.Body.Name)
	if err != nil {
		return nil, err
	}
	return gen.CreateTag200JSONResponse(genTag(t)), nil
}

// UpdateTag answers PATCH /datasets/tags.
func (s *Server) UpdateTag(ctx context.Context, req gen.UpdateTagRequestObject) (gen.UpdateTagResponseObject, error) {
	t, err := s.knowledge.RenameTag(ctx, req.Body.TagId, req.Body.Name)
	if err != nil {
		return nil, err
	}
	return gen.UpdateTag200JSONResponse(genTag(t)), nil
}

// DeleteTag answers DELETE /datasets/tags.
func (s *Server) DeleteTag(ctx context.Context, req gen.DeleteTagRequestObject) (gen.DeleteTagResponseObject, error) {
	if err := s.knowledge.DeleteTag(ctx, req.Body.TagId); err != nil {
		return nil, err
	}
	return gen.DeleteTag204Response{}, nil
}

// BindTags answers POST /datasets/tags/binding.
func (s *Server) BindTags(ctx context.Context, req gen.BindTagsRequestObject) (gen.BindTagsResponseObject, error) {
	if err := s.knowledge.BindTags(ctx, req.Body.TagIds, req.Body.TargetId); err != nil {
		return nil, err
	}
	return gen.BindTags204Response{}, nil
}

// UnbindTags answers POST /datasets/tags/unbinding; the legacy single `tag_id` is used when
// `tag_ids` is empty.
func (s *Server) UnbindTags(ctx context.Context, req gen.UnbindTagsRequestObject) (gen.UnbindTagsResponseObject, error) {
	var ids []string
	if req.Body.TagIds != nil {
		ids = *req.Body.TagIds
	}
	if len(ids) == 0 && req.Body.TagId != nil && *req.Body.TagId != "" {
		ids = []string{*req.Body.TagId}
	}
	if err := s.knowledge.UnbindTags(ctx, ids, req.Body.TargetId); err != nil {
		return nil, err
	}
	return gen.UnbindTags204Response{}, nil
}

// ListDatasetTags answers GET /datasets/{dataset_id}/tags.
func (s *Server) ListDatasetTags(ctx context.Context, req gen.ListDatasetTagsRequestObject) (gen.ListDatasetTagsResponseObject, error) {
	tags, err := s.knowledge.DatasetTags(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	out := gen.ListDatasetTags200JSONResponse{Data: make([]gen.BoundTag, 0, len(tags)), Total: len(tags)}
	for _, t := range tags {
		out.Data = append(out.Data, gen.BoundTag{Id: mustUUID(t.ID), Name: t.Name})
	}
	return out, nil
}

// ---------------------------------------------------------------- metadata

func genMetadataField(f store.MetadataField) gen.MetadataField {
	return gen.MetadataField{Id: f.ID, Name: f.Name, Type: gen.MetadataType(f.Type)}
}

// CreateMetadataField answers POST /datasets/{dataset_id}/metadata.
func (s *Server) CreateMetadataField(ctx context.Context, req gen.CreateMetadataFieldRequestObject) (gen.CreateMetadataFieldResponseObject, error) {
	f, err := s.knowledge.CreateMetadataField(ctx, req.DatasetId, req.Body.Name, string(req.Body.Type))
	if err != nil {
		return nil, err
	}
	return gen.CreateMetadataField201JSONResponse(genMetadataField(f)), nil
}

// ListMetadataFields answers GET /datasets/{dataset_id}/metadata.
func (s *Server) ListMetadataFields(ctx context.Context, req gen.ListMetadataFieldsRequestObject) (gen.ListMetadataFieldsResponseObject, error) {
	fields, builtIn, err := s.knowledge.ListMetadataFields(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	out := gen.ListMetadataFields200JSONResponse{BuiltInFieldEnabled: builtIn}
	out.DocMetadata = make([]struct {
		Count int              `json:"count"`
		Id    string           `json:"id"`
		Name  string           `json:"name"`
		Type  gen.MetadataType `json:"type"`
	}, len(fields))
	for i, f := range fields {
		out.DocMetadata[i].Count = f.Count
		out.DocMetadata[i].Id = f.ID
		out.DocMetadata[i].Name = f.Name
		out.DocMetadata[i].Type = gen.MetadataType(f.Type)
	}
	return out, nil
}

// UpdateMetadataField answers PATCH /datasets/{dataset_id}/metadata/{metadata_id}.
func (s *Server) UpdateMetadataField(ctx context.Context, req gen.UpdateMetadataFieldRequestObject) (gen.UpdateMetadataFieldResponseObject, error) {
	f, err := s.knowledge.RenameMetadataField(ctx, req.DatasetId, req.MetadataId, req.Body.Name)
	if err != nil {
		return nil, err
	}
	return gen.UpdateMetadataField200JSONResponse(genMetadataField(f)), nil
}

// DeleteMetadataField answers DELETE /datasets/{dataset_id}/metadata/{metadata_id}.
func (s *Server) DeleteMetadataField(ctx context.Context, req gen.DeleteMetadataFieldRequestObject) (gen.DeleteMetadataFieldResponseObject, error) {
	if err := s.knowledge.DeleteMetadataField(ctx, req.DatasetId, req.MetadataId); err != nil {
		return nil, err
	}
	return gen.DeleteMetadataField204Response{}, nil
}

// ListBuiltInMetadataFields answers GET /datasets/{dataset_id}/metadata/built-in.
func (s *Server) ListBuiltInMetadataFields(ctx context.Context, req gen.ListBuiltInMetadataFieldsRequestObject) (gen.ListBuiltInMetadataFieldsResponseObject, error) {
	if _, err := s.knowledge.CheckDataset(ctx, req.DatasetId); err != nil {
		return nil, err
	}
	var out gen.ListBuiltInMetadataFields200JSONResponse
	out.Fields = make([]struct {
		Name string           `json:"name"`
		Type gen.MetadataType `json:"type"`
	}, len(knowledge.BuiltInFields))
	for i, f := range knowledge.BuiltInFields {
		out.Fields[i].Name = f.Name
		out.Fields[i].Type = gen.MetadataType(f.Type)
	}
	return out, nil
}

// ToggleBuiltInMetadata answers POST /datasets/{dataset_id}/metadata/built-in/{action}.
func (s *Server) ToggleBuiltInMetadata(ctx context.Context, req gen.ToggleBuiltInMetadataRequestObject) (gen.ToggleBuiltInMetadataResponseObject, error) {
	if err := s.knowledge.SetBuiltInFields(ctx, req.DatasetId, req.Action); err != nil {
		return nil, err
	}
	return gen.ToggleBuiltInMetadata200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: gen.ResultResultSuccess}}, nil
}

// UpdateDocumentsMetadata answers POST /datasets/{dataset_id}/documents/metadata.
func (s *Server) UpdateDocumentsMetadata(ctx context.Context, req gen.UpdateDocumentsMetadataRequestObject) (gen.UpdateDocumentsMetadataResponseObject, error) {
	ops := make([]knowledge.DocumentMetadataOp, 0, len(req.Body.OperationData))
	for _, o := range req.Body.OperationData {
		op := knowledge.DocumentMetadataOp{DocumentID: o.DocumentId, PartialUpdate: o.PartialUpdate != nil && *o.PartialUpdate,
			Values: make([]knowledge.MetadataValue, 0, len(o.MetadataList))}
		for _, m := range o.MetadataList {
			v := knowledge.MetadataValue{ID: m.Id, Name: m.Name}
			if m.Value != nil {
				raw, err := json.Marshal(m.Value)
				if err != nil {
					return nil, errInvalidParam("Metadata " + m.Name + ": " + err.Error())
				}
				if err := json.Unmarshal(raw, &v.Value); err != nil {
					return nil, errInvalidParam("Metadata " + m.Name + ": " + err.Error())
				}
			}
			op.Values = append(op.Values, v)
		}
		ops = append(ops, op)
	}
	if err := s.knowledge.SetDocumentsMetadata(ctx, req.DatasetId, ops); err != nil {
		return nil, err
	}
	return gen.UpdateDocumentsMetadata200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: gen.ResultResultSuccess}}, nil
}
