package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
	"github.com/parleyhq/parley/internal/vectorindex"
)

var _ knowledge.Store = (*store.Store)(nil)

const testConfig = `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - {name: text-embedding-3-small, type: text-embedding, context_size: 8191, max_chunks: 32}
      - {name: jina-reranker-v2-base-multilingual, type: rerank, context_size: 8192}
`

type env struct {
	svc *knowledge.Service
	st  *store.Store
	up  *openaitest.Server
	// opts built svc; a test can build another service on the same store and files.
	opts knowledge.Options
}

// newEnv builds a service on a fresh store of engine e; opts adjust its options.
func newEnv(t *testing.T, e storetest.Engine, opts ...func(*knowledge.Options)) *env {
	t.Helper()
	up, file := openaitest.NewConfigured(t, testConfig, openaitest.WithEmbeddingDim(64))
	st := testdb.Open(t, e)
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fs := files.New(files.Options{Store: st, Blobs: blobs, Limits: config.UploadLimits{FileSizeLimitMB: 15, ImageFileSizeLimitMB: 10, AudioFileSizeLimitMB: 50, VideoFileSizeLimitMB: 100}})
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	o := knowledge.Options{Store: st, Files: fs, Catalog: catalog, Models: registry.New(catalog.APIKey),
		Vectors: vectorindex.NewMemory(st), AccountID: "owner", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range opts {
		f(&o)
	}
	svc := knowledge.New(o)
	return &env{svc: svc, st: st, up: up, opts: o}
}

func ptr[T any](v T) *T { return &v }

func (e *env) addText(t *testing.T, datasetID, name, text string, cfg knowledge.DocumentConfig) knowledge.DocumentView {
	t.Helper()
	if cfg.ProcessRule == nil {
		cfg.ProcessRule = []byte(`{"mode":"automatic"}`)
	}
	v, batch, err := e.svc.CreateDocument(context.Background(), datasetID, cfg, knowledge.Source{Filename: name, Body: strings.NewReader(text), Text: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.IndexingStatus != store.IndexingWaiting || batch == "" || knowledge.DisplayStatus(v.Document) != "queuing" {
		t.Fatalf("new document: status %s batch %q", v.IndexingStatus, batch)
	}
	if err := e.svc.IndexDocument(context.Background(), datasetID, v.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetDocument(context.Background(), datasetID, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

const corpus = `Parley is a self-hostable LLM application server written in Go.

It speaks the Dify Service API so existing SDKs work unchanged.

Knowledge bases split documents into chunks and index them for retrieval.

Bananas are yellow fruit rich in potassium and loved by monkeys.`

func TestEconomyDocumentLifecycle(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		e := newEnv(t, eng)
		ctx := context.Background()
		d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "docs"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "docs"}); !errors.Is(err, knowledge.ErrNameDuplicate) {
			t.Fatalf("duplicate name: %v", err)
		}
		_, _, err = e.svc.CreateDocument(ctx, d.ID, knowledge.DocumentConfig{}, knowledge.Source{Filename: "x", Body: strings.NewReader("x"), Text: true})
		if !errors.Is(err, knowledge.ErrTechniqueRequired) {
			t.Fatalf("first document without technique: %v", err)
		}
		rule := []byte(`{"mode":"custom","rules":{"pre_processing_rules":[{"id":"remove_extra_spaces","enabled":true}],"segmentation":{"separator":"\n\n","max_tokens":100,"chunk_overlap":0}}}`)
		doc := e.addText(t, d.ID, "intro", corpus, knowledge.DocumentConfig{IndexingTechnique: ptr(store.TechniqueEconomy), ProcessRule: rule})
		if doc.IndexingStatus != store.IndexingCompleted || knowledge.DisplayStatus(doc.Document) != "available" {
			t.Fatalf("status %s error %q", doc.IndexingStatus, doc.Error)
		}
		if doc.Name != "intro" || doc.Stats.SegmentCount != 4 || doc.WordCount != len([]rune(corpus)) {
			t.Fatalf("doc %q segments %d words %d", doc.Name, doc.Stats.SegmentCount, doc.WordCount)
		}
		segs, total, _, err := e.svc.ListSegments(ctx, d.ID, doc.ID, store.SegmentQuery{Page: 1, Limit: 20})
		if err != nil || total != 4 || len(segs[3].Keywords) == 0 || segs[0].Position != 1 {
			t.Fatalf("segments %d %v %+v", total, err, segs)
		}
		recs, err := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "which fruit do monkeys love?"})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 || !strings.Contains(recs[0].Segment.Content, "Bananas") {
			t.Fatalf("keyword retrieval: %+v", recs)
		}

		// Update: the new content replaces the old one atomically.
		_, _, err = e.svc.UpdateDocument(ctx, d.ID, doc.ID, knowledge.DocumentConfig{}, &knowledge.Source{Filename: "intro", Body: strings.NewReader("Cherries are red fruit that monkeys also love."), Text: true})
		if err != nil {
			t.Fatal(err)
		}
		recs, err = e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "monkeys love fruit"})
		if err != nil || len(recs) == 0 || !strings.Contains(recs[0].Segment.Content, "Bananas") {
			t.Fatalf("before re-indexing the old chunks answer: %+v %v", recs, err)
		}
		if err := e.svc.IndexDocument(ctx, d.ID, doc.ID); err != nil {
			t.Fatal(err)
		}
		recs, err = e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "monkeys love fruit"})
		if err != nil || len(recs) != 1 || !strings.Contains(recs[0].Segment.Content, "Cherries") {
			t.Fatalf("after re-indexing only the new chunk answers: %+v %v", recs, err)
		}

		// Disabled documents are not searched; a disabled document cannot be updated.
		if err := e.svc.SetStatus(ctx, d.ID, knowledge.ActionDisable, []string{doc.ID}); err != nil {
			t.Fatal(err)
		}
		if recs, _ := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "monkeys love fruit"}); len(recs) != 0 {
			t.Fatalf("disabled document searched: %+v", recs)
		}
		if _, _, err := e.svc.UpdateDocument(ctx, d.ID, doc.ID, knowledge.DocumentConfig{}, nil); !errors.Is(err, knowledge.ErrNotAvailable) {
			t.Fatalf("update of a disabled document: %v", err)
		}
		if err := e.svc.SetStatus(ctx, d.ID, knowledge.ActionArchive, []string{doc.ID}); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteDocument(ctx, d.ID, doc.ID); !errors.Is(err, knowledge.ErrArchived) {
			t.Fatalf("delete archived: %v", err)
		}
	})
}

func TestHighQualitySearchMethods(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		e := newEnv(t, eng)
		ctx := context.Background()
		d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "hq", IndexingTechnique: store.TechniqueHighQuality,
			EmbeddingModelProvider: "langgenius/openai/openai", EmbeddingModel: "text-embedding-3-small"})
		if err != nil {
			t.Fatal(err)
		}
		rule := []byte(`{"mode":"custom","rules":{"pre_processing_rules":[],"segmentation":{"separator":"\n\n","max_tokens":100,"chunk_overlap":0}}}`)
		doc := e.addText(t, d.ID, "intro", corpus, knowledge.DocumentConfig{ProcessRule: rule})
		if doc.IndexingStatus != store.IndexingCompleted || doc.Tokens == 0 {
			t.Fatalf("status %s tokens %d error %q", doc.IndexingStatus, doc.Tokens, doc.Error)
		}
		for _, method := range []string{"semantic_search", "full_text_search", "hybrid_search", "keyword_search"} {
			rm := fmt.Sprintf(`{"search_method":%q,"reranking_enable":false,"top_k":2,"score_threshold_enabled":false}`, method)
			recs, err := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "bananas yellow fruit monkeys", RetrievalModel: []byte(rm)})
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			if len(recs) == 0 || len(recs) > 2 || !strings.Contains(recs[0].Segment.Content, "Bananas") || recs[0].Score <= 0 {
				t.Fatalf("%s: %+v", method, recs)
			}
		}
		rm := `{"search_method":"semantic_search","reranking_enable":true,"reranking_mode":"reranking_model","reranking_model":{"reranking_provider_name":"openai","reranking_model_name":"jina-reranker-v2-base-multilingual"},"top_k":3,"score_threshold_enabled":true,"score_threshold":0.5}`
		recs, err := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "Dify SDKs", RetrievalModel: []byte(rm)})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || !strings.Contains(recs[0].Segment.Content, "SDKs") {
			t.Fatalf("reranked: %+v", recs)
		}
		if _, err := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: strings.Repeat("q", 251)}); err == nil {
			t.Fatal("a 251-character query was accepted")
		}
		// Chat retrieval counts hits.
		cc, err := e.svc.RetrieveForChat(ctx, []string{"hq", "missing"}, "bananas")
		if err != nil || len(cc.Resources) == 0 || !strings.Contains(cc.Prompt, "Bananas") {
			t.Fatalf("chat retrieval: %+v %v", cc, err)
		}
		// The chunks alone (an advanced prompt's context) are what the template wraps.
		if !strings.HasPrefix(cc.Text, cc.Resources[0].Content) || strings.Contains(cc.Text, "<context>") ||
			!strings.Contains(cc.Prompt, "<context>\n"+cc.Text+"\n</context>") {
			t.Fatalf("chat context text %q, prompt %q", cc.Text, cc.Prompt)
		}
		seg, _, err := e.svc.GetSegment(ctx, d.ID, doc.ID, cc.Resources[0].SegmentID)
		if err != nil || seg.HitCount != 1 {
			t.Fatalf("hit count %d %v", seg.HitCount, err)
		}
	})
}

func TestHierarchicalAndFailures(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		e := newEnv(t, eng)
		ctx := context.Background()
		d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "pc", IndexingTechnique: store.TechniqueHighQuality,
			EmbeddingModelProvider: "openai", EmbeddingModel: "text-embedding-3-small"})
		if err != nil {
			t.Fatal(err)
		}
		rule := []byte(`{"mode":"hierarchical","rules":{"pre_processing_rules":[],"segmentation":{"separator":"\n\n","max_tokens":500},"parent_mode":"paragraph","subchunk_segmentation":{"separator":". ","max_tokens":100}}}`)
		doc := e.addText(t, d.ID, "pc", "First sentence about apples. Second sentence about pears.\n\nThird about bananas. Fourth about kiwis.",
			knowledge.DocumentConfig{DocForm: ptr(knowledge.DocFormHierarchical), ProcessRule: rule})
		if doc.IndexingStatus != store.IndexingCompleted || doc.Stats.SegmentCount != 2 {
			t.Fatalf("status %s segments %d error %q", doc.IndexingStatus, doc.Stats.SegmentCount, doc.Error)
		}
		recs, err := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "bananas"})
		if err != nil || len(recs) == 0 || len(recs[0].ChildChunks) == 0 || !strings.Contains(recs[0].Segment.Content, "kiwis") {
			t.Fatalf("parent-child retrieval: %+v %v", recs, err)
		}
		// A chunk length over the limit is refused with the message Dify gives when it indexes,
		// and nothing is stored.
		_, before, err := e.svc.ListDocuments(ctx, d.ID, store.DocumentQuery{Page: 1, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		bad := []byte(`{"mode":"custom","rules":{"pre_processing_rules":[],"segmentation":{"separator":"\n","max_tokens":5000}}}`)
		_, _, err = e.svc.CreateDocument(ctx, d.ID, knowledge.DocumentConfig{ProcessRule: bad, DocForm: ptr(knowledge.DocFormText)}, knowledge.Source{Filename: "big", Body: strings.NewReader("text"), Text: true})
		var ke *knowledge.Error
		if !errors.As(err, &ke) || ke.Kind != knowledge.KindInvalid || ke.Message != "Custom segment length should be between 50 and 4000." {
			t.Fatalf("max_tokens 5000: %v", err)
		}
		if _, after, _ := e.svc.ListDocuments(ctx, d.ID, store.DocumentQuery{Page: 1, Limit: 100}); after != before {
			t.Fatalf("refused create stored a document: %d documents, was %d", after, before)
		}
		// A rule stored under a larger INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH still fails at
		// indexing time, with Dify's message, once the limit is lowered.
		long := []byte(`{"mode":"custom","rules":{"pre_processing_rules":[],"segmentation":{"separator":"\n","max_tokens":3000}}}`)
		v, _, err := e.svc.CreateDocument(ctx, d.ID, knowledge.DocumentConfig{ProcessRule: long, DocForm: ptr(knowledge.DocFormText)}, knowledge.Source{Filename: "long", Body: strings.NewReader("text"), Text: true})
		if err != nil {
			t.Fatal(err)
		}
		lowered := e.opts
		lowered.MaxSegmentLength = 1000
		if err := knowledge.New(lowered).IndexDocument(ctx, d.ID, v.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := e.svc.GetDocument(ctx, d.ID, v.ID)
		if got.IndexingStatus != store.IndexingError || got.Error != "Custom segment length should be between 50 and 1000." {
			t.Fatalf("status %s error %q", got.IndexingStatus, got.Error)
		}
	})
}
