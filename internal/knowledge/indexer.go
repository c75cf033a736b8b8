package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// JobKind is the job kind of document indexing; the payload is "<dataset id>/<document id>".
const JobKind = "knowledge.index"

// indexBatch is how many nodes are embedded (or keyword-indexed) and written together.
const indexBatch = 1024

func (s *Service) enqueue(ctx context.Context, doc store.Document) {
	if s.jobs == nil {
		return
	}
	if _, busy := s.running.LoadOrStore(doc.ID, struct{}{}); busy {
		return
	}
	err := s.jobs.Enqueue(ctx, jobs.Job{Kind: JobKind, Payload: []byte(doc.DatasetID + "/" + doc.ID)})
	if err != nil {
		s.running.Delete(doc.ID)
		// The document stays waiting; the next resume sweep queues it again.
		s.log.WarnContext(ctx, "knowledge: could not queue indexing", "document_id", doc.ID, "error", err)
	}
}

// HandleJob is the jobs.Handler of JobKind.
func (s *Service) HandleJob(ctx context.Context, job jobs.Job) error {
	datasetID, docID, ok := strings.Cut(string(job.Payload), "/")
	if !ok {
		return fmt.Errorf("knowledge: bad job payload %q", job.Payload)
	}
	defer s.running.Delete(docID)
	return s.IndexDocument(ctx, datasetID, docID)
}

// Resume queues every document whose indexing was interrupted (by a crash, a kill or a full
// queue) and is not already running here.
func (s *Service) Resume(ctx context.Context) (int, error) {
	docs, err := s.st.UnfinishedDocuments(ctx)
	if err != nil {
		return 0, fmt.Errorf("knowledge: resume: %w", err)
	}
	n := 0
	for _, doc := range docs {
		if _, busy := s.running.Load(doc.ID); busy {
			continue
		}
		s.enqueue(ctx, doc)
		n++
	}
	return n, nil
}

// RunResumer calls Resume now and then every interval until ctx ends.
func (s *Service) RunResumer(ctx context.Context, interval time.Duration) {
	if n, err := s.Resume(ctx); err != nil {
		s.log.ErrorContext(ctx, "knowledge: resume", "error", err)
	} else if n > 0 {
		s.log.InfoContext(ctx, "knowledge: resumed indexing", "documents", n)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Resume(ctx); err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "knowledge: resume", "error", err)
			}
		}
	}
}

// IndexDocument runs (or re-runs from the start) the indexing of one document: extract, clean,
// split, then keywords (economy) or embeddings (high quality), writing a new generation of
// chunks that becomes visible at once when complete. A cancelled ctx leaves the document to be
// resumed; any other failure ends it in status error with a readable message.
func (s *Service) IndexDocument(ctx context.Context, datasetID, docID string) error {
	d, err := s.st.Dataset(ctx, datasetID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("knowledge: index: %w", err)
	}
	doc, err := s.st.Document(ctx, datasetID, docID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("knowledge: index: %w", err)
	}
	switch doc.IndexingStatus {
	case store.IndexingCompleted, store.IndexingError:
		return nil
	}
	if doc.IsPaused {
		return nil
	}
	gen := doc.Generation + 1
	if doc.IndexingGeneration > doc.Generation {
		gen = doc.IndexingGeneration
	}
	// A previous attempt may have left part of this generation behind.
	if err := s.st.ClearGeneration(ctx, doc.ID, gen); err != nil {
		return fmt.Errorf("knowledge: index: clear: %w", err)
	}
	start := s.now()
	doc.IndexingGeneration = gen
	doc.Error = ""
	doc.StoppedAt = nil
	ts := s.nowUTC()
	doc.ProcessingStartedAt = &ts
	doc.IndexingStatus = store.IndexingParsing
	if err := s.st.UpdateDocument(ctx, doc); err != nil {
		return fmt.Errorf("knowledge: index: %w", err)
	}
	err = s.build(ctx, d, &doc, start)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return err // shutting down: resumed on the next start
	}
	s.log.WarnContext(ctx, "knowledge: indexing failed", "document_id", doc.ID, "error", err)
	bg := context.WithoutCancel(ctx)
	_ = s.st.ClearGeneration(bg, doc.ID, gen)
	doc.IndexingGeneration = doc.Generation
	doc.IndexingStatus = store.IndexingError
	doc.Error = failureMessage(err)
	stopped := s.nowUTC()
	doc.StoppedAt = &stopped
	if uerr := s.st.UpdateDocument(bg, doc); uerr != nil {
		return fmt.Errorf("knowledge: index: record failure: %w", uerr)
	}
	return nil
}

// failureMessage is the document's readable error.
func failureMessage(err error) string {
	var xe *extract.Error
	var le *segment.LengthError
	var ke *Error
	switch {
	case errors.As(err, &xe):
		return xe.Error()
	case errors.As(err, &le):
		return le.Error()
	case errors.As(err, &ke):
		return ke.Message
	}
	return err.Error()
}

func (s *Service) setStatus(ctx context.Context, doc *store.Document, status string, at **time.Time) error {
	now := s.nowUTC()
	if at != nil {
		*at = &now
	}
	doc.IndexingStatus = status
	return s.st.UpdateDocument(ctx, *doc)
}

func (s *Service) build(ctx context.Context, d store.Dataset, doc *store.Document, start time.Time) error {
	up, err := s.files.Lookup(ctx, doc.UploadFileID)
	if err != nil {
		return err
	}
	rc, err := s.files.Open(ctx, up)
	if err != nil {
		return err
	}
	xd, err := extract.Extract(ctx, up.Name, rc, up.Size)
	rc.Close()
	if err != nil {
		return err
	}
	doc.WordCount = utf8.RuneCountInString(xd.Text)
	if err := s.setStatus(ctx, doc, store.IndexingCleaning, &doc.ParsingCompletedAt); err != nil {
		return err
	}
	rule, err := s.rule(ctx, doc.ProcessRuleID)
	if err != nil {
		return err
	}
	if doc.DocForm == DocFormHierarchical && rule.Mode != segment.ModeHierarchical {
		return invalidParam(fmt.Sprintf("The hierarchical_model doc form needs a hierarchical process rule, not %q.", rule.Mode))
	}
	if err := s.setStatus(ctx, doc, store.IndexingSplitting, &doc.CleaningCompletedAt); err != nil {
		return err
	}
	highQuality := d.IndexingTechnique == store.TechniqueHighQuality
	splitter := segment.Splitter{MaxSegmentLength: s.maxSeg, NoTokens: !highQuality}
	var chunks []segment.Chunk
	for _, part := range xd.Parts {
		cs, err := splitter.Split(part, rule)
		if err != nil {
			return err
		}
		chunks = append(chunks, cs...)
	}
	segs, children, nodes := s.rows(d, doc, chunks, highQuality)
	var embedder embedFunc
	if highQuality {
		if embedder, err = s.embedder(d); err != nil {
			return err
		}
	}
	// The first batches' keywords (or embeddings) are computed while the chunk rows are
	// written: the rows first, so that progress has its total from the start.
	written := func() error {
		for i := 0; i < len(segs); i += 2000 {
			if err := s.st.AddSegments(ctx, segs[i:min(i+2000, len(segs))], nil); err != nil {
				return err
			}
		}
		for i := 0; i < len(children); i += 2000 {
			if err := s.st.AddSegments(ctx, nil, children[i:min(i+2000, len(children))]); err != nil {
				return err
			}
		}
		return s.setStatus(ctx, doc, store.IndexingIndexing, &doc.SplittingCompletedAt)
	}
	total, err := s.indexNodes(ctx, d, nodes, embedder, written)
	if err != nil {
		return err
	}
	now := s.nowUTC()
	doc.CompletedAt = &now
	doc.IndexingLatency = s.now().Sub(start).Seconds()
	doc.Tokens = total
	doc.IndexingStatus = store.IndexingCompleted
	doc.Generation = doc.IndexingGeneration
	return s.st.SwapGeneration(ctx, *doc)
}

func (s *Service) rule(ctx context.Context, id string) (segment.ProcessRule, error) {
	pr, err := s.st.ProcessRule(ctx, id)
	if err != nil {
		return segment.ProcessRule{}, fmt.Errorf("knowledge: process rule: %w", err)
	}
	raw, _ := json.Marshal(map[string]any{"mode": pr.Mode, "rules": pr.Rules})
	return segment.ParseProcessRule(raw)
}

// pendingNode is a node to index with the text its keywords, terms and vector come from.
type pendingNode struct {
	node store.IndexNode
	text string
}

// rows turns chunks into segment and child chunk rows of the document's indexing generation,
// and the nodes to index.
func (s *Service) rows(d store.Dataset, doc *store.Document, chunks []segment.Chunk, highQuality bool) ([]store.Segment, []store.ChildChunk, []pendingNode) {
	now := s.nowUTC()
	segs := make([]store.Segment, 0, len(chunks))
	var children []store.ChildChunk
	nodes := make([]pendingNode, 0, len(chunks))
	for i, c := range chunks {
		seg := store.Segment{ID: store.NewID(), DatasetID: d.ID, DocumentID: doc.ID, Generation: doc.IndexingGeneration,
			Position: i + 1, Content: c.Content, WordCount: c.WordCount, IndexNodeID: store.NewID(),
			IndexNodeHash: c.IndexNodeHash, Enabled: true, Status: store.SegmentIndexing, CreatedBy: s.account,
			CreatedAt: now, UpdatedAt: now, IndexingAt: &now}
		if highQuality {
			seg.Tokens = c.Tokens
		}
		segs = append(segs, seg)
		if doc.DocForm != DocFormHierarchical {
			nodes = append(nodes, pendingNode{node: store.IndexNode{NodeID: seg.IndexNodeID, DatasetID: d.ID,
				DocumentID: doc.ID, SegmentID: seg.ID, Generation: seg.Generation, Tokens: seg.Tokens}, text: c.Content})
			continue
		}
		for j, k := range c.Children {
			ch := store.ChildChunk{ID: store.NewID(), SegmentID: seg.ID, DatasetID: d.ID, DocumentID: doc.ID,
				Generation: seg.Generation, Position: j + 1, Content: k.Content, WordCount: k.WordCount,
				IndexNodeID: store.NewID(), IndexNodeHash: k.IndexNodeHash, Type: store.ChildChunkAutomatic,
				CreatedBy: s.account, CreatedAt: now, UpdatedAt: now}
			children = append(children, ch)
			nodes = append(nodes, pendingNode{node: store.IndexNode{NodeID: ch.IndexNodeID, DatasetID: d.ID,
				DocumentID: doc.ID, SegmentID: seg.ID, ChildChunkID: ch.ID, Generation: seg.Generation}, text: k.Content})
		}
	}
	return segs, children, nodes
}

// embedFunc embeds texts, returning unit vectors and the tokens used.
type embedFunc func(ctx context.Context, texts []string) ([][]float32, error)

func (s *Service) embedder(d store.Dataset) (embedFunc, error) {
	spec, err := s.catalog.Lookup(models.TypeTextEmbedding, d.EmbeddingModelProvider, d.EmbeddingModel)
	if err != nil {
		return nil, ErrNoEmbeddingModel.withCause(err)
	}
	client, err := s.models.Embedder(spec)
	if err != nil {
		return nil, ErrNoEmbeddingModel.withCause(err)
	}
	batch := spec.MaxChunks
	if batch <= 0 {
		batch = 32
	}
	return func(ctx context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, 0, len(texts))
		for i := 0; i < len(texts); i += batch {
			vecs, _, err := client.Embed(ctx, spec.Name, texts[i:min(i+batch, len(texts))])
			if err != nil {
				return nil, err
			}
			for _, v := range vecs {
				vectorindex.Normalize(v)
			}
			out = append(out, vecs...)
		}
		return out, nil
	}, nil
}

// indexNodes computes keywords and full-text terms (and vectors, for high quality) of the
// nodes in batches, the next batch computed while the previous one is written (the first while
// before runs), and returns the total of the segment nodes' tokens.
func (s *Service) indexNodes(ctx context.Context, d store.Dataset, nodes []pendingNode, embed embedFunc, before func() error) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		batch []store.IndexNode
		err   error
	}
	ready := make(chan result, 4)
	go func() {
		defer close(ready)
		for i := 0; i < len(nodes); i += indexBatch {
			part := nodes[i:min(i+indexBatch, len(nodes))]
			batch, err := s.prepare(ctx, d, part, embed)
			select {
			case ready <- result{batch, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	if err := before(); err != nil {
		return 0, err
	}
	total := 0
	for r := range ready {
		if r.err != nil {
			return 0, r.err
		}
		if err := s.st.IndexNodes(ctx, r.batch, s.nowUTC()); err != nil {
			return 0, err
		}
		for _, n := range r.batch {
			if n.ChildChunkID == "" {
				total += n.Tokens
			}
		}
	}
	return total, ctx.Err()
}

func (s *Service) prepare(ctx context.Context, d store.Dataset, part []pendingNode, embed embedFunc) ([]store.IndexNode, error) {
	texts := make([]string, len(part))
	for i, p := range part {
		texts[i] = p.text
	}
	out := make([]store.IndexNode, len(part))
	if embed != nil {
		vecs, err := embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		for i := range part {
			out[i] = part[i].node
			out[i].Vector = vecs[i]
			out[i].Terms = segment.Terms(texts[i])
			if out[i].ChildChunkID != "" || out[i].Tokens == 0 {
				out[i].Tokens = tokens.Count(texts[i])
			}
		}
		return out, nil
	}
	n := d.KeywordNumber
	if n <= 0 {
		n = segment.DefaultKeywordNumber
	}
	eachParallel(len(part), func(i int) {
		out[i] = part[i].node
		out[i].Keywords = segment.Keywords(texts[i], n)
		out[i].SegmentKeywords = true
		// Economy datasets are only ever searched by keyword (as in Dify): no full-text terms.
	})
	return out, nil
}

// eachParallel calls fn(0…n-1) on up to GOMAXPROCS goroutines.
func eachParallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}
