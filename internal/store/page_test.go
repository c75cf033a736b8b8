package store

import (
	"math"
	"testing"
)

// TestPageWindow checks the offset arithmetic of every paginated list.
func TestPageWindow(t *testing.T) {
	for _, tc := range []struct {
		page, limit int
		want        [2]int64
	}{
		{1, 20, [2]int64{20, 0}},
		{3, 20, [2]int64{20, 40}},
		{math.MaxInt64 / 20, 20, [2]int64{20, (math.MaxInt64/20 - 1) * 20}},
		{math.MaxInt64/20 + 2, 20, [2]int64{0, 0}}, // (page-1)*limit is past MaxInt64
		{math.MaxInt64, 20, [2]int64{0, 0}},
		{math.MaxInt64, 1, [2]int64{1, math.MaxInt64 - 1}},
		{2, math.MaxInt64, [2]int64{math.MaxInt64, math.MaxInt64}},
		{3, math.MaxInt64, [2]int64{0, 0}},
	} {
		got := pageWindow(tc.page, tc.limit)
		if got[0].(int64) != tc.want[0] || got[1].(int64) != tc.want[1] {
			t.Errorf("pageWindow(%d, %d) = %v, want %v", tc.page, tc.limit, got, tc.want)
		}
	}
}

// TestPagesPastTheEnd asks every paginated list for a page far past its last one, whose offset
// overflows int64: each answers no rows and the right total, on both engines (the wrapped
// offset used to be negative: the first page on SQLite, an error on PostgreSQL).
func TestPagesPastTheEnd(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", func(d *Document) { d.DocForm = "hierarchical_model" })
		seg := Segment{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 1, Content: "parent", Enabled: true}
		child := ChildChunk{ID: NewID(), SegmentID: seg.ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 1, Content: "child"}
		if err := s.AddSegments(ctx, []Segment{seg}, []ChildChunk{child}); err != nil {
			t.Fatal(err)
		}
		f := newChatFixture(t, s)
		m := newMessages(t, s, f.app, f.alice, 1)[0]
		if _, err := s.UpsertFeedback(ctx, Feedback{AppID: f.app, MessageID: m.ID, Rating: RatingLike, FromEndUserID: f.alice.ID}); err != nil {
			t.Fatal(err)
		}

		for _, page := range []int{2, math.MaxInt64 / 20, math.MaxInt64/20 + 2, math.MaxInt64} {
			datasets, total, err := s.ListDatasets(ctx, DatasetQuery{Page: page, Limit: 20})
			if err != nil || len(datasets) != 0 || total != 1 {
				t.Errorf("datasets page %d = %d rows, total %d, %v; want none of 1", page, len(datasets), total, err)
			}
			docs, total, err := s.ListDocuments(ctx, DocumentQuery{DatasetID: ds.ID, Page: page, Limit: 20})
			if err != nil || len(docs) != 0 || total != 1 {
				t.Errorf("documents page %d = %d rows, total %d, %v; want none of 1", page, len(docs), total, err)
			}
			segs, total, err := s.ListSegments(ctx, SegmentQuery{DocumentID: doc.ID, Page: page, Limit: 20})
			if err != nil || len(segs) != 0 || total != 1 {
				t.Errorf("segments page %d = %d rows, total %d, %v; want none of 1", page, len(segs), total, err)
			}
			children, total, err := s.ListChildChunks(ctx, seg.ID, "", page, 20)
			if err != nil || len(children) != 0 || total != 1 {
				t.Errorf("child chunks page %d = %d rows, total %d, %v; want none of 1", page, len(children), total, err)
			}
			fbs, err := s.ListAppFeedbacks(ctx, f.app, page, 20)
			if err != nil || len(fbs) != 0 {
				t.Errorf("feedbacks page %d = %d rows, %v; want none", page, len(fbs), err)
			}
		}
		// The first page still has the rows.
		if docs, total, err := s.ListDocuments(ctx, DocumentQuery{DatasetID: ds.ID, Page: 1, Limit: 20}); err != nil || len(docs) != 1 || total != 1 {
			t.Errorf("documents page 1 = %d rows, total %d, %v", len(docs), total, err)
		}
	})
}
