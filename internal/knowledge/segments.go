package knowledge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
)

// SegmentView is a segment with its child chunks.
type SegmentView struct {
	store.Segment
	Children []store.ChildChunk
}

// NewSegment is one chunk of a create-segments request.
type NewSegment struct {
	Content  string
	Answer   string
	Keywords []string
}

// SegmentUpdate is the body of an update-segment request; nil members are unchanged.
type SegmentUpdate struct {
	Content               *string
	Answer                *string
	Keywords              []string
	Enabled               *bool
	RegenerateChildChunks bool
}

// chunkTarget loads the dataset and document of a chunk request.
func (s *Service) chunkTarget(ctx context.Context, datasetID, documentID string) (store.Dataset, store.Document, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return d, store.Document{}, err
	}
	doc, err := s.document(ctx, d.ID, documentID)
	return d, doc, err
}

// node builds the index node of a text: keywords (economy) or vector and tokens (high quality).
func (s *Service) node(ctx context.Context, d store.Dataset, n store.IndexNode, text string, keywords []string) (store.IndexNode, error) {
	if d.IndexingTechnique == store.TechniqueHighQuality {
		n.Terms = segment.Terms(text)
		embed, err := s.embedder(d)
		if err != nil {
			return n, err
		}
		vecs, err := embed(ctx, []string{text})
		if err != nil {
			return n, err
		}
		n.Vector = vecs[0]
		n.Tokens = tokens.Count(text)
		n.Keywords = keywords
		return n, nil
	}
	if len(keywords) == 0 {
		kn := d.KeywordNumber
		if kn <= 0 {
			kn = segment.DefaultKeywordNumber
		}
		keywords = segment.Keywords(text, kn)
	}
	n.Keywords = keywords
	return n, nil
}

// CreateSegments adds chunks to a completed, enabled document and indexes them at once.
func (s *Service) CreateSegments(ctx context.Context, datasetID, documentID string, in []NewSegment) ([]SegmentView, string, error) {
	d, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return nil, "", err
	}
	if doc.IndexingStatus != store.IndexingCompleted {
		return nil, "", notFound("Document is not completed.")
	}
	if !doc.Enabled {
		return nil, "", notFound("Document is disabled.")
	}
	for _, n := range in {
		if doc.DocForm == DocFormQA {
			if n.Answer == "" {
				return nil, "", invalidParam("Answer is required")
			}
			if strings.TrimSpace(n.Answer) == "" {
				return nil, "", invalidParam("Answer is empty")
			}
		}
		if strings.TrimSpace(n.Content) == "" {
			return nil, "", invalidParam("Content is empty")
		}
	}
	pos, err := s.st.MaxSegmentPosition(ctx, doc.ID, doc.Generation)
	if err != nil {
		return nil, "", fmt.Errorf("knowledge: segment position: %w", err)
	}
	now := s.nowUTC()
	out := make([]SegmentView, 0, len(in))
	words := 0
	for i, n := range in {
		seg := store.Segment{ID: store.NewID(), DatasetID: d.ID, DocumentID: doc.ID, Generation: doc.Generation,
			Position: pos + i + 1, Content: n.Content, Answer: n.Answer,
			WordCount:   utf8.RuneCountInString(n.Content) + utf8.RuneCountInString(n.Answer),
			IndexNodeID: store.NewID(), IndexNodeHash: segment.TextHash(n.Content), Enabled: true,
			Status: store.SegmentIndexing, CreatedBy: s.account, CreatedAt: now, UpdatedAt: now, IndexingAt: &now}
		node, err := s.node(ctx, d, store.IndexNode{NodeID: seg.IndexNodeID, DatasetID: d.ID, DocumentID: doc.ID,
			SegmentID: seg.ID, Generation: seg.Generation}, n.Content, n.Keywords)
		if err != nil {
			return nil, "", err
		}
		seg.Tokens, seg.Keywords = node.Tokens, node.Keywords
		if err := s.st.AddSegments(ctx, []store.Segment{seg}, nil); err != nil {
			return nil, "", fmt.Errorf("knowledge: add segment: %w", err)
		}
		if err := s.st.IndexNodes(ctx, []store.IndexNode{node}, now); err != nil {
			return nil, "", fmt.Errorf("knowledge: index segment: %w", err)
		}
		seg.Status, seg.CompletedAt = store.SegmentCompleted, &now
		out = append(out, SegmentView{Segment: seg})
		words += seg.WordCount
	}
	if _, err := s.modifyDocument(ctx, d.ID, doc.ID, func(doc *store.Document) (bool, error) {
		doc.WordCount += words
		doc.UpdatedAt = now
		return true, nil
	}); err != nil {
		return nil, "", err
	}
	return out, doc.DocForm, nil
}

// ListSegments returns a page of a document's chunks.
func (s *Service) ListSegments(ctx context.Context, datasetID, documentID string, q store.SegmentQuery) ([]SegmentView, int, string, error) {
	_, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return nil, 0, "", err
	}
	q.DocumentID = doc.ID
	segs, total, err := s.st.ListSegments(ctx, q)
	if err != nil {
		return nil, 0, "", fmt.Errorf("knowledge: list segments: %w", err)
	}
	views, err := s.segmentViews(ctx, segs)
	return views, total, doc.DocForm, err
}

func (s *Service) segmentViews(ctx context.Context, segs []store.Segment) ([]SegmentView, error) {
	ids := make([]string, len(segs))
	for i, sg := range segs {
		ids[i] = sg.ID
	}
	kids, err := s.st.ChildChunks(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("knowledge: child chunks: %w", err)
	}
	out := make([]SegmentView, len(segs))
	for i, sg := range segs {
		out[i] = SegmentView{Segment: sg, Children: kids[sg.ID]}
	}
	return out, nil
}

func (s *Service) segment(ctx context.Context, doc store.Document, id string) (store.Segment, error) {
	if !isUUID(id) {
		return store.Segment{}, ErrSegmentNotFound
	}
	seg, err := s.st.Segment(ctx, doc.ID, strings.ToLower(id))
	if err != nil {
		return store.Segment{}, storeErr(err, ErrSegmentNotFound, "segment")
	}
	return seg, nil
}

// GetSegment returns one chunk.
func (s *Service) GetSegment(ctx context.Context, datasetID, documentID, segmentID string) (SegmentView, string, error) {
	_, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return SegmentView{}, "", err
	}
	seg, err := s.segment(ctx, doc, segmentID)
	if err != nil {
		return SegmentView{}, "", err
	}
	v, err := s.segmentViews(ctx, []store.Segment{seg})
	if err != nil {
		return SegmentView{}, "", err
	}
	return v[0], doc.DocForm, nil
}

// UpdateSegment edits a chunk and re-indexes it.
func (s *Service) UpdateSegment(ctx context.Context, datasetID, documentID, segmentID string, in SegmentUpdate) (SegmentView, string, error) {
	d, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return SegmentView{}, "", err
	}
	seg, err := s.segment(ctx, doc, segmentID)
	if err != nil {
		return SegmentView{}, "", err
	}
	if seg.Status == store.SegmentIndexing {
		return SegmentView{}, "", invalidParam("Segment is indexing, please try again later")
	}
	now := s.nowUTC()
	if in.Enabled != nil && !*in.Enabled {
		seg.Enabled, seg.DisabledAt, seg.DisabledBy = false, &now, s.account
		seg.UpdatedAt, seg.UpdatedBy = now, s.account
		if err := s.st.UpdateSegment(ctx, seg, nil); err != nil {
			return SegmentView{}, "", fmt.Errorf("knowledge: disable segment: %w", err)
		}
		return s.GetSegment(ctx, datasetID, documentID, seg.ID)
	}
	if !seg.Enabled && (in.Enabled == nil || !*in.Enabled) {
		return SegmentView{}, "", invalidParam("Can't update disabled segment")
	}
	seg.Enabled, seg.DisabledAt, seg.DisabledBy = true, nil, ""
	if in.Content != nil {
		if strings.TrimSpace(*in.Content) == "" {
			return SegmentView{}, "", invalidParam("Content is empty")
		}
		seg.Content = *in.Content
	}
	if in.Answer != nil {
		seg.Answer = *in.Answer
	}
	oldWords := seg.WordCount
	seg.WordCount = utf8.RuneCountInString(seg.Content) + utf8.RuneCountInString(seg.Answer)
	seg.IndexNodeHash = segment.TextHash(seg.Content)
	seg.UpdatedAt, seg.UpdatedBy = now, s.account
	var nodes []store.IndexNode
	if doc.DocForm == DocFormHierarchical {
		kids, err := s.st.ChildChunks(ctx, []string{seg.ID})
		if err != nil {
			return SegmentView{}, "", fmt.Errorf("knowledge: child chunks: %w", err)
		}
		for _, k := range kids[seg.ID] {
			n, err := s.node(ctx, d, store.IndexNode{NodeID: k.IndexNodeID, DatasetID: d.ID, DocumentID: doc.ID,
				SegmentID: seg.ID, ChildChunkID: k.ID, Generation: seg.Generation}, k.Content, nil)
			if err != nil {
				return SegmentView{}, "", err
			}
			nodes = append(nodes, n)
		}
	} else {
		n, err := s.node(ctx, d, store.IndexNode{NodeID: seg.IndexNodeID, DatasetID: d.ID, DocumentID: doc.ID,
			SegmentID: seg.ID, Generation: seg.Generation}, seg.Content, in.Keywords)
		if err != nil {
			return SegmentView{}, "", err
		}
		seg.Keywords, seg.Tokens = n.Keywords, n.Tokens
		nodes = append(nodes, n)
	}
	seg.Status, seg.CompletedAt = store.SegmentCompleted, &now
	if err := s.st.UpdateSegment(ctx, seg, nodes); err != nil {
		return SegmentView{}, "", fmt.Errorf("knowledge: update segment: %w", err)
	}
	if seg.WordCount != oldWords {
		if _, err := s.modifyDocument(ctx, d.ID, doc.ID, func(doc *store.Document) (bool, error) {
			doc.WordCount += seg.WordCount - oldWords
			doc.UpdatedAt = now
			return true, nil
		}); err != nil {
			return SegmentView{}, "", err
		}
	}
	return s.GetSegment(ctx, datasetID, documentID, seg.ID)
}

// DeleteSegment deletes a chunk and its index rows.
func (s *Service) DeleteSegment(ctx context.Context, datasetID, documentID, segmentID string) error {
	_, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return err
	}
	seg, err := s.segment(ctx, doc, segmentID)
	if err != nil {
		return err
	}
	if err := s.st.DeleteSegment(ctx, doc.ID, seg.ID); err != nil {
		return storeErr(err, ErrSegmentNotFound, "delete segment")
	}
	_, err = s.modifyDocument(ctx, doc.DatasetID, doc.ID, func(doc *store.Document) (bool, error) {
		doc.WordCount = max(0, doc.WordCount-seg.WordCount)
		doc.UpdatedAt = s.nowUTC()
		return true, nil
	})
	return err
}

// CreateChildChunk adds a customized child chunk to a parent chunk.
func (s *Service) CreateChildChunk(ctx context.Context, datasetID, documentID, segmentID, content string) (store.ChildChunk, error) {
	d, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return store.ChildChunk{}, err
	}
	seg, err := s.segment(ctx, doc, segmentID)
	if err != nil {
		return store.ChildChunk{}, err
	}
	if strings.TrimSpace(content) == "" {
		return store.ChildChunk{}, invalidParam("Content is empty")
	}
	kids, err := s.st.ChildChunks(ctx, []string{seg.ID})
	if err != nil {
		return store.ChildChunk{}, fmt.Errorf("knowledge: child chunks: %w", err)
	}
	pos := 0
	for _, k := range kids[seg.ID] {
		pos = max(pos, k.Position)
	}
	now := s.nowUTC()
	c := store.ChildChunk{ID: store.NewID(), SegmentID: seg.ID, DatasetID: d.ID, DocumentID: doc.ID,
		Generation: seg.Generation, Position: pos + 1, Content: content, WordCount: utf8.RuneCountInString(content),
		IndexNodeID: store.NewID(), IndexNodeHash: segment.TextHash(content), Type: store.ChildChunkCustomized,
		CreatedBy: s.account, CreatedAt: now, UpdatedAt: now}
	node, err := s.node(ctx, d, store.IndexNode{NodeID: c.IndexNodeID, DatasetID: d.ID, DocumentID: doc.ID,
		SegmentID: seg.ID, ChildChunkID: c.ID, Generation: c.Generation}, content, nil)
	if err != nil {
		return store.ChildChunk{}, err
	}
	if err := s.st.AddSegments(ctx, nil, []store.ChildChunk{c}); err != nil {
		return store.ChildChunk{}, fmt.Errorf("knowledge: add child chunk: %w", err)
	}
	if err := s.st.IndexNodes(ctx, []store.IndexNode{node}, now); err != nil {
		return store.ChildChunk{}, fmt.Errorf("knowledge: index child chunk: %w", err)
	}
	return c, nil
}

// ListChildChunks returns a page of a parent chunk's children.
func (s *Service) ListChildChunks(ctx context.Context, datasetID, documentID, segmentID, keyword string, page, limit int) ([]store.ChildChunk, int, error) {
	_, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return nil, 0, err
	}
	seg, err := s.segment(ctx, doc, segmentID)
	if err != nil {
		return nil, 0, err
	}
	items, total, err := s.st.ListChildChunks(ctx, seg.ID, keyword, page, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("knowledge: list child chunks: %w", err)
	}
	return items, total, nil
}

func (s *Service) childChunk(ctx context.Context, datasetID, documentID, segmentID, childID string) (store.Dataset, store.ChildChunk, error) {
	d, doc, err := s.chunkTarget(ctx, datasetID, documentID)
	if err != nil {
		return d, store.ChildChunk{}, err
	}
	seg, err := s.segment(ctx, doc, segmentID)
	if err != nil {
		return d, store.ChildChunk{}, err
	}
	if !isUUID(childID) {
		return d, store.ChildChunk{}, ErrChildNotFound
	}
	c, err := s.st.ChildChunk(ctx, seg.ID, strings.ToLower(childID))
	if err != nil {
		return d, store.ChildChunk{}, storeErr(err, ErrChildNotFound, "child chunk")
	}
	return d, c, nil
}

// UpdateChildChunk changes a child chunk's content and re-indexes it.
func (s *Service) UpdateChildChunk(ctx context.Context, datasetID, documentID, segmentID, childID, content string) (store.ChildChunk, error) {
	d, c, err := s.childChunk(ctx, datasetID, documentID, segmentID, childID)
	if err != nil {
		return store.ChildChunk{}, err
	}
	if strings.TrimSpace(content) == "" {
		return store.ChildChunk{}, invalidParam("Content is empty")
	}
	c.Content = content
	c.WordCount = utf8.RuneCountInString(content)
	c.IndexNodeHash = segment.TextHash(content)
	c.Type = store.ChildChunkCustomized
	c.UpdatedAt = s.nowUTC()
	node, err := s.node(ctx, d, store.IndexNode{NodeID: c.IndexNodeID, DatasetID: d.ID, DocumentID: c.DocumentID,
		SegmentID: c.SegmentID, ChildChunkID: c.ID, Generation: c.Generation}, content, nil)
	if err != nil {
		return store.ChildChunk{}, err
	}
	if err := s.st.UpdateChildChunk(ctx, c, node); err != nil {
		return store.ChildChunk{}, fmt.Errorf("knowledge: update child chunk: %w", err)
	}
	return c, nil
}

// DeleteChildChunk deletes a child chunk.
func (s *Service) DeleteChildChunk(ctx context.Context, datasetID, documentID, segmentID, childID string) error {
	_, c, err := s.childChunk(ctx, datasetID, documentID, segmentID, childID)
	if err != nil {
		return err
	}
	if err := s.st.DeleteChildChunk(ctx, c.SegmentID, c.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("knowledge: delete child chunk: %w", err)
	}
	return nil
}
