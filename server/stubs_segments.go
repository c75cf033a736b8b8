package server

import (
	"context"

	"github.com/parleyhq/parley/gen"
)

// Temporary stubs: each is replaced by its real handler.

func (s *Server) CreateSegments(ctx context.Context, request gen.CreateSegmentsRequestObject) (gen.CreateSegmentsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListSegments(ctx context.Context, request gen.ListSegmentsRequestObject) (gen.ListSegmentsResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) GetSegment(ctx context.Context, request gen.GetSegmentRequestObject) (gen.GetSegmentResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateSegment(ctx context.Context, request gen.UpdateSegmentRequestObject) (gen.UpdateSegmentResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) DeleteSegment(ctx context.Context, request gen.DeleteSegmentRequestObject) (gen.DeleteSegmentResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) CreateChildChunk(ctx context.Context, request gen.CreateChildChunkRequestObject) (gen.CreateChildChunkResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) ListChildChunks(ctx context.Context, request gen.ListChildChunksRequestObject) (gen.ListChildChunksResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) UpdateChildChunk(ctx context.Context, request gen.UpdateChildChunkRequestObject) (gen.UpdateChildChunkResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) DeleteChildChunk(ctx context.Context, request gen.DeleteChildChunkRequestObject) (gen.DeleteChildChunkResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) Retrieve(ctx context.Context, request gen.RetrieveRequestObject) (gen.RetrieveResponseObject, error) {
	return nil, errNotImplemented
}

func (s *Server) HitTesting(ctx context.Context, request gen.HitTestingRequestObject) (gen.HitTestingResponseObject, error) {
	return nil, errNotImplemented
}
