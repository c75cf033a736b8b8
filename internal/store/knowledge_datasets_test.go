package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Shared knowledge fixtures. Names start with kb so they do not collide with other test files
// of the package.

func datasetID(d Dataset) string   { return d.ID }
func documentID(d Document) string { return d.ID }
func segmentID(s Segment) string   { return s.ID }

// kbDataset creates a dataset named name.
func kbDataset(t *testing.T, s *Store, name string) Dataset {
	t.Helper()
	d, err := s.CreateDataset(t.Context(), Dataset{Name: name, CreatedBy: "acct-1", IndexingTechnique: TechniqueHighQuality})
	if err != nil {
		t.Fatalf("CreateDataset(%q): %v", name, err)
	}
	return d
}

// kbDocument creates a completed, enabled document serving generation 1, after applying mod.
func kbDocument(t *testing.T, s *Store, datasetID, name string, mod func(*Document)) Document {
	t.Helper()
	d := Document{
		DatasetID: datasetID, Name: name, DataSourceType: "upload_file", Batch: "batch-1", CreatedFrom: "api", CreatedBy: "acct-1",
		IndexingStatus: IndexingCompleted, Enabled: true, DocForm: "text_model", DocLanguage: "English",
		Generation: 1, IndexingGeneration: 1,
	}
	if mod != nil {
		mod(&d)
	}
	d, err := s.CreateDocument(t.Context(), d)
	if err != nil {
		t.Fatalf("CreateDocument(%q): %v", name, err)
	}
	return d
}

// kbNode is the index node of a segment: keywords and terms are the text's words, the vector
// is derived from its length and position.
func kbNode(seg Segment) IndexNode {
	words := strings.Fields(seg.Content)
	return IndexNode{
		NodeID: seg.IndexNodeID, DatasetID: seg.DatasetID, DocumentID: seg.DocumentID, SegmentID: seg.ID, Generation: seg.Generation,
		Keywords: words, Terms: seg.Content, Vector: []float32{float32(len(seg.Content)), float32(seg.Position), -0.5},
	}
}

// kbIndex adds one segment per text to the document's generation gen and indexes them,
// returning the segments as stored.
func kbIndex(t *testing.T, s *Store, doc Document, gen int, texts ...string) []Segment {
	t.Helper()
	ctx := t.Context()
	first, err := s.MaxSegmentPosition(ctx, doc.ID, gen)
	if err != nil {
		t.Fatal(err)
	}
	segs := make([]Segment, len(texts))
	nodes := make([]IndexNode, len(texts))
	for i, text := range texts {
		segs[i] = Segment{
			ID: NewID(), DatasetID: doc.DatasetID, DocumentID: doc.ID, Generation: gen, Position: first + i + 1,
			Content: text, WordCount: len(text), Keywords: strings.Fields(text), IndexNodeID: NewID(), IndexNodeHash: "h-" + text,
			Enabled: true, Status: SegmentIndexing, CreatedBy: "acct-1", CreatedAt: at(int64(i)),
		}
		nodes[i] = kbNode(segs[i])
	}
	if err := s.AddSegments(ctx, segs, nil); err != nil {
		t.Fatalf("AddSegments: %v", err)
	}
	done := at(100)
	if err := s.IndexNodes(ctx, nodes, done); err != nil {
		t.Fatalf("IndexNodes: %v", err)
	}
	for i := range segs {
		segs[i].Status, segs[i].CompletedAt, segs[i].UpdatedAt = SegmentCompleted, &done, segs[i].CreatedAt
	}
	return segs
}

// kbCount returns the number of rows of table matching where (with ? placeholders).
func kbCount(t *testing.T, s *Store, table, where string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(t.Context(), s.Rebind("SELECT COUNT(*) FROM "+table+" WHERE "+where), args...).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// kbFTSCount returns how many full-text rows match term, on either engine.
func kbFTSCount(t *testing.T, s *Store, term string) int {
	t.Helper()
	if s.Dialect() == DialectSQLite {
		return kbCount(t, s, "index_fts", "index_fts MATCH ?", fts5Terms([]string{term}))
	}
	return kbCount(t, s, "index_nodes", "tsv @@ to_tsquery('simple', ?)", tsQuery([]string{term}))
}

// kbKeywordRows returns how many nodes of the dataset ("": of any dataset) hold keyword, on
// either engine. With no dataset it counts the keyword index rows alone, so rows left behind
// by a delete show.
func kbKeywordRows(t *testing.T, s *Store, datasetID, keyword string) int {
	t.Helper()
	switch {
	case s.Dialect() == DialectSQLite && datasetID == "":
		return kbCount(t, s, "index_fts", "index_fts MATCH ?", `keywords : "`+keywordToken(keyword)+`"`)
	case s.Dialect() == DialectSQLite:
		return kbCount(t, s, "index_fts JOIN index_nodes n ON n.rid = index_fts.rowid", "index_fts MATCH ? AND n.dataset_id = ?",
			`keywords : "`+keywordToken(keyword)+`"`, datasetID)
	case datasetID == "":
		return kbCount(t, s, "index_keywords", "keyword = ?", keyword)
	default:
		return kbCount(t, s, "index_keywords", "dataset_id = ? AND keyword = ?", datasetID, keyword)
	}
}

func TestDatasets(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()

		// Defaults and round trip.
		d, err := s.CreateDataset(ctx, Dataset{Name: "Handbook", CreatedBy: "acct-1"})
		if err != nil {
			t.Fatal(err)
		}
		if d.ID == "" || d.Provider != DatasetProviderVendor || d.Permission != PermissionOnlyMe || d.KeywordNumber != DefaultKeywordNumber ||
			d.CreatedAt.IsZero() || !d.UpdatedAt.Equal(d.CreatedAt) || d.RetrievalModel != nil {
			t.Fatalf("CreateDataset defaults = %+v", d)
		}
		if got, err := s.Dataset(ctx, d.ID); err != nil || !reflect.DeepEqual(got, d) {
			t.Fatalf("Dataset = %+v, %v; want %+v", got, err, d)
		}
		full := Dataset{
			Name: "Full", Description: "all fields", Provider: DatasetProviderVendor, Permission: PermissionAllTeamMembers,
			DataSourceType: "upload_file", IndexingTechnique: TechniqueEconomy, EmbeddingModel: "text-embedding-3-small",
			EmbeddingModelProvider: "openai", RetrievalModel: json.RawMessage(`{"search_method":"keyword_search","top_k":3}`),
			DocForm: "text_model", BuiltInFieldEnabled: true, EnableAPI: true, KeywordNumber: 7, CreatedBy: "acct-1", UpdatedBy: "acct-2",
			CreatedAt: at(10), UpdatedAt: at(20),
		}
		full, err = s.CreateDataset(ctx, full)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.DatasetByName(ctx, "Full"); err != nil || !reflect.DeepEqual(got, full) {
			t.Fatalf("DatasetByName = %+v, %v; want %+v", got, err, full)
		}

		// Errors.
		if _, err := s.CreateDataset(ctx, Dataset{Name: "Handbook"}); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate name: err = %v, want ErrConflict", err)
		}
		for name, bad := range map[string]Dataset{
			"no name":        {},
			"bad permission": {Name: "x", Permission: "everyone"},
			"bad technique":  {Name: "x", IndexingTechnique: "magic"},
			"bad json":       {Name: "x", RetrievalModel: json.RawMessage(`{`)},
		} {
			_, err := s.CreateDataset(ctx, bad)
			wantValidationError(t, name, err)
		}
		for _, err := range []error{
			func() error { _, err := s.Dataset(ctx, NewID()); return err }(),
			func() error { _, err := s.DatasetByName(ctx, "handbook"); return err }(), // names compare exactly
			s.UpdateDataset(ctx, Dataset{ID: NewID(), Name: "ghost", Permission: PermissionOnlyMe}),
			s.DeleteDataset(ctx, NewID()),
		} {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("err = %v, want ErrNotFound", err)
			}
		}

		// Update writes every mutable column and keeps created_*.
		upd := full
		upd.Name, upd.Description, upd.IndexingTechnique, upd.RetrievalModel, upd.EnableAPI = "Full v2", "", TechniqueHighQuality, nil, false
		upd.CreatedAt, upd.CreatedBy, upd.UpdatedAt = at(999), "someone else", at(30)
		if err := s.UpdateDataset(ctx, upd); err != nil {
			t.Fatal(err)
		}
		upd.CreatedAt, upd.CreatedBy = full.CreatedAt, full.CreatedBy
		if got, err := s.Dataset(ctx, full.ID); err != nil || !reflect.DeepEqual(got, upd) {
			t.Fatalf("after update = %+v, %v; want %+v", got, err, upd)
		}
		upd.Name = "Handbook"
		if err := s.UpdateDataset(ctx, upd); !errors.Is(err, ErrConflict) {
			t.Errorf("rename onto a taken name: err = %v, want ErrConflict", err)
		}
	})
}

func TestListDatasets(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		var made []Dataset
		for i, name := range []string{"Alpha guide", "beta GUIDE", "gamma", "100% real", "under_score", "plain"} {
			d, err := s.CreateDataset(ctx, Dataset{Name: name, CreatedAt: at(int64(i / 2))}) // pairs share created_at
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, d)
		}
		// Newest first, also within one second: equal created_at by id, descending (ids of one
		// process increase).
		want := []string{made[5].ID, made[4].ID, made[3].ID, made[2].ID, made[1].ID, made[0].ID}
		all, total, err := s.ListDatasets(ctx, DatasetQuery{Page: 1, Limit: 100})
		if err != nil || total != 6 || !reflect.DeepEqual(ids(all, datasetID), want) {
			t.Fatalf("ListDatasets = %v, %d, %v; want %v, 6", ids(all, datasetID), total, err, want)
		}
		page2, total, err := s.ListDatasets(ctx, DatasetQuery{Page: 2, Limit: 4})
		if err != nil || total != 6 || !reflect.DeepEqual(ids(page2, datasetID), want[4:]) {
			t.Fatalf("page 2 = %v, %d, %v; want %v", ids(page2, datasetID), total, err, want[4:])
		}
		past, total, err := s.ListDatasets(ctx, DatasetQuery{Page: 9, Limit: 4})
		if err != nil || total != 6 || len(past) != 0 {
			t.Fatalf("page past the end = %v, %d, %v", past, total, err)
		}

		for kw, wantNames := range map[string][]string{
			"guide": {"beta GUIDE", "Alpha guide"}, // case-insensitive
			"%":     {"100% real"},                 // LIKE wildcards are literal
			"_":     {"under_score"},
			"zzz":   nil,
		} {
			got, total, err := s.ListDatasets(ctx, DatasetQuery{Keyword: kw, Page: 1, Limit: 10})
			var names []string
			for _, d := range got {
				names = append(names, d.Name)
			}
			if err != nil || total != len(wantNames) || !reflect.DeepEqual(names, wantNames) {
				t.Errorf("keyword %q = %v, %d, %v; want %v", kw, names, total, err, wantNames)
			}
		}
		for _, q := range []DatasetQuery{{Page: 0, Limit: 1}, {Page: 1, Limit: 0}} {
			if _, _, err := s.ListDatasets(ctx, q); err == nil {
				t.Errorf("ListDatasets(%+v): want error", q)
			}
		}
	})
}

func TestProcessRules(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		if _, err := s.LatestProcessRule(ctx, ds.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("LatestProcessRule of none: err = %v, want ErrNotFound", err)
		}
		auto, err := s.CreateProcessRule(ctx, ProcessRule{DatasetID: ds.ID, Mode: "automatic", CreatedBy: "acct-1", CreatedAt: at(1)})
		if err != nil || auto.ID == "" || auto.Rules != nil {
			t.Fatalf("CreateProcessRule = %+v, %v", auto, err)
		}
		custom, err := s.CreateProcessRule(ctx, ProcessRule{DatasetID: ds.ID, Mode: "custom", Rules: json.RawMessage(`{"segmentation":{"max_tokens":500}}`), CreatedAt: at(2)})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.ProcessRule(ctx, auto.ID); err != nil || !reflect.DeepEqual(got, auto) {
			t.Errorf("ProcessRule = %+v, %v; want %+v", got, err, auto)
		}
		if got, err := s.LatestProcessRule(ctx, ds.ID); err != nil || !reflect.DeepEqual(got, custom) {
			t.Errorf("LatestProcessRule = %+v, %v; want %+v", got, err, custom)
		}
		if _, err := s.CreateProcessRule(ctx, ProcessRule{DatasetID: NewID(), Mode: "automatic"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown dataset: err = %v, want ErrNotFound", err)
		}
		_, err = s.CreateProcessRule(ctx, ProcessRule{DatasetID: ds.ID, Mode: "custom", Rules: json.RawMessage("nope")})
		wantValidationError(t, "invalid rules", err)
		_, err = s.CreateProcessRule(ctx, ProcessRule{DatasetID: ds.ID})
		wantValidationError(t, "no mode", err)
		if _, err := s.ProcessRule(ctx, NewID()); !errors.Is(err, ErrNotFound) {
			t.Errorf("ProcessRule(unknown): err = %v, want ErrNotFound", err)
		}
	})
}

func TestDeleteDatasetCascades(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		doomed, kept := kbDataset(t, s, "doomed"), kbDataset(t, s, "kept")
		for _, ds := range []Dataset{doomed, kept} {
			if _, err := s.CreateProcessRule(ctx, ProcessRule{DatasetID: ds.ID, Mode: "automatic"}); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				doc := kbDocument(t, s, ds.ID, fmt.Sprintf("doc %d", i), nil)
				segs := kbIndex(t, s, doc, 1, "shared words here", "more shared words")
				child := ChildChunk{ID: NewID(), SegmentID: segs[0].ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Content: "child", IndexNodeID: NewID()}
				if err := s.AddSegments(ctx, nil, []ChildChunk{child}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.DeleteDataset(ctx, doomed.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Dataset(ctx, doomed.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted dataset still readable: %v", err)
		}
		for _, table := range []string{"documents", "document_segments", "child_chunks", "dataset_process_rules", "index_nodes", "index_vectors"} {
			if n := kbCount(t, s, table, "dataset_id = ?", doomed.ID); n != 0 {
				t.Errorf("%s: %d rows of the deleted dataset left", table, n)
			}
			if n := kbCount(t, s, table, "dataset_id = ?", kept.ID); n == 0 {
				t.Errorf("%s: rows of the other dataset were deleted too", table)
			}
		}
		if n := kbKeywordRows(t, s, doomed.ID, "shared"); n != 0 {
			t.Errorf("keyword rows of the deleted dataset = %d", n)
		}
		if n := kbKeywordRows(t, s, kept.ID, "shared"); n != 4 {
			t.Errorf("keyword rows of the kept dataset = %d, want 4", n)
		}
		if n := kbKeywordRows(t, s, "", "shared"); n != 4 {
			t.Errorf("keyword rows of any dataset = %d, want 4", n)
		}
		// Exactly the deleted nodes left the full-text index: 2 documents × 2 segments remain.
		if n := kbFTSCount(t, s, "shared"); n != 4 {
			t.Errorf("full-text rows matching 'shared' = %d, want 4", n)
		}
		hits, err := s.SearchFullText(ctx, []string{doomed.ID, kept.ID}, []string{"shared"}, 10)
		if err != nil || len(hits) != 4 {
			t.Errorf("search after delete = %v, %v; want the 4 hits of the kept dataset", hits, err)
		}
	})
}

func TestDatasetStats(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds, empty := kbDataset(t, s, "kb"), kbDataset(t, s, "empty")
		kbDocument(t, s, ds.ID, "available", func(d *Document) { d.WordCount = 100 })
		kbDocument(t, s, ds.ID, "disabled", func(d *Document) { d.WordCount = 20; d.Enabled = false })
		kbDocument(t, s, ds.ID, "archived", func(d *Document) { d.WordCount = 3; d.Archived = true })
		kbDocument(t, s, ds.ID, "indexing", func(d *Document) { d.IndexingStatus = IndexingIndexing })
		unknown := NewID()
		got, err := s.DatasetStats(ctx, []string{ds.ID, empty.ID, unknown, ds.ID})
		want := map[string]DatasetStats{
			ds.ID:    {DocumentCount: 4, AvailableDocumentCount: 1, WordCount: 123},
			empty.ID: {},
			unknown:  {},
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("DatasetStats = %+v, %v; want %+v", got, err, want)
		}
	})
}

// TestInList pins the padding that keeps IN queries to a few statement texts.
func TestInList(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{1: 1, 2: 2, 3: 4, 5: 8, 300: inChunk, inChunk: inChunk} {
		in := make([]string, n)
		for i := range in {
			in[i] = fmt.Sprint(i)
		}
		ph, args := inList(in)
		if len(args) != want || strings.Count(ph, "?") != want || args[len(args)-1] != in[n-1] {
			t.Errorf("inList(%d ids) = %d args, want %d ending in the last id", n, len(args), want)
		}
	}
}
