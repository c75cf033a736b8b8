package server

import (
	"context"

	"github.com/parleyhq/parley/gen"
)

// Temporary stubs: each is replaced by its real handler.

func (s *Server) CreateDocumentByText(ctx context.Context, request gen.CreateDocumentByTextRequestObject) (gen.CreateDocumentByTextResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) CreateDocumentByTextLegacy(ctx context.Context, request gen.CreateDocumentByTextLegacyRequestObject) (gen.CreateDocumentByTextLegacyResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) CreateDocumentByFile(ctx context.Context, request gen.CreateDocumentByFileRequestObject) (gen.CreateDocumentByFileResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) CreateDocumentByFileLegacy(ctx context.Context, request gen.CreateDocumentByFileLegacyRequestObject) (gen.CreateDocumentByFileLegacyResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDocumentByText(ctx context.Context, request gen.UpdateDocumentByTextRequestObject) (gen.UpdateDocumentByTextResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDocumentByTextLegacy(ctx context.Context, request gen.UpdateDocumentByTextLegacyRequestObject) (gen.UpdateDocumentByTextLegacyResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDocumentByFile(ctx context.Context, request gen.UpdateDocumentByFileRequestObject) (gen.UpdateDocumentByFileResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDocumentByFileLegacy(ctx context.Context, request gen.UpdateDocumentByFileLegacyRequestObject) (gen.UpdateDocumentByFileLegacyResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDocument(ctx context.Context, request gen.UpdateDocumentRequestObject) (gen.UpdateDocumentResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListDocuments(ctx context.Context, request gen.ListDocumentsRequestObject) (gen.ListDocumentsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) GetDocument(ctx context.Context, request gen.GetDocumentRequestObject) (gen.GetDocumentResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) DeleteDocument(ctx context.Context, request gen.DeleteDocumentRequestObject) (gen.DeleteDocumentResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) GetDocumentIndexingStatus(ctx context.Context, request gen.GetDocumentIndexingStatusRequestObject) (gen.GetDocumentIndexingStatusResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateDocumentStatus(ctx context.Context, request gen.UpdateDocumentStatusRequestObject) (gen.UpdateDocumentStatusResponseObject, error) {
	return nil, errNotImplemented
}
