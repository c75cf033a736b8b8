package knowledge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestPipelineRun: uploaded files become documents of one batch, split by the parent-child
// chunker when the inputs ask for it, and indexed; what the pipeline does not have is refused,
// before any document is made.
func TestPipelineRun(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, eng storetest.Engine) {
		e := newEnv(t, eng)
		ctx := context.Background()
		d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "pipeline", IndexingTechnique: store.TechniqueEconomy})
		if err != nil {
			t.Fatal(err)
		}
		a, err := e.svc.UploadPipelineFile(ctx, "a.md", "text/markdown", strings.NewReader("Alpha one.\n\nAlpha two."))
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.svc.UploadPipelineFile(ctx, "b.txt", "text/plain", strings.NewReader("Beta one.\nBeta two."))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.UploadPipelineFile(ctx, "tool.exe", "", strings.NewReader("MZ")); !errors.Is(err, files.ErrUnsupportedType) {
			t.Errorf("unreadable type: %v", err)
		}
		hier := `{"doc_form":"hierarchical_model","process_rule":{"mode":"hierarchical","rules":{"pre_processing_rules":[],"parent_mode":"paragraph",` +
			`"segmentation":{"separator":"\n\n","max_tokens":500},"subchunk_segmentation":{"separator":"\n","max_tokens":200}}}}`
		run := knowledge.PipelineRun{Inputs: []byte(hier), DatasourceType: "local_file", StartNodeID: "local_file", ResponseMode: "blocking",
			Files: []knowledge.PipelineFile{{Reference: a.ID, Name: "Alpha.md"}, {Reference: b.ID}}}

		refused := map[string]func(r *knowledge.PipelineRun){
			"online document": func(r *knowledge.PipelineRun) { r.DatasourceType = "online_document" },
			"another node":    func(r *knowledge.PipelineRun) { r.StartNodeID = "crawler" },
			"streaming":       func(r *knowledge.PipelineRun) { r.ResponseMode = "streaming" },
			"no files":        func(r *knowledge.PipelineRun) { r.Files = nil },
			"unknown file": func(r *knowledge.PipelineRun) {
				r.Files = append(r.Files, knowledge.PipelineFile{Reference: store.NewID()})
			},
			"not an id":        func(r *knowledge.PipelineRun) { r.Files = []knowledge.PipelineFile{{Reference: "../a"}} },
			"unreadable name":  func(r *knowledge.PipelineRun) { r.Files = []knowledge.PipelineFile{{Reference: a.ID, Name: "a.exe"}} },
			"inputs not rules": func(r *knowledge.PipelineRun) { r.Inputs = []byte(`{"process_rule":"x"}`) },
		}
		for name, mutate := range refused {
			r := run
			r.Files = append([]knowledge.PipelineFile(nil), run.Files...)
			mutate(&r)
			if _, err := e.svc.RunPipeline(ctx, d.ID, r); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		if docs, _, err := e.svc.ListDocuments(ctx, d.ID, store.DocumentQuery{Page: 1, Limit: 20}); err != nil || len(docs) != 0 {
			t.Fatalf("refused runs left documents: %d %v", len(docs), err)
		}
		if _, err := e.svc.RunPipeline(ctx, store.NewID(), run); !errors.Is(err, knowledge.ErrDatasetNotFound) {
			t.Errorf("unknown dataset: %v", err)
		}

		res, err := e.svc.RunPipeline(ctx, d.ID, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Documents) != 2 || res.Batch == "" || res.Documents[0].Name != "Alpha.md" || res.Documents[1].Name != "b.txt" {
			t.Fatalf("run: %+v", res)
		}
		for _, v := range res.Documents {
			if v.Batch != res.Batch || v.DocForm != "hierarchical_model" {
				t.Errorf("document %s: batch %q form %q", v.Name, v.Batch, v.DocForm)
			}
			if err := e.svc.IndexDocument(ctx, d.ID, v.ID); err != nil {
				t.Fatal(err)
			}
		}
		sts, err := e.svc.BatchStatus(ctx, d.ID, res.Batch)
		if err != nil || len(sts) != 2 {
			t.Fatalf("batch: %d %v", len(sts), err)
		}
		for _, st := range sts {
			if st.Document.IndexingStatus != store.IndexingCompleted {
				t.Errorf("%s: %s %s", st.Document.Name, st.Document.IndexingStatus, st.Document.Error)
			}
		}
		segs, _, _, err := e.svc.ListSegments(ctx, d.ID, res.Documents[1].ID, store.SegmentQuery{Page: 1, Limit: 20})
		if err != nil || len(segs) != 1 || len(segs[0].Children) != 2 {
			t.Errorf("parent-child chunks of b.txt: %+v %v", segs, err)
		}
	})
}

// TestDocumentFiles: a ZIP download's files, a repeated id once, and its refusals.
func TestDocumentFiles(t *testing.T) {
	e := newEnv(t, storetest.NewEngine(t, storetest.SQLite))
	ctx := context.Background()
	d, err := e.svc.CreateDataset(ctx, knowledge.CreateDatasetInput{Name: "zip", IndexingTechnique: store.TechniqueEconomy})
	if err != nil {
		t.Fatal(err)
	}
	a := e.addText(t, d.ID, "a", "Alpha.", knowledge.DocumentConfig{})
	b := e.addText(t, d.ID, "b", "Beta.", knowledge.DocumentConfig{})
	got, err := e.svc.DocumentFiles(ctx, d.ID, []string{a.ID, b.ID, strings.ToUpper(a.ID)})
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("files: %+v %v", got, err)
	}
	if _, err := e.svc.DocumentFiles(ctx, d.ID, []string{a.ID, store.NewID()}); !errors.Is(err, knowledge.ErrDocumentNotFound) {
		t.Errorf("unknown document: %v", err)
	}
	if _, err := e.svc.DocumentFile(ctx, store.NewID(), a.ID); !errors.Is(err, knowledge.ErrDatasetNotFound) {
		t.Errorf("unknown dataset: %v", err)
	}
	// Over the bound: the two files are 10 bytes together (a.txt and b.txt hold "Alpha." and "Beta.").
	small := knowledge.New(withZipBound(e.opts, 10))
	if _, err := small.DocumentFiles(ctx, d.ID, []string{a.ID}); err != nil {
		t.Errorf("under the bound: %v", err)
	}
	if _, err := small.DocumentFiles(ctx, d.ID, []string{a.ID, b.ID}); err == nil || !strings.Contains(err.Error(), "10 bytes") {
		t.Errorf("over the bound: %v", err)
	}
	if err := e.svc.CheckDatasourceNode(ctx, d.ID, "local_file", "local_file"); err == nil || !strings.Contains(err.Error(), "nothing to run") {
		t.Errorf("local_file node: %v", err)
	}
	if err := e.svc.CheckDatasourceNode(ctx, d.ID, "notion", "online_document"); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("plugin node: %v", err)
	}
}

func withZipBound(o knowledge.Options, n int64) knowledge.Options {
	o.MaxZipBytes = n
	return o
}
