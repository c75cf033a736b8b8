package knowledge_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/tracing"
)

// A retrieval is a span naming the datasets it searched, how, and how many records it found;
// the query is on it only when content is captured.
func TestRetrievalSpan(t *testing.T) {
	e := newEnv(t, storetest.NewEngine(t, storetest.SQLite))
	ctx := context.Background()
	d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "traced fruit"})
	if err != nil {
		t.Fatal(err)
	}
	rule := []byte(`{"mode":"custom","rules":{"pre_processing_rules":[],"segmentation":{"separator":"\n\n","max_tokens":100,"chunk_overlap":0}}}`)
	e.addText(t, d.ID, "intro", corpus, knowledge.DocumentConfig{IndexingTechnique: ptr(store.TechniqueEconomy), ProcessRule: rule})

	rec := tracetest.NewSpanRecorder()
	tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test"), true)
	t.Cleanup(func() { tracing.Use(nil, false) })
	recs, err := e.svc.RetrieveDataset(ctx, d.ID, knowledge.RetrieveInput{Query: "which fruit do monkeys love?"})
	if err != nil || len(recs) == 0 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	var span sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "retrieval traced fruit" {
			span = s
		}
	}
	if span == nil {
		t.Fatalf("no retrieval span among %d", len(rec.Ended()))
	}
	got := map[attribute.Key]string{}
	for _, a := range span.Attributes() {
		got[a.Key] = a.Value.Emit()
	}
	for k, want := range map[attribute.Key]string{
		tracing.GenAIOperation: "retrieval", tracing.GenAIDataSourceID: d.ID, tracing.KnowledgeDatasets: `["traced fruit"]`,
		tracing.KnowledgeMethod: `["keyword_search"]`, tracing.KnowledgeTopK: "4", tracing.GenAIRetrievalQuery: "which fruit do monkeys love?",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if hits := got[tracing.KnowledgeHits]; hits == "0" || strings.TrimSpace(hits) == "" {
		t.Errorf("hits %q", hits)
	}
}
