package store

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

func ptime(sec int64) *time.Time {
	t := at(sec)
	return &t
}

func TestDocumentRoundTripAndPositions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")

		first := kbDocument(t, s, ds.ID, "first.txt", nil)
		if first.Position != 1 || first.ID == "" || first.CreatedAt.IsZero() || !first.UpdatedAt.Equal(first.CreatedAt) {
			t.Fatalf("first document = %+v", first)
		}
		explicit := kbDocument(t, s, ds.ID, "explicit.txt", func(d *Document) { d.Position = 10 })
		next := kbDocument(t, s, ds.ID, "next.txt", nil)
		if explicit.Position != 10 || next.Position != 11 {
			t.Fatalf("positions = %d, %d; want 10, 11", explicit.Position, next.Position)
		}
		// Positions are per dataset.
		if other := kbDocument(t, s, kbDataset(t, s, "other").ID, "x", nil); other.Position != 1 {
			t.Fatalf("first position in another dataset = %d, want 1", other.Position)
		}

		// Every field survives the round trip; nil timestamps stay nil.
		full := Document{
			DatasetID: ds.ID, DataSourceType: "upload_file", UploadFileID: NewID(), ProcessRuleID: NewID(), Batch: "b-2", Name: "full.md",
			CreatedFrom: "api", CreatedBy: "acct-1", CreatedAt: at(5), UpdatedAt: at(6), IndexingStatus: IndexingError,
			ProcessingStartedAt: ptime(7), ParsingCompletedAt: ptime(8), CleaningCompletedAt: ptime(9), SplittingCompletedAt: ptime(10),
			CompletedAt: ptime(11), PausedAt: ptime(12), StoppedAt: ptime(13), IsPaused: true, IndexingLatency: 1.25, Error: "boom",
			Enabled: false, DisabledAt: ptime(14), DisabledBy: "acct-2", Archived: true, ArchivedAt: ptime(15), ArchivedBy: "acct-3",
			WordCount: 1234, Tokens: 567, DocForm: "hierarchical_model", DocLanguage: "Chinese",
			DocMetadata: json.RawMessage(`{"author":"ann","year":2024}`), Generation: 3, IndexingGeneration: 4,
		}
		full, err := s.CreateDocument(ctx, full)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Document(ctx, ds.ID, full.ID); err != nil || !reflect.DeepEqual(got, full) {
			t.Fatalf("Document = %+v, %v\nwant %+v", got, err, full)
		}
		if got, err := s.Document(ctx, ds.ID, first.ID); err != nil || !reflect.DeepEqual(got, first) {
			t.Fatalf("Document(first) = %+v, %v\nwant %+v", got, err, first)
		}

		// Update writes the row (not created_*), and can clear what it set.
		upd := full
		upd.Name, upd.IndexingStatus, upd.Error, upd.IsPaused, upd.PausedAt, upd.DocMetadata = "renamed.md", IndexingCompleted, "", false, nil, nil
		upd.Position, upd.Generation, upd.UpdatedAt, upd.CreatedAt, upd.CreatedBy = 42, 4, at(50), at(0), "intruder"
		if err := s.UpdateDocument(ctx, upd); err != nil {
			t.Fatal(err)
		}
		upd.CreatedAt, upd.CreatedBy = full.CreatedAt, full.CreatedBy
		if got, err := s.Document(ctx, ds.ID, full.ID); err != nil || !reflect.DeepEqual(got, upd) {
			t.Fatalf("after update = %+v, %v\nwant %+v", got, err, upd)
		}

		// Not found and validation.
		other := kbDataset(t, s, "third")
		for name, err := range map[string]error{
			"document of another dataset": func() error { _, err := s.Document(ctx, other.ID, full.ID); return err }(),
			"unknown dataset":             func() error { _, err := s.CreateDocument(ctx, Document{DatasetID: NewID(), Name: "x"}); return err }(),
			"update unknown":              s.UpdateDocument(ctx, Document{ID: NewID(), DatasetID: ds.ID, Name: "x", IndexingStatus: IndexingWaiting}),
			"update in another dataset":   s.UpdateDocument(ctx, func() Document { d := upd; d.DatasetID = other.ID; return d }()),
			"delete unknown":              s.DeleteDocument(ctx, ds.ID, NewID()),
			"delete in another dataset":   s.DeleteDocument(ctx, other.ID, full.ID),
		} {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", name, err)
			}
		}
		for name, bad := range map[string]Document{
			"no dataset":   {Name: "x"},
			"no name":      {DatasetID: ds.ID},
			"bad status":   {DatasetID: ds.ID, Name: "x", IndexingStatus: "done"},
			"bad metadata": {DatasetID: ds.ID, Name: "x", DocMetadata: json.RawMessage(`[`)},
		} {
			_, err := s.CreateDocument(ctx, bad)
			wantValidationError(t, name, err)
		}
		if _, err := s.CreateDocument(ctx, Document{ID: first.ID, DatasetID: ds.ID, Name: "dup"}); !errors.Is(err, ErrConflict) {
			t.Errorf("duplicate id: err = %v, want ErrConflict", err)
		}
	})
}

func TestCreateDocumentConcurrentPositions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ds := kbDataset(t, s, "kb")
		const n = 12
		var wg sync.WaitGroup
		positions := make(chan int, n)
		for range n {
			wg.Go(func() {
				d, err := s.CreateDocument(t.Context(), Document{DatasetID: ds.ID, Name: "doc", IndexingStatus: IndexingWaiting})
				if err != nil {
					t.Errorf("CreateDocument: %v", err)
					return
				}
				positions <- d.Position
			})
		}
		wg.Wait()
		close(positions)
		var got []int
		for p := range positions {
			got = append(got, p)
		}
		slices.Sort(got)
		for i, p := range got {
			if p != i+1 {
				t.Fatalf("concurrent positions = %v, want 1..%d", got, n)
			}
		}
	})
}

func TestListDocuments(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		mk := func(name string, sec int64, mod func(*Document)) Document {
			return kbDocument(t, s, ds.ID, name, func(d *Document) {
				d.CreatedAt = at(sec)
				if mod != nil {
					mod(d)
				}
			})
		}
		byStatus := map[string]Document{
			DisplayQueuing:   mk("queued.txt", 1, func(d *Document) { d.IndexingStatus = IndexingWaiting }),
			DisplayIndexing:  mk("splitting.txt", 1, func(d *Document) { d.IndexingStatus = IndexingSplitting }),
			DisplayPaused:    mk("paused.txt", 2, func(d *Document) { d.IndexingStatus = IndexingIndexing; d.IsPaused = true }),
			DisplayError:     mk("failed.txt", 2, func(d *Document) { d.IndexingStatus = IndexingError }),
			DisplayAvailable: mk("Report 100%.txt", 3, nil),
			DisplayDisabled:  mk("off.txt", 3, func(d *Document) { d.Enabled = false }),
			DisplayArchived:  mk("old_report.txt", 3, func(d *Document) { d.Archived = true; d.Enabled = false }),
		}
		kbDocument(t, s, kbDataset(t, s, "other").ID, "report elsewhere", nil)

		// created_at DESC, then position DESC.
		all, total, err := s.ListDocuments(ctx, DocumentQuery{DatasetID: ds.ID, Page: 1, Limit: 50})
		if err != nil || total != 7 {
			t.Fatalf("ListDocuments = %d items, total %d, %v", len(all), total, err)
		}
		want := []string{byStatus[DisplayArchived].ID, byStatus[DisplayDisabled].ID, byStatus[DisplayAvailable].ID,
			byStatus[DisplayError].ID, byStatus[DisplayPaused].ID, byStatus[DisplayIndexing].ID, byStatus[DisplayQueuing].ID}
		if !reflect.DeepEqual(ids(all, documentID), want) {
			t.Fatalf("order = %v\nwant %v", ids(all, documentID), want)
		}
		page, total, err := s.ListDocuments(ctx, DocumentQuery{DatasetID: ds.ID, Page: 3, Limit: 3})
		if err != nil || total != 7 || !reflect.DeepEqual(ids(page, documentID), want[6:]) {
			t.Fatalf("page 3 = %v, %d, %v", ids(page, documentID), total, err)
		}

		for status, doc := range byStatus {
			got, total, err := s.ListDocuments(ctx, DocumentQuery{DatasetID: ds.ID, DisplayStatus: status, Page: 1, Limit: 10})
			if err != nil || total != 1 || len(got) != 1 || got[0].ID != doc.ID {
				t.Errorf("display status %s = %v, %d, %v; want only %s", status, ids(got, documentID), total, err, doc.Name)
			}
		}
		for kw, wantDocs := range map[string][]Document{
			"REPORT": {byStatus[DisplayArchived], byStatus[DisplayAvailable]},
			"100%":   {byStatus[DisplayAvailable]},
			"d_r":    {byStatus[DisplayArchived]},
			"_":      {byStatus[DisplayArchived]},
		} {
			got, total, err := s.ListDocuments(ctx, DocumentQuery{DatasetID: ds.ID, Keyword: kw, Page: 1, Limit: 10})
			if err != nil || total != len(wantDocs) || !reflect.DeepEqual(ids(got, documentID), ids(wantDocs, documentID)) {
				t.Errorf("keyword %q = %v, %d, %v", kw, ids(got, documentID), total, err)
			}
		}
		got, total, err := s.ListDocuments(ctx, DocumentQuery{DatasetID: ds.ID, Keyword: "report", DisplayStatus: DisplayAvailable, Page: 1, Limit: 10})
		if err != nil || total != 1 || got[0].ID != byStatus[DisplayAvailable].ID {
			t.Errorf("keyword and status = %v, %d, %v", ids(got, documentID), total, err)
		}
		for _, q := range []DocumentQuery{
			{DatasetID: ds.ID, Page: 1, Limit: 10, DisplayStatus: "sleeping"},
			{DatasetID: ds.ID, Page: 0, Limit: 10},
			{Page: 1, Limit: 10},
		} {
			if _, _, err := s.ListDocuments(ctx, q); err == nil {
				t.Errorf("ListDocuments(%+v): want error", q)
			}
		}
	})
}

func TestDocumentLookups(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		old := kbDocument(t, s, ds.ID, "faq.md", func(d *Document) { d.CreatedAt = at(1) })
		newer := kbDocument(t, s, ds.ID, "faq.md", func(d *Document) { d.CreatedAt = at(2); d.Batch = "batch-2" })
		kbDocument(t, s, ds.ID, "faq.md", func(d *Document) { d.CreatedAt = at(3); d.Enabled = false })
		kbDocument(t, s, ds.ID, "faq.md", func(d *Document) { d.CreatedAt = at(4); d.DataSourceType = "notion_import" })
		if got, err := s.DocumentByName(ctx, ds.ID, "faq.md"); err != nil || got.ID != newer.ID {
			t.Errorf("DocumentByName = %s, %v; want %s", got.ID, err, newer.ID)
		}
		for _, name := range []string{"FAQ.md", "nope"} {
			if _, err := s.DocumentByName(ctx, ds.ID, name); !errors.Is(err, ErrNotFound) {
				t.Errorf("DocumentByName(%q): err = %v, want ErrNotFound", name, err)
			}
		}

		batch, err := s.DocumentsByBatch(ctx, ds.ID, "batch-1")
		if err != nil || len(batch) != 3 || batch[0].ID != old.ID {
			t.Errorf("DocumentsByBatch = %v, %v", ids(batch, documentID), err)
		}
		if got, err := s.DocumentsByBatch(ctx, ds.ID, "batch-2"); err != nil || len(got) != 1 || got[0].ID != newer.ID {
			t.Errorf("DocumentsByBatch(batch-2) = %v, %v", ids(got, documentID), err)
		}
	})
}

func TestUnfinishedDocuments(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		a, b := kbDataset(t, s, "a"), kbDataset(t, s, "b")
		mk := func(ds Dataset, sec int64, status string, paused bool) Document {
			return kbDocument(t, s, ds.ID, status, func(d *Document) { d.CreatedAt, d.IndexingStatus, d.IsPaused = at(sec), status, paused })
		}
		waiting := mk(a, 3, IndexingWaiting, false)
		parsing := mk(b, 1, IndexingParsing, false)
		indexing := mk(a, 2, IndexingIndexing, false)
		mk(a, 0, IndexingIndexing, true)
		mk(a, 0, IndexingCompleted, false)
		mk(b, 0, IndexingError, false)
		got, err := s.UnfinishedDocuments(ctx)
		want := []string{parsing.ID, indexing.ID, waiting.ID}
		if err != nil || !reflect.DeepEqual(ids(got, documentID), want) {
			t.Fatalf("UnfinishedDocuments = %v, %v; want %v", ids(got, documentID), err, want)
		}
	})
}

func TestDocumentStatsAndProgress(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		served := kbIndex(t, s, doc, 1, "one", "two", "three")
		if err := s.IncrementHitCounts(ctx, []string{served[0].ID, served[0].ID, served[1].ID}); err != nil {
			t.Fatal(err)
		}
		if err := s.IncrementHitCounts(ctx, []string{served[0].ID}); err != nil {
			t.Fatal(err)
		}

		// Generation 2 is being built: 2 of 3 counted segments done, one re_segment left out.
		doc.IndexingGeneration = 2
		if err := s.UpdateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		building := []Segment{
			{ID: NewID(), Status: SegmentCompleted, CompletedAt: ptime(1)},
			{ID: NewID(), Status: SegmentCompleted, CompletedAt: ptime(2)},
			{ID: NewID(), Status: SegmentIndexing},
			{ID: NewID(), Status: SegmentReSegment, CompletedAt: ptime(3)},
		}
		for i := range building {
			building[i].DatasetID, building[i].DocumentID, building[i].Generation, building[i].Position = ds.ID, doc.ID, 2, i+1
		}
		if err := s.AddSegments(ctx, building, nil); err != nil {
			t.Fatal(err)
		}
		empty := kbDocument(t, s, ds.ID, "empty", nil)
		unknown := NewID()

		stats, err := s.DocumentStats(ctx, []string{doc.ID, empty.ID, unknown})
		wantStats := map[string]DocumentStats{doc.ID: {SegmentCount: 3, HitCount: 3}, empty.ID: {}}
		if err != nil || !reflect.DeepEqual(stats, wantStats) {
			t.Errorf("DocumentStats = %+v, %v; want %+v", stats, err, wantStats)
		}
		progress, err := s.IndexingProgress(ctx, []string{doc.ID, empty.ID, unknown})
		wantProgress := map[string]IndexingProgress{doc.ID: {Completed: 2, Total: 3}, empty.ID: {}}
		if err != nil || !reflect.DeepEqual(progress, wantProgress) {
			t.Errorf("IndexingProgress = %+v, %v; want %+v", progress, err, wantProgress)
		}
		// With no generation being built, progress is over the served one.
		empty2 := kbDocument(t, s, ds.ID, "served only", nil)
		kbIndex(t, s, empty2, 1, "a", "b")
		if p, err := s.IndexingProgress(ctx, []string{empty2.ID}); err != nil || p[empty2.ID] != (IndexingProgress{Completed: 2, Total: 2}) {
			t.Errorf("IndexingProgress(served) = %+v, %v", p, err)
		}
		if seg, err := s.Segment(ctx, doc.ID, served[0].ID); err != nil || seg.HitCount != 2 {
			t.Errorf("hit count after increments = %d, %v; want 2 (a repeated id counts once per call)", seg.HitCount, err)
		}
	})
}

func TestDeleteDocument(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doomed, kept := kbDocument(t, s, ds.ID, "doomed", nil), kbDocument(t, s, ds.ID, "kept", nil)
		for _, d := range []Document{doomed, kept} {
			segs := kbIndex(t, s, d, 1, "apple pie")
			kbIndex(t, s, d, 2, "apple tart") // a generation being built
			if err := s.AddSegments(ctx, nil, []ChildChunk{{ID: NewID(), SegmentID: segs[0].ID, DatasetID: ds.ID, DocumentID: d.ID, Generation: 1, Content: "c"}}); err != nil {
				t.Fatal(err)
			}
		}
		v0, _ := s.IndexVersion(ctx, ds.ID)
		if err := s.DeleteDocument(ctx, ds.ID, doomed.ID); err != nil {
			t.Fatal(err)
		}
		if v1, _ := s.IndexVersion(ctx, ds.ID); v1 <= v0 {
			t.Errorf("index version %d → %d, want it moved on", v0, v1)
		}
		if _, err := s.Document(ctx, ds.ID, doomed.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted document: err = %v", err)
		}
		for _, table := range []string{"document_segments", "child_chunks", "index_nodes"} {
			if n := kbCount(t, s, table, "document_id = ?", doomed.ID); n != 0 {
				t.Errorf("%s: %d rows left", table, n)
			}
			if n := kbCount(t, s, table, "document_id = ?", kept.ID); n == 0 {
				t.Errorf("%s: the other document's rows went too", table)
			}
		}
		if n := kbFTSCount(t, s, "apple"); n != 2 {
			t.Errorf("full-text rows for apple = %d, want 2 (the kept document's)", n)
		}
		if n := kbKeywordRows(t, s, "", "apple"); n != 2 {
			t.Errorf("keyword rows for apple = %d, want 2", n)
		}
	})
}
