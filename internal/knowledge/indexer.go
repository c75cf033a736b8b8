package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/safeerr"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// JobKind is the job kind of document indexing; the payload is "<dataset id>/<document id>/<run>"
// (store's migration 14 writes this kind and format for the documents left unfinished before it).
const JobKind = "knowledge.index"

// indexBatch is how many nodes are embedded (or keyword-indexed) and written together.
const indexBatch = 1024

// DefaultIndexingTimeout bounds the indexing of one document when Options.IndexingTimeout is 0.
const DefaultIndexingTimeout = 10 * time.Minute

// maxIndexingAttempts is how many times the indexing of a document may begin without ending:
// an attempt cut short by a crash leaves its job to be claimed again when its lease expires, and a
// document that kills or wedges the process would otherwise do so at every start.
const maxIndexingAttempts = 3

var (
	// errTimedOut is the cause of a job context that ran past the indexing timeout.
	errTimedOut = errors.New("knowledge: indexing timed out")
	// errPanicked is the failure of an attempt that panicked (logged with its stack).
	errPanicked = errors.New("knowledge: indexing panicked")
)

// queue registers a run for doc and queues its job, unless one is registered already. With
// replace, the caller holds the document's lock and has just changed what is to be indexed:
// the registered run is stopped and a new one queued.
func (s *Service) queue(ctx context.Context, doc store.Document, replace bool) bool {
	if s.jobs == nil {
		if replace {
			s.stopRun(doc.ID, errDocumentChanged)
		}
		return false
	}
	r := s.startRun(doc.DatasetID, doc.ID, replace)
	if r == nil {
		return false
	}
	payload := fmt.Appendf(nil, "%s/%s/%d", doc.DatasetID, doc.ID, r.id)
	if err := s.jobs.Enqueue(ctx, jobs.Job{Kind: JobKind, Payload: payload}); err != nil {
		s.finish(r)
		// The document stays waiting until it is changed or re-indexed.
		s.log.WarnContext(ctx, "knowledge: could not queue indexing", "document_id", doc.ID, "error", err)
		return false
	}
	return true
}

// HandleJob is the jobs.Handler of JobKind.
func (s *Service) HandleJob(ctx context.Context, job jobs.Job) error {
	parts := strings.Split(string(job.Payload), "/")
	var (
		id  uint64
		err = errors.New("want 3 parts")
	)
	if len(parts) == 3 {
		// Run 0 is a job queued by the upgrade to durable jobs: no process registered a run.
		id, err = strconv.ParseUint(parts[2], 10, 64)
	}
	if err != nil {
		return fmt.Errorf("knowledge: bad job payload %q", job.Payload)
	}
	r, runCtx := s.claimQueued(ctx, parts[1], id)
	if r == nil {
		// The job was queued by another process (or by this one before a restart) and taken
		// over after its lease expired: this process has no run for it, so it registers one.
		// A job whose run was stopped here because the document changed finds the newer run
		// registered and ends; one whose document was deleted, completed or failed meanwhile
		// finds nothing to index.
		if r = s.startRun(parts[0], parts[1], false); r == nil {
			return nil // queued or running here already, or the dataset is being deleted
		}
		if runCtx = s.claim(ctx, r); runCtx == nil {
			s.finish(r)
			return nil
		}
	}
	defer s.finish(r)
	return s.run(ctx, runCtx, r)
}

// Resume queues every document whose indexing neither ended nor is queued or running here. A
// server does not call it: indexing jobs are durable (internal/jobs.Durable), so a job cut
// short by a crash is claimed again once its lease expires. It is kept for operators and tests
// (a database from before durable jobs).
func (s *Service) Resume(ctx context.Context) (int, error) {
	docs, err := s.st.UnfinishedDocuments(ctx)
	if err != nil {
		return 0, fmt.Errorf("knowledge: resume: %w", err)
	}
	n := 0
	for _, doc := range docs {
		if s.queue(ctx, doc, false) {
			n++
		}
	}
	return n, nil
}

// IndexDocument runs (or re-runs from the start) the indexing of one document in this
// goroutine, stopping the run queued or running for it, if any: extract, clean, split, then
// keywords (economy) or embeddings (high quality), writing a new generation of chunks that
// becomes visible at once when complete. A cancelled ctx leaves the document to be resumed; any
// other failure, running past the indexing timeout included, ends it in status error with a
// readable message.
func (s *Service) IndexDocument(ctx context.Context, datasetID, docID string) error {
	unlock := s.lockDoc(docID)
	r := s.startRun(datasetID, docID, true)
	unlock()
	if r == nil {
		return nil // the dataset is being deleted
	}
	defer s.finish(r)
	runCtx := s.claim(ctx, r)
	if runCtx == nil {
		return nil
	}
	return s.run(ctx, runCtx, r)
}

// run carries out run r within the indexing timeout. ctx is the worker's context, runCtx the
// run's (ctx, cancelled when the run is stopped). The attempt runs on its own goroutine: a step
// that does not return when its context ends (a parser loop in this process) is left behind,
// closed, so the worker is free and nothing the step does later reaches the store.
func (s *Service) run(ctx, runCtx context.Context, r *indexRun) error {
	runCtx, cancel := context.WithTimeoutCause(runCtx, s.timeout, errTimedOut)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("knowledge: indexing panicked", "document_id", r.docID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- errPanicked
			}
		}()
		done <- s.attempt(runCtx, r)
	}()
	var err error
	select {
	case err = <-done:
	case <-runCtx.Done():
		err = context.Cause(runCtx)
	}
	cause := context.Cause(runCtx)
	switch {
	case err == nil:
		return nil
	case errors.Is(cause, errDocumentDeleted), errors.Is(cause, errDocumentChanged):
		return nil // whoever stopped the run owns the document now
	case ctx.Err() != nil:
		s.release(r)
		return err // shutting down: the job goes back to the queue
	}
	msg := failureMessage(err)
	if errors.Is(cause, errTimedOut) {
		msg = fmt.Sprintf("Indexing took longer than %s and was stopped.", s.timeout)
	}
	s.log.WarnContext(ctx, "knowledge: indexing failed", "document_id", r.docID, "error", err, "message", msg)
	if ferr := s.fail(r, msg); ferr != nil {
		return fmt.Errorf("knowledge: index: record failure: %w", ferr)
	}
	return nil
}

// attempt begins the run's attempt, unless the document is gone or has nothing to index, and
// builds it.
func (s *Service) attempt(ctx context.Context, r *indexRun) error {
	var (
		d     store.Dataset
		doc   store.Document
		begun bool
		start = s.now()
	)
	err := s.write(r, func() error {
		var err error
		d, err = s.st.Dataset(ctx, r.datasetID)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("knowledge: index: %w", err)
		}
		doc, err = s.st.Document(ctx, r.datasetID, r.docID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("knowledge: index: %w", err)
		}
		switch {
		case doc.IndexingStatus == store.IndexingCompleted, doc.IndexingStatus == store.IndexingError, doc.IsPaused:
			return nil
		}
		// Each attempt builds its own generation, so the generations begun since the served
		// one count the attempts that never ended (the process died or hung during them).
		gen := max(doc.Generation, doc.IndexingGeneration) + 1
		if n := gen - doc.Generation; n > maxIndexingAttempts {
			return interruptedError(n - 1)
		}
		// A previous attempt may have left part of this generation behind.
		if err := s.st.ClearGeneration(ctx, doc.ID, gen); err != nil {
			return fmt.Errorf("knowledge: index: clear: %w", err)
		}
		doc.IndexingGeneration = gen
		doc.Error = ""
		doc.StoppedAt = nil
		ts := s.nowUTC()
		doc.ProcessingStartedAt = &ts
		doc.IndexingStatus = store.IndexingParsing
		if err := s.st.UpdateDocument(ctx, doc); err != nil {
			return fmt.Errorf("knowledge: index: %w", err)
		}
		r.gen, begun = gen, true
		return nil
	})
	if err != nil || !begun {
		return err
	}
	return s.build(ctx, r, d, &doc, start)
}

// fail ends r's document in status error with msg, dropping every generation begun since the
// served one, unless r is closed.
func (s *Service) fail(r *indexRun, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	unlock := s.lockDoc(r.docID)
	defer unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	doc, err := s.st.Document(ctx, r.datasetID, r.docID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for g := doc.Generation + 1; g <= doc.IndexingGeneration; g++ {
		if err := s.st.ClearGeneration(ctx, doc.ID, g); err != nil {
			return err
		}
	}
	doc.IndexingGeneration = doc.Generation
	doc.IndexingStatus = store.IndexingError
	doc.Error = msg
	stopped := s.nowUTC()
	doc.StoppedAt = &stopped
	return s.st.UpdateDocument(ctx, doc)
}

// release closes r after a shutdown interrupted it. The attempt was not the document's fault, so
// it is not counted: the document's indexing generation goes back to where it was, and the next
// attempt builds the same one again. A process that dies or hangs does not get here, and its
// attempt counts.
func (s *Service) release(r *indexRun) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	unlock := s.lockDoc(r.docID)
	defer unlock()
	if r.closed {
		return
	}
	r.closed = true
	if r.gen == 0 {
		return
	}
	doc, err := s.st.Document(ctx, r.datasetID, r.docID)
	if err != nil || doc.IndexingGeneration != r.gen {
		return
	}
	doc.IndexingGeneration = r.gen - 1
	if err := s.st.UpdateDocument(ctx, doc); err != nil {
		s.log.Warn("knowledge: could not release an interrupted indexing", "document_id", r.docID, "error", err)
	}
}

// interruptedError is the failure of a document whose indexing was interrupted too many times.
type interruptedError int

func (n interruptedError) Error() string {
	return fmt.Sprintf("Indexing was interrupted %d times (the server stopped while indexing this document) and was given up.", int(n))
}

// SafeMessage implements safeerr.Error.
func (n interruptedError) SafeMessage() string { return n.Error() }

// failureMessage is the document's readable error: the client-safe text of the failure (an
// extraction, splitting, provider or knowledge error says what went wrong), the same text
// server/ would answer it with.
func failureMessage(err error) string {
	if msg, ok := safeerr.Message(err); ok {
		return msg
	}
	// Anything else (a storage failure, a panic) may name internals; the log has the detail.
	return "Indexing failed because of an internal error."
}

// save writes the indexing state of doc (status, timestamps, counts, generations) into the
// document's current row, leaving the rest as other writers left it; with final, it swaps the
// generation in and closes r.
func (s *Service) save(ctx context.Context, r *indexRun, doc *store.Document, final bool) error {
	return s.write(r, func() error {
		cur, err := s.st.Document(ctx, r.datasetID, r.docID)
		if err != nil {
			return fmt.Errorf("knowledge: index: %w", err)
		}
		cur.IndexingStatus = doc.IndexingStatus
		cur.ProcessingStartedAt, cur.ParsingCompletedAt = doc.ProcessingStartedAt, doc.ParsingCompletedAt
		cur.CleaningCompletedAt, cur.SplittingCompletedAt = doc.CleaningCompletedAt, doc.SplittingCompletedAt
		cur.CompletedAt, cur.StoppedAt = doc.CompletedAt, doc.StoppedAt
		cur.IndexingLatency, cur.Error = doc.IndexingLatency, doc.Error
		cur.WordCount, cur.Tokens = doc.WordCount, doc.Tokens
		cur.Generation, cur.IndexingGeneration = doc.Generation, doc.IndexingGeneration
		if !final {
			return s.st.UpdateDocument(ctx, cur)
		}
		if err := s.st.SwapGeneration(ctx, cur); err != nil {
			return err
		}
		r.closed = true
		return nil
	})
}

func (s *Service) setStatus(ctx context.Context, r *indexRun, doc *store.Document, status string, at **time.Time) error {
	now := s.nowUTC()
	if at != nil {
		*at = &now
	}
	doc.IndexingStatus = status
	return s.save(ctx, r, doc, false)
}

func (s *Service) build(ctx context.Context, r *indexRun, d store.Dataset, doc *store.Document, start time.Time) error {
	up, err := s.files.Lookup(ctx, doc.UploadFileID)
	if err != nil {
		return err
	}
	rc, err := s.files.Open(ctx, up)
	if err != nil {
		return err
	}
	defer rc.Close()
	xd, err := s.extract(ctx, files.ExtractName(up), rc, up.Size)
	if err != nil {
		return err
	}
	doc.WordCount = utf8.RuneCountInString(xd.Text)
	if err := s.setStatus(ctx, r, doc, store.IndexingCleaning, &doc.ParsingCompletedAt); err != nil {
		return err
	}
	rule, err := s.rule(ctx, doc.ProcessRuleID)
	if err != nil {
		return err
	}
	if doc.DocForm == DocFormHierarchical && rule.Mode != segment.ModeHierarchical {
		return invalidParam(fmt.Sprintf("The hierarchical_model doc form needs a hierarchical process rule, not %q.", rule.Mode))
	}
	if err := s.setStatus(ctx, r, doc, store.IndexingSplitting, &doc.CleaningCompletedAt); err != nil {
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
			batch := segs[i:min(i+2000, len(segs))]
			if err := s.write(r, func() error { return s.st.AddSegments(ctx, batch, nil) }); err != nil {
				return err
			}
		}
		for i := 0; i < len(children); i += 2000 {
			batch := children[i:min(i+2000, len(children))]
			if err := s.write(r, func() error { return s.st.AddSegments(ctx, nil, batch) }); err != nil {
				return err
			}
		}
		return s.setStatus(ctx, r, doc, store.IndexingIndexing, &doc.SplittingCompletedAt)
	}
	total, err := s.indexNodes(ctx, r, d, nodes, embedder, written)
	if err != nil {
		return err
	}
	now := s.nowUTC()
	doc.CompletedAt = &now
	doc.IndexingLatency = s.now().Sub(start).Seconds()
	doc.Tokens = total
	doc.IndexingStatus = store.IndexingCompleted
	doc.Generation = doc.IndexingGeneration
	return s.save(ctx, r, doc, true)
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
func (s *Service) indexNodes(ctx context.Context, r *indexRun, d store.Dataset, nodes []pendingNode, embed embedFunc, before func() error) (int, error) {
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
	for res := range ready {
		if res.err != nil {
			return 0, res.err
		}
		if err := s.write(r, func() error { return s.st.IndexNodes(ctx, res.batch, s.nowUTC()) }); err != nil {
			return 0, err
		}
		for _, n := range res.batch {
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
