package knowledge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// hangMarker in a file makes the gate extractor hold its extraction.
const hangMarker = "[hang]"

// gate is an extractor that holds the extraction of any file containing hangMarker until it is
// opened, like a parser stuck on a hostile file. With ignoreCtx it does not return when its
// context ends either, like a parser loop inside the process.
type gate struct {
	entered   chan string
	release   chan struct{}
	once      sync.Once
	ignoreCtx bool
}

func newGate(t *testing.T, ignoreCtx bool) *gate {
	g := &gate{entered: make(chan string, 16), release: make(chan struct{}), ignoreCtx: ignoreCtx}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) Extract(ctx context.Context, name string, r io.Reader, _ int64) (extract.Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return extract.Document{}, err
	}
	if bytes.Contains(data, []byte(hangMarker)) {
		g.entered <- name
		if g.ignoreCtx {
			<-g.release
			ctx = context.WithoutCancel(ctx)
		} else {
			select {
			case <-g.release:
			case <-ctx.Done():
				return extract.Document{}, ctx.Err()
			}
		}
	}
	return extract.Extract(ctx, name, bytes.NewReader(data), int64(len(data)))
}

// waitEntered waits for the gate to hold an extraction.
func (g *gate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the extraction did not start")
	}
}

// queuedEnv is an env whose indexing runs on a one-worker queue, as in the server; opts adjust
// its options further.
func queuedEnv(t *testing.T, eng storetest.Engine, extractor knowledge.ExtractFunc, timeout time.Duration, opts ...func(*knowledge.Options)) *env {
	t.Helper()
	q := jobs.NewLocal(jobs.Options{Workers: 1})
	e := newEnv(t, eng, append([]func(*knowledge.Options){func(o *knowledge.Options) {
		o.Jobs, o.Extract, o.IndexingTimeout = q, extractor, timeout
	}}, opts...)...)
	q.Handle(knowledge.JobKind, e.svc.HandleJob)
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = q.Stop(ctx)
	})
	return e
}

func (e *env) dataset(t *testing.T, name, technique string) string {
	t.Helper()
	in := knowledge.CreateDatasetInput{Name: name, IndexingTechnique: technique}
	if technique == store.TechniqueHighQuality {
		in.EmbeddingModelProvider, in.EmbeddingModel = "openai", "text-embedding-3-small"
	}
	d, err := e.svc.CreateDataset(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// create adds a text document (queued for indexing when the env has a queue).
func (e *env) create(t *testing.T, datasetID, name, text string) knowledge.DocumentView {
	t.Helper()
	v, _, err := e.svc.CreateDocument(context.Background(), datasetID, knowledge.DocumentConfig{ProcessRule: []byte(`{"mode":"automatic"}`)},
		knowledge.Source{Filename: name, Body: strings.NewReader(text), Text: true})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitDone polls the document until its indexing completed or failed.
func (e *env) waitDone(t *testing.T, datasetID, id string) knowledge.DocumentView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := e.svc.GetDocument(context.Background(), datasetID, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.IndexingStatus == store.IndexingCompleted || v.IndexingStatus == store.IndexingError {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("document %s still %s", v.Name, v.IndexingStatus)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) status(t *testing.T, datasetID, id string) knowledge.DocumentView {
	t.Helper()
	v, err := e.svc.GetDocument(context.Background(), datasetID, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// closeSignal tells when the indexing of a file is over: the indexer closes the file it read
// when its attempt returns, after its last write.
type closeSignal struct {
	knowledge.Files
	name   string
	closed chan struct{}
}

func (c *closeSignal) Open(ctx context.Context, f store.UploadFile) (io.ReadCloser, error) {
	rc, err := c.Files.Open(ctx, f)
	if err != nil || f.Name != c.name {
		return rc, err
	}
	return signalClose{rc, c.closed}, nil
}

type signalClose struct {
	io.ReadCloser
	closed chan struct{}
}

func (s signalClose) Close() error {
	defer close(s.closed)
	return s.ReadCloser.Close()
}

// TestIndexingTimeoutFreesTheWorker: an extraction that never returns, not even when its
// context ends, holds the only worker; past the indexing timeout its document ends in error,
// the next document is indexed, and the failed one is not resumed. When the extraction returns
// at last, the abandoned attempt changes nothing.
func TestIndexingTimeoutFreesTheWorker(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		g := newGate(t, true)
		files := &closeSignal{name: "hung", closed: make(chan struct{})}
		e := queuedEnv(t, eng, g.Extract, 2*time.Second, func(o *knowledge.Options) {
			files.Files = o.Files
			o.Files = files
		})
		ds := e.dataset(t, "timeouts", store.TechniqueEconomy)
		hung := e.create(t, ds, "hung", "A parser never finishes this file. "+hangMarker)
		g.waitEntered(t)
		next := e.create(t, ds, "next", corpus)

		if got := e.waitDone(t, ds, next.ID); got.IndexingStatus != store.IndexingCompleted || got.Stats.SegmentCount == 0 {
			t.Fatalf("next document: %s %q", got.IndexingStatus, got.Error)
		}
		got := e.waitDone(t, ds, hung.ID)
		if got.IndexingStatus != store.IndexingError || got.Error != "Indexing took longer than 2s and was stopped." ||
			got.StoppedAt == nil || knowledge.DisplayStatus(got.Document) != "error" {
			t.Fatalf("hung document: %s %q", got.IndexingStatus, got.Error)
		}
		if n, err := e.svc.Resume(context.Background()); err != nil || n != 0 {
			t.Fatalf("resume queued %d documents (%v)", n, err)
		}

		g.open()
		select {
		case <-files.closed:
		case <-time.After(60 * time.Second):
			t.Fatal("the abandoned attempt did not end")
		}
		if after := e.status(t, ds, hung.ID); after.IndexingStatus != store.IndexingError || after.Error != got.Error || after.Stats.SegmentCount != 0 {
			t.Fatalf("after the abandoned attempt ended: %s %q, %d chunks", after.IndexingStatus, after.Error, after.Stats.SegmentCount)
		}
	})
}

// parkingStore holds the first index write of the document whose chunks contain parkMarker
// until proceed is closed, and then makes it whatever the job's context says: a write already
// under way when the document is deleted.
type parkingStore struct {
	knowledge.Store
	target   atomic.Value // document id
	parked   chan struct{}
	proceed  chan struct{}
	returned chan struct{}
	once     sync.Once

	mu             sync.Mutex
	segIDs, nodeID []string
}

const parkMarker = "[park]"

func (p *parkingStore) AddSegments(ctx context.Context, segs []store.Segment, children []store.ChildChunk) error {
	for _, s := range segs {
		if strings.Contains(s.Content, parkMarker) {
			p.target.CompareAndSwap(nil, s.DocumentID)
		}
		if id, _ := p.target.Load().(string); id == s.DocumentID {
			p.mu.Lock()
			p.segIDs = append(p.segIDs, s.ID)
			p.mu.Unlock()
		}
	}
	return p.Store.AddSegments(ctx, segs, children)
}

func (p *parkingStore) IndexNodes(ctx context.Context, nodes []store.IndexNode, at time.Time) error {
	id, _ := p.target.Load().(string)
	if len(nodes) == 0 || nodes[0].DocumentID != id {
		return p.Store.IndexNodes(ctx, nodes, at)
	}
	first := false
	p.once.Do(func() { first = true })
	if !first {
		return p.Store.IndexNodes(ctx, nodes, at)
	}
	p.mu.Lock()
	for _, n := range nodes {
		p.nodeID = append(p.nodeID, n.NodeID)
	}
	p.mu.Unlock()
	close(p.parked)
	<-p.proceed
	defer close(p.returned)
	return p.Store.IndexNodes(context.WithoutCancel(ctx), nodes, at)
}

// TestDeleteDocumentBeingIndexed deletes documents whose indexing is under way: one held in
// extraction by a parser that ignores its context, one in the middle of writing its index.
// Both deletions succeed, nothing of the documents remains, and the worker goes on.
func TestDeleteDocumentBeingIndexed(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		g := newGate(t, true)
		ps := &parkingStore{parked: make(chan struct{}), proceed: make(chan struct{}), returned: make(chan struct{})}
		e := queuedEnv(t, eng, g.Extract, time.Minute, func(o *knowledge.Options) {
			ps.Store = o.Store
			o.Store = ps
		})
		ds := e.dataset(t, "deletions", store.TechniqueHighQuality)

		// Held in extraction.
		stuck := e.create(t, ds, "stuck", "A parser never finishes this file. "+hangMarker)
		g.waitEntered(t)
		if v := e.status(t, ds, stuck.ID); v.IndexingStatus != store.IndexingParsing || knowledge.DisplayStatus(v.Document) != "indexing" {
			t.Fatalf("stuck document is %s", v.IndexingStatus)
		}
		if err := e.svc.DeleteDocument(ctx, ds, stuck.ID); err != nil {
			t.Fatalf("delete a document in parsing: %v", err)
		}
		if _, err := e.svc.GetDocument(ctx, ds, stuck.ID); !errors.Is(err, knowledge.ErrDocumentNotFound) {
			t.Fatalf("deleted document: %v", err)
		}
		// The extraction finishing now changes nothing.
		g.open()

		// Deleted while a batch of its index is being written.
		writing := e.create(t, ds, "writing", "Chunk one is about falcons "+parkMarker+".\n\nChunk two is about willows.")
		select {
		case <-ps.parked:
		case <-time.After(60 * time.Second):
			t.Fatal("indexing did not reach its index write")
		}
		deleted := make(chan error, 1)
		go func() { deleted <- e.svc.DeleteDocument(ctx, ds, writing.ID) }()
		close(ps.proceed)
		select {
		case err := <-deleted:
			if err != nil {
				t.Fatalf("delete a document being written: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("delete did not return")
		}
		<-ps.returned
		next := e.create(t, ds, "next", corpus)
		if got := e.waitDone(t, ds, next.ID); got.IndexingStatus != store.IndexingCompleted {
			t.Fatalf("next document: %s %q", got.IndexingStatus, got.Error)
		}
		if _, err := e.svc.GetDocument(ctx, ds, writing.ID); !errors.Is(err, knowledge.ErrDocumentNotFound) {
			t.Fatalf("deleted document: %v", err)
		}
		ps.mu.Lock()
		segIDs, nodeIDs := ps.segIDs, ps.nodeID
		ps.mu.Unlock()
		if len(segIDs) == 0 || len(nodeIDs) == 0 {
			t.Fatal("the parked write saw no chunks")
		}
		if vecs, err := e.st.NodeVectors(ctx, nodeIDs); err != nil || len(vecs) != 0 {
			t.Fatalf("%d index rows of the deleted document remain (%v)", len(vecs), err)
		}
		for _, id := range segIDs {
			if _, err := e.st.Segment(ctx, writing.ID, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a chunk of the deleted document remains: %v", err)
			}
		}
	})
}

// TestChangesDuringIndexingAreKept archives a document and sets its metadata while it is being
// indexed: the indexing completes and both changes are still there.
func TestChangesDuringIndexingAreKept(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		g := newGate(t, false)
		e := queuedEnv(t, eng, g.Extract, time.Minute)
		ds := e.dataset(t, "changes", store.TechniqueEconomy)
		field, err := e.svc.CreateMetadataField(ctx, ds, "author", "string")
		if err != nil {
			t.Fatal(err)
		}
		doc := e.create(t, ds, "notes", corpus+"\n\n"+hangMarker)
		g.waitEntered(t)
		if err := e.svc.SetStatus(ctx, ds, knowledge.ActionArchive, []string{doc.ID}); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.SetDocumentsMetadata(ctx, ds, []knowledge.DocumentMetadataOp{
			{DocumentID: doc.ID, Values: []knowledge.MetadataValue{{ID: field.ID, Value: "Ada"}}},
		}); err != nil {
			t.Fatal(err)
		}
		g.open()
		got := e.waitDone(t, ds, doc.ID)
		var meta map[string]any
		_ = json.Unmarshal(got.DocMetadata, &meta)
		if got.IndexingStatus != store.IndexingCompleted || !got.Archived || got.ArchivedAt == nil || meta["author"] != "Ada" {
			t.Fatalf("after indexing: status %s archived %v metadata %s", got.IndexingStatus, got.Archived, got.DocMetadata)
		}
	})
}

// TestReplacingDocumentBeingIndexed uploads new content under the name of a document being
// indexed (Dify re-points the document): the old indexing is stopped and the new content is
// what ends up indexed.
func TestReplacingDocumentBeingIndexed(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		g := newGate(t, false)
		e := queuedEnv(t, eng, g.Extract, time.Minute)
		ds := e.dataset(t, "replace", store.TechniqueEconomy)
		old := e.create(t, ds, "report", "Apples grow in the orchard. "+hangMarker)
		g.waitEntered(t)
		if _, _, err := e.svc.UpdateDocument(ctx, ds, old.ID, knowledge.DocumentConfig{}, nil); !errors.Is(err, knowledge.ErrNotAvailable) {
			t.Fatalf("update of a document being indexed: %v", err)
		}
		repl := e.create(t, ds, "report", "Cherries ripen in early summer.")
		if repl.ID != old.ID || repl.UploadFileID == old.UploadFileID {
			t.Fatalf("re-pointed document %s (was %s)", repl.ID, old.ID)
		}
		g.open()
		got := e.waitDone(t, ds, old.ID)
		if got.IndexingStatus != store.IndexingCompleted || got.UploadFileID != repl.UploadFileID {
			t.Fatalf("after indexing: %s %q, file %s (want %s)", got.IndexingStatus, got.Error, got.UploadFileID, repl.UploadFileID)
		}
		segs, total, _, err := e.svc.ListSegments(ctx, ds, old.ID, store.SegmentQuery{Page: 1, Limit: 20})
		if err != nil || total != 1 || !strings.Contains(segs[0].Content, "Cherries") {
			t.Fatalf("chunks: %d %v %+v", total, err, segs)
		}
	})
}

// TestInterruptedIndexingIsBounded: a document whose indexing was cut short by crashes three
// times is not tried a fourth time, while fewer crashes, or a shutdown, are resumed.
func TestInterruptedIndexingIsBounded(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		g := newGate(t, false)
		e := newEnv(t, eng, func(o *knowledge.Options) { o.Extract = g.Extract })
		ds := e.dataset(t, "crashes", store.TechniqueEconomy)
		// crashed leaves a document as n attempts that died with the process leave it.
		crashed := func(name string, n int) knowledge.DocumentView {
			v := e.create(t, ds, name, corpus)
			doc := v.Document
			doc.IndexingStatus = store.IndexingParsing
			doc.IndexingGeneration = doc.Generation + n
			if err := e.st.UpdateDocument(ctx, doc); err != nil {
				t.Fatal(err)
			}
			return v
		}
		given := crashed("given-up", 3)
		if err := e.svc.IndexDocument(ctx, ds, given.ID); err != nil {
			t.Fatal(err)
		}
		got := e.status(t, ds, given.ID)
		if got.IndexingStatus != store.IndexingError || got.IndexingGeneration != got.Generation ||
			got.Error != "Indexing was interrupted 3 times (the server stopped while indexing this document) and was given up." {
			t.Fatalf("after 3 crashes: %s %q", got.IndexingStatus, got.Error)
		}
		twice := crashed("twice", 2)
		if err := e.svc.IndexDocument(ctx, ds, twice.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.status(t, ds, twice.ID); got.IndexingStatus != store.IndexingCompleted || got.Stats.SegmentCount == 0 {
			t.Fatalf("after 2 crashes: %s %q", got.IndexingStatus, got.Error)
		}

		// A shutdown during indexing is not counted.
		doc := e.create(t, ds, "shutdown", corpus+"\n\n"+hangMarker)
		for range 3 {
			runCtx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- e.svc.IndexDocument(runCtx, ds, doc.ID) }()
			g.waitEntered(t)
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted indexing: %v", err)
			}
			if got := e.status(t, ds, doc.ID); got.IndexingStatus != store.IndexingParsing || got.IndexingGeneration != got.Generation {
				t.Fatalf("after a shutdown: %s, generation %d/%d", got.IndexingStatus, got.IndexingGeneration, got.Generation)
			}
		}
		g.open()
		if err := e.svc.IndexDocument(ctx, ds, doc.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.status(t, ds, doc.ID); got.IndexingStatus != store.IndexingCompleted {
			t.Fatalf("after 3 shutdowns: %s %q", got.IndexingStatus, got.Error)
		}
	})
}

// TestDeleteDatasetBeingIndexed deletes a knowledge base while one of its documents is held in
// extraction by a parser that ignores its context: the deletion stops that indexing, and the
// worker goes on with the documents of other knowledge bases.
func TestDeleteDatasetBeingIndexed(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		ctx := context.Background()
		g := newGate(t, true)
		e := queuedEnv(t, eng, g.Extract, time.Minute)
		doomed := e.dataset(t, "doomed", store.TechniqueEconomy)
		e.create(t, doomed, "stuck", "A parser never finishes this file. "+hangMarker)
		g.waitEntered(t)
		if err := e.svc.DeleteDataset(ctx, doomed); err != nil {
			t.Fatalf("delete a dataset being indexed: %v", err)
		}
		other := e.dataset(t, "other", store.TechniqueEconomy)
		next := e.create(t, other, "next", corpus)
		if got := e.waitDone(t, other, next.ID); got.IndexingStatus != store.IndexingCompleted {
			t.Fatalf("next document: %s %q", got.IndexingStatus, got.Error)
		}
	})
}

// TestInternalFailureKeepsItsCause: a document whose indexing fails for an internal reason
// shows a generic error; the cause (which may name hosts, paths or SQL) is only logged.
func TestInternalFailureKeepsItsCause(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		failing := func(context.Context, string, io.Reader, int64) (extract.Document, error) {
			return extract.Document{}, errors.New("open /var/lib/parley/blobs/ab/cd: dial tcp 10.1.2.3:5432: connection refused")
		}
		e := queuedEnv(t, eng, failing, time.Minute)
		ds := e.dataset(t, "internal", "economy")
		doc := e.create(t, ds, "a.txt", "some text")
		got := e.waitDone(t, ds, doc.ID)
		if got.IndexingStatus != store.IndexingError || got.Error != "Indexing failed because of an internal error." {
			t.Fatalf("document ended %s with error %q", got.IndexingStatus, got.Error)
		}
	})
}
