package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/store"
)

// maxChunkPage is the largest page of chunks or child chunks; larger limits are clamped, as
// Dify does.
const maxChunkPage = 100

// chunkPage returns the page (default 1) and limit (default 20, at most maxChunkPage).
func chunkPage(page, limit *int) (int, int) {
	p, l := intOr(page, 1), intOr(limit, 20)
	if p < 1 {
		p = 1
	}
	if l < 1 {
		l = 20
	}
	return p, min(l, maxChunkPage)
}

func chunkTime(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.Unix()
	return &v
}

func chunkStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func chunkKeywords(k []string) []string {
	if k == nil {
		return []string{}
	}
	return k
}

func genChildChunk(c store.ChildChunk) gen.ChildChunk {
	return gen.ChildChunk{Id: mustUUID(c.ID), SegmentId: mustUUID(c.SegmentID), Content: c.Content,
		Position: c.Position, WordCount: c.WordCount, Type: gen.ChildChunkType(c.Type),
		CreatedAt: c.CreatedAt.Unix(), UpdatedAt: c.UpdatedAt.Unix()}
}

// genSegment maps a chunk to the contract. sign_content is the content: Dify signs file URLs
// in it, and Parley's chunks carry none.
func genSegment(v knowledge.SegmentView) gen.Segment {
	sg := v.Segment
	kids := make([]gen.ChildChunk, len(v.Children))
	for i, c := range v.Children {
		kids[i] = genChildChunk(c)
	}
	return gen.Segment{
		Id: mustUUID(sg.ID), Position: sg.Position, DocumentId: mustUUID(sg.DocumentID), Content: sg.Content,
		SignContent: sg.Content, Answer: chunkStr(sg.Answer), WordCount: sg.WordCount, Tokens: sg.Tokens,
		Keywords: chunkKeywords(sg.Keywords), IndexNodeId: sg.IndexNodeID, IndexNodeHash: sg.IndexNodeHash,
		HitCount: sg.HitCount, Enabled: sg.Enabled, DisabledAt: chunkTime(sg.DisabledAt),
		DisabledBy: chunkStr(sg.DisabledBy), Status: gen.SegmentStatus(sg.Status), CreatedBy: sg.CreatedBy,
		CreatedAt: sg.CreatedAt.Unix(), UpdatedAt: sg.UpdatedAt.Unix(), UpdatedBy: chunkStr(sg.UpdatedBy),
		IndexingAt: chunkTime(sg.IndexingAt), CompletedAt: chunkTime(sg.CompletedAt), Error: chunkStr(sg.Error),
		StoppedAt: chunkTime(sg.StoppedAt), ChildChunks: kids, Attachments: []gen.SegmentAttachment{},
	}
}

func genSegments(vs []knowledge.SegmentView) []gen.Segment {
	out := make([]gen.Segment, len(vs))
	for i, v := range vs {
		out[i] = genSegment(v)
	}
	return out
}

// CreateSegments answers POST /datasets/{dataset_id}/documents/{document_id}/segments.
func (s *Server) CreateSegments(ctx context.Context, req gen.CreateSegmentsRequestObject) (gen.CreateSegmentsResponseObject, error) {
	in := make([]knowledge.NewSegment, len(req.Body.Segments))
	for i, sg := range req.Body.Segments {
		in[i] = knowledge.NewSegment{Content: str(sg.Content), Answer: str(sg.Answer)}
		if sg.Keywords != nil {
			in[i].Keywords = *sg.Keywords
		}
	}
	views, form, err := s.knowledge.CreateSegments(ctx, req.DatasetId, req.DocumentId, in)
	if err != nil {
		return nil, err
	}
	return gen.CreateSegments200JSONResponse{Data: genSegments(views), DocForm: form}, nil
}

// ListSegments answers GET /datasets/{dataset_id}/documents/{document_id}/segments.
func (s *Server) ListSegments(ctx context.Context, req gen.ListSegmentsRequestObject) (gen.ListSegmentsResponseObject, error) {
	page, limit := chunkPage(req.Params.Page, req.Params.Limit)
	q := store.SegmentQuery{Keyword: str(req.Params.Keyword), Page: page, Limit: limit}
	if req.Params.Status != nil {
		q.Statuses = *req.Params.Status
	}
	views, total, form, err := s.knowledge.ListSegments(ctx, req.DatasetId, req.DocumentId, q)
	if err != nil {
		return nil, err
	}
	return gen.ListSegments200JSONResponse{Data: genSegments(views), DocForm: form, Total: total,
		HasMore: len(views) == limit, Limit: limit, Page: page}, nil
}

// GetSegment answers GET …/segments/{segment_id}.
func (s *Server) GetSegment(ctx context.Context, req gen.GetSegmentRequestObject) (gen.GetSegmentResponseObject, error) {
	v, form, err := s.knowledge.GetSegment(ctx, req.DatasetId, req.DocumentId, req.SegmentId)
	if err != nil {
		return nil, err
	}
	return gen.GetSegment200JSONResponse{Data: genSegment(v), DocForm: form}, nil
}

// UpdateSegment answers POST …/segments/{segment_id}.
func (s *Server) UpdateSegment(ctx context.Context, req gen.UpdateSegmentRequestObject) (gen.UpdateSegmentResponseObject, error) {
	b := req.Body.Segment
	in := knowledge.SegmentUpdate{Content: b.Content, Answer: b.Answer, Enabled: b.Enabled,
		RegenerateChildChunks: b.RegenerateChildChunks != nil && *b.RegenerateChildChunks}
	if b.Keywords != nil {
		in.Keywords = *b.Keywords
	}
	v, form, err := s.knowledge.UpdateSegment(ctx, req.DatasetId, req.DocumentId, req.SegmentId, in)
	if err != nil {
		return nil, err
	}
	return gen.UpdateSegment200JSONResponse{Data: genSegment(v), DocForm: form}, nil
}

// DeleteSegment answers DELETE …/segments/{segment_id}.
func (s *Server) DeleteSegment(ctx context.Context, req gen.DeleteSegmentRequestObject) (gen.DeleteSegmentResponseObject, error) {
	if err := s.knowledge.DeleteSegment(ctx, req.DatasetId, req.DocumentId, req.SegmentId); err != nil {
		return nil, err
	}
	return gen.DeleteSegment204Response{}, nil
}

// CreateChildChunk answers POST …/segments/{segment_id}/child_chunks.
func (s *Server) CreateChildChunk(ctx context.Context, req gen.CreateChildChunkRequestObject) (gen.CreateChildChunkResponseObject, error) {
	c, err := s.knowledge.CreateChildChunk(ctx, req.DatasetId, req.DocumentId, req.SegmentId, req.Body.Content)
	if err != nil {
		return nil, err
	}
	return gen.CreateChildChunk200JSONResponse{Data: genChildChunk(c)}, nil
}

// ListChildChunks answers GET …/segments/{segment_id}/child_chunks.
func (s *Server) ListChildChunks(ctx context.Context, req gen.ListChildChunksRequestObject) (gen.ListChildChunksResponseObject, error) {
	page, limit := chunkPage(req.Params.Page, req.Params.Limit)
	items, total, err := s.knowledge.ListChildChunks(ctx, req.DatasetId, req.DocumentId, req.SegmentId,
		str(req.Params.Keyword), page, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListChildChunks200JSONResponse{Data: make([]gen.ChildChunk, len(items)), Total: total,
		TotalPages: (total + limit - 1) / limit, Page: page, Limit: limit}
	for i, c := range items {
		out.Data[i] = genChildChunk(c)
	}
	return out, nil
}

// UpdateChildChunk answers PATCH …/child_chunks/{child_chunk_id}.
func (s *Server) UpdateChildChunk(ctx context.Context, req gen.UpdateChildChunkRequestObject) (gen.UpdateChildChunkResponseObject, error) {
	c, err := s.knowledge.UpdateChildChunk(ctx, req.DatasetId, req.DocumentId, req.SegmentId, req.ChildChunkId, req.Body.Content)
	if err != nil {
		return nil, err
	}
	return gen.UpdateChildChunk200JSONResponse{Data: genChildChunk(c)}, nil
}

// DeleteChildChunk answers DELETE …/child_chunks/{child_chunk_id}.
func (s *Server) DeleteChildChunk(ctx context.Context, req gen.DeleteChildChunkRequestObject) (gen.DeleteChildChunkResponseObject, error) {
	if err := s.knowledge.DeleteChildChunk(ctx, req.DatasetId, req.DocumentId, req.SegmentId, req.ChildChunkId); err != nil {
		return nil, err
	}
	return gen.DeleteChildChunk204Response{}, nil
}

// Retrieve answers POST /datasets/{dataset_id}/retrieve.
func (s *Server) Retrieve(ctx context.Context, req gen.RetrieveRequestObject) (gen.RetrieveResponseObject, error) {
	res, err := s.retrieve(ctx, req.DatasetId, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.Retrieve200JSONResponse(res), nil
}

// HitTesting answers POST /datasets/{dataset_id}/hit-testing, the same operation as Retrieve.
func (s *Server) HitTesting(ctx context.Context, req gen.HitTestingRequestObject) (gen.HitTestingResponseObject, error) {
	res, err := s.retrieve(ctx, req.DatasetId, (*gen.RetrieveRequest)(req.Body))
	if err != nil {
		return nil, err
	}
	return gen.HitTesting200JSONResponse(res), nil
}

func (s *Server) retrieve(ctx context.Context, datasetID string, body *gen.RetrieveRequest) (gen.RetrieveResult, error) {
	in := knowledge.RetrieveInput{Query: str(body.Query)}
	if body.AttachmentIds != nil {
		in.AttachmentIDs = *body.AttachmentIds
	}
	if body.RetrievalModel != nil {
		raw, err := json.Marshal(body.RetrievalModel)
		if err != nil {
			return gen.RetrieveResult{}, errInvalidParam("retrieval_model is invalid")
		}
		in.RetrievalModel = raw
	}
	ext, err := rawExternalModel(body.ExternalRetrievalModel)
	if err != nil {
		return gen.RetrieveResult{}, err
	}
	in.ExternalRetrievalModel = ext
	if body.MetadataFilteringConditions != nil {
		if in.MetadataFilteringConditions, err = json.Marshal(*body.MetadataFilteringConditions); err != nil {
			return gen.RetrieveResult{}, errInvalidParam("metadata_filtering_conditions is invalid")
		}
	}
	records, err := s.knowledge.RetrieveDataset(ctx, datasetID, in)
	if err != nil {
		return gen.RetrieveResult{}, err
	}
	out := gen.RetrieveResult{Records: make([]gen.RetrieveRecord, len(records))}
	out.Query.Content = in.Query
	for i, r := range records {
		rec, err := genRecord(r)
		if err != nil {
			return gen.RetrieveResult{}, errInternal(err)
		}
		out.Records[i] = rec
	}
	return out, nil
}

// genRecord maps a retrieval record. Keyword search (economy) has no score: null, as in Dify.
func genRecord(r knowledge.Record) (gen.RetrieveRecord, error) {
	sg := r.Segment
	doc := gen.RetrieveDocument{Id: mustUUID(r.Document.ID), DataSourceType: r.Document.DataSourceType, Name: r.Document.Name}
	if len(r.Document.DocMetadata) > 0 && string(r.Document.DocMetadata) != "null" {
		var meta map[string]any
		if err := json.Unmarshal(r.Document.DocMetadata, &meta); err != nil {
			return gen.RetrieveRecord{}, err
		}
		if meta != nil {
			doc.DocMetadata = &meta
		}
	}
	rec := gen.RetrieveRecord{
		Segment: gen.RetrieveSegment{
			Id: mustUUID(sg.ID), Position: sg.Position, DocumentId: mustUUID(sg.DocumentID), Content: sg.Content,
			SignContent: sg.Content, Answer: chunkStr(sg.Answer), WordCount: sg.WordCount, Tokens: sg.Tokens,
			Keywords: chunkKeywords(sg.Keywords), IndexNodeId: sg.IndexNodeID, IndexNodeHash: sg.IndexNodeHash,
			HitCount: sg.HitCount, Enabled: sg.Enabled, DisabledAt: chunkTime(sg.DisabledAt),
			DisabledBy: chunkStr(sg.DisabledBy), Status: gen.SegmentStatus(sg.Status), CreatedBy: sg.CreatedBy,
			CreatedAt: sg.CreatedAt.Unix(), IndexingAt: chunkTime(sg.IndexingAt), CompletedAt: chunkTime(sg.CompletedAt),
			Error: chunkStr(sg.Error), StoppedAt: chunkTime(sg.StoppedAt), Document: doc,
		},
		ChildChunks: make([]gen.RetrieveChildChunk, len(r.ChildChunks)),
		Files:       []map[string]any{},
	}
	if r.Dataset.IndexingTechnique != store.TechniqueEconomy {
		score := r.Score
		rec.Score = &score
	}
	if x := r.External; x != nil {
		// Dify's external hit testing answers these; the segment above stands for the record.
		content, title, meta := sg.Content, x.Title, x.Metadata
		rec.Content, rec.Title, rec.Metadata = &content, &title, &meta
	}
	for i, c := range r.ChildChunks {
		rec.ChildChunks[i] = gen.RetrieveChildChunk{Id: mustUUID(c.ID), Content: c.Content, Position: c.Position, Score: c.Score}
	}
	return rec, nil
}
