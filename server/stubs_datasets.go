package server

import (
	"context"

	"github.com/parleyhq/parley/gen"
)

// Temporary stubs: each is replaced by its real handler.

func (s *Server) CreateDataset(ctx context.Context, request gen.CreateDatasetRequestObject) (gen.CreateDatasetResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListDatasets(ctx context.Context, request gen.ListDatasetsRequestObject) (gen.ListDatasetsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) GetDataset(ctx context.Context, request gen.GetDatasetRequestObject) (gen.GetDatasetResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDataset(ctx context.Context, request gen.UpdateDatasetRequestObject) (gen.UpdateDatasetResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) DeleteDataset(ctx context.Context, request gen.DeleteDatasetRequestObject) (gen.DeleteDatasetResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListTags(ctx context.Context, request gen.ListTagsRequestObject) (gen.ListTagsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) CreateTag(ctx context.Context, request gen.CreateTagRequestObject) (gen.CreateTagResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateTag(ctx context.Context, request gen.UpdateTagRequestObject) (gen.UpdateTagResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) DeleteTag(ctx context.Context, request gen.DeleteTagRequestObject) (gen.DeleteTagResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) BindTags(ctx context.Context, request gen.BindTagsRequestObject) (gen.BindTagsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UnbindTags(ctx context.Context, request gen.UnbindTagsRequestObject) (gen.UnbindTagsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListDatasetTags(ctx context.Context, request gen.ListDatasetTagsRequestObject) (gen.ListDatasetTagsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) CreateMetadataField(ctx context.Context, request gen.CreateMetadataFieldRequestObject) (gen.CreateMetadataFieldResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListMetadataFields(ctx context.Context, request gen.ListMetadataFieldsRequestObject) (gen.ListMetadataFieldsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateMetadataField(ctx context.Context, request gen.UpdateMetadataFieldRequestObject) (gen.UpdateMetadataFieldResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) DeleteMetadataField(ctx context.Context, request gen.DeleteMetadataFieldRequestObject) (gen.DeleteMetadataFieldResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListBuiltInMetadataFields(ctx context.Context, request gen.ListBuiltInMetadataFieldsRequestObject) (gen.ListBuiltInMetadataFieldsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ToggleBuiltInMetadata(ctx context.Context, request gen.ToggleBuiltInMetadataRequestObject) (gen.ToggleBuiltInMetadataResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDocumentsMetadata(ctx context.Context, request gen.UpdateDocumentsMetadataRequestObject) (gen.UpdateDocumentsMetadataResponseObject, error) {
	return nil, errNotImplemented
}
