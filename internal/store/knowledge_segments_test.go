package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func childID(c ChildChunk) string { return c.ID }

func TestSegmentsRoundTrip(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", func(d *Document) { d.DocForm = "hierarchical_model" })

		full := Segment{
			ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 1, Content: "Question?", Answer: "Answer.",
			WordCount: 16, Tokens: 5, Keywords: []string{"question", "答案"}, IndexNodeID: NewID(), IndexNodeHash: "hash", HitCount: 4,
			Enabled: false, DisabledAt: ptime(1), DisabledBy: "acct-2", Status: SegmentError, CreatedBy: "acct-1", CreatedAt: at(2),
			UpdatedBy: "acct-3", UpdatedAt: at(3), IndexingAt: ptime(4), CompletedAt: ptime(5), Error: "embedding failed", StoppedAt: ptime(6),
		}
		bare := Segment{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 2, Content: "bare", Enabled: true}
		children := []ChildChunk{
			{ID: NewID(), SegmentID: bare.ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 2, Content: "second half", WordCount: 11,
				IndexNodeID: NewID(), IndexNodeHash: "c2", Type: ChildChunkCustomized, CreatedBy: "acct-1", CreatedAt: at(7), UpdatedAt: at(8)},
			{ID: NewID(), SegmentID: bare.ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 1, Content: "first half"},
		}
		if err := s.AddSegments(ctx, []Segment{full, bare}, children); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Segment(ctx, doc.ID, full.ID); err != nil || !reflect.DeepEqual(got, full) {
			t.Fatalf("Segment = %+v, %v\nwant %+v", got, err, full)
		}
		got, err := s.Segment(ctx, doc.ID, bare.ID)
		if err != nil || got.Status != SegmentWaiting || got.Keywords != nil || got.CreatedAt.IsZero() || got.DisabledAt != nil || got.Answer != "" {
			t.Fatalf("Segment(bare) = %+v, %v; want defaults", got, err)
		}

		byParent, err := s.ChildChunks(ctx, []string{bare.ID, full.ID})
		if err != nil || len(byParent) != 1 || !reflect.DeepEqual(ids(byParent[bare.ID], childID), []string{children[1].ID, children[0].ID}) {
			t.Fatalf("ChildChunks = %+v, %v", byParent, err)
		}
		if c, err := s.ChildChunk(ctx, bare.ID, children[0].ID); err != nil || !reflect.DeepEqual(c, children[0]) {
			t.Fatalf("ChildChunk = %+v, %v\nwant %+v", c, err, children[0])
		}
		if c := byParent[bare.ID][0]; c.Type != ChildChunkAutomatic || c.CreatedAt.IsZero() {
			t.Errorf("child defaults = %+v", c)
		}

		// Errors.
		for name, err := range map[string]error{
			"segment of another document": func() error { _, err := s.Segment(ctx, NewID(), full.ID); return err }(),
			"child of another segment":    func() error { _, err := s.ChildChunk(ctx, full.ID, children[0].ID); return err }(),
			"segment of unknown document": s.AddSegments(ctx, []Segment{{ID: NewID(), DatasetID: ds.ID, DocumentID: NewID()}}, nil),
			"child of unknown segment":    s.AddSegments(ctx, nil, []ChildChunk{{ID: NewID(), SegmentID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID}}),
			"delete unknown segment":      s.DeleteSegment(ctx, doc.ID, NewID()),
			"delete unknown child":        s.DeleteChildChunk(ctx, bare.ID, NewID()),
			"update unknown segment":      s.UpdateSegment(ctx, Segment{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID}, nil),
			"update unknown child":        s.UpdateChildChunk(ctx, ChildChunk{ID: NewID(), SegmentID: bare.ID}, IndexNode{}),
		} {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", name, err)
			}
		}
		if err := s.AddSegments(ctx, []Segment{{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, IndexNodeID: full.IndexNodeID}}, nil); !errors.Is(err, ErrConflict) {
			t.Errorf("reused index node id: err = %v, want ErrConflict", err)
		}
		for name, err := range map[string]error{
			"segment without id":  s.AddSegments(ctx, []Segment{{DatasetID: ds.ID, DocumentID: doc.ID}}, nil),
			"bad segment status":  s.AddSegments(ctx, []Segment{{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Status: "done"}}, nil),
			"child without id":    s.AddSegments(ctx, nil, []ChildChunk{{SegmentID: bare.ID, DatasetID: ds.ID, DocumentID: doc.ID}}),
			"bad child type":      s.AddSegments(ctx, nil, []ChildChunk{{ID: NewID(), SegmentID: bare.ID, DatasetID: ds.ID, DocumentID: doc.ID, Type: "x"}}),
			"node without doc id": s.IndexNodes(ctx, []IndexNode{{NodeID: NewID(), DatasetID: ds.ID, SegmentID: bare.ID}}, at(0)),
		} {
			wantValidationError(t, name, err)
		}
		// A failed batch leaves nothing behind.
		if n := kbCount(t, s, "document_segments", "document_id = ?", doc.ID); n != 2 {
			t.Errorf("segments after failed adds = %d, want 2", n)
		}
		if err := s.AddSegments(ctx, nil, nil); err != nil {
			t.Errorf("AddSegments(nothing) = %v", err)
		}
	})
}

func TestAddSegmentsInBatches(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		// More than one full batch of segments and of child chunks, plus a short one.
		const n = 2*batchRows + 17
		segs := make([]Segment, n)
		var children []ChildChunk
		nodes := make([]IndexNode, 0, 2*n)
		for i := range segs {
			segs[i] = Segment{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: i + 1,
				Content: fmt.Sprintf("segment %d", i), IndexNodeID: NewID(), Enabled: true}
			nodes = append(nodes, kbNode(segs[i]))
			c := ChildChunk{ID: NewID(), SegmentID: segs[i].ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 1,
				Content: fmt.Sprintf("child %d", i), IndexNodeID: NewID()}
			children = append(children, c)
			nodes = append(nodes, IndexNode{NodeID: c.IndexNodeID, DatasetID: ds.ID, DocumentID: doc.ID, SegmentID: c.SegmentID,
				ChildChunkID: c.ID, Generation: 1, Terms: c.Content, Keywords: []string{"child", "child", ""}})
		}
		if err := s.AddSegments(ctx, segs, children); err != nil {
			t.Fatal(err)
		}
		if err := s.IndexNodes(ctx, nodes, at(9)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.MaxSegmentPosition(ctx, doc.ID, 1); err != nil || got != n {
			t.Errorf("MaxSegmentPosition = %d, %v; want %d", got, err, n)
		}
		if got, err := s.MaxSegmentPosition(ctx, doc.ID, 2); err != nil || got != 0 {
			t.Errorf("MaxSegmentPosition(empty generation) = %d, %v; want 0", got, err)
		}
		for table, want := range map[string]int{"child_chunks": n, "index_nodes": 2 * n, "index_vectors": n} {
			if got := kbCount(t, s, table, "dataset_id = ?", ds.ID); got != want {
				t.Errorf("%s rows = %d, want %d", table, got, want)
			}
		}
		// A repeated keyword is stored once; an empty one not at all.
		if got := kbKeywordRows(t, s, ds.ID, "child"); got != n {
			t.Errorf("keyword rows for child = %d, want %d", got, n)
		}
		if got := kbCount(t, s, "document_segments", "status = 'completed' AND completed_at = ?", at(9).Unix()); got != n {
			t.Errorf("completed segments = %d, want %d", got, n)
		}
		// Indexing a node twice is a conflict, and rolls the whole batch back.
		if err := s.IndexNodes(ctx, nodes[:3], at(10)); !errors.Is(err, ErrConflict) {
			t.Errorf("re-index: err = %v, want ErrConflict", err)
		}
		if got := kbCount(t, s, "document_segments", "completed_at = ?", at(10).Unix()); got != 0 {
			t.Errorf("segments touched by a failed IndexNodes = %d", got)
		}
	})
}

func TestListSegments(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		segs := kbIndex(t, s, doc, 1, "Alpha one", "beta two", "ALPHA three", "gamma 50% off", "delta")
		kbIndex(t, s, doc, 2, "alpha in the next generation")
		failed := segs[4]
		failed.Status, failed.Error = SegmentError, "boom"
		if err := s.UpdateSegment(ctx, failed, nil); err != nil {
			t.Fatal(err)
		}

		all, total, err := s.ListSegments(ctx, SegmentQuery{DocumentID: doc.ID, Page: 1, Limit: 10})
		if err != nil || total != 5 || !reflect.DeepEqual(ids(all, segmentID), ids(segs, segmentID)) {
			t.Fatalf("ListSegments = %v, %d, %v", ids(all, segmentID), total, err)
		}
		page, total, err := s.ListSegments(ctx, SegmentQuery{DocumentID: doc.ID, Page: 2, Limit: 2})
		if err != nil || total != 5 || !reflect.DeepEqual(ids(page, segmentID), ids(segs[2:4], segmentID)) {
			t.Fatalf("page 2 = %v, %d, %v", ids(page, segmentID), total, err)
		}
		for name, tc := range map[string]struct {
			q    SegmentQuery
			want []Segment
		}{
			"keyword":        {SegmentQuery{Keyword: "alpha"}, []Segment{segs[0], segs[2]}},
			"literal %":      {SegmentQuery{Keyword: "0%"}, []Segment{segs[3]}},
			"status":         {SegmentQuery{Statuses: []string{SegmentError}}, []Segment{segs[4]}},
			"statuses":       {SegmentQuery{Statuses: []string{SegmentError, SegmentCompleted}}, segs},
			"status+keyword": {SegmentQuery{Statuses: []string{SegmentCompleted}, Keyword: "a"}, segs[:4]},
		} {
			tc.q.DocumentID, tc.q.Page, tc.q.Limit = doc.ID, 1, 10
			got, total, err := s.ListSegments(ctx, tc.q)
			if err != nil || total != len(tc.want) || !reflect.DeepEqual(ids(got, segmentID), ids(tc.want, segmentID)) {
				t.Errorf("%s: %v, %d, %v; want %v", name, ids(got, segmentID), total, err, ids(tc.want, segmentID))
			}
		}
		if _, _, err := s.ListSegments(ctx, SegmentQuery{DocumentID: doc.ID, Page: 1}); err == nil {
			t.Error("limit 0: want error")
		}
		// Segments of a generation not served are invisible to Segment.
		next, _, _ := s.ListSegments(ctx, SegmentQuery{DocumentID: doc.ID, Keyword: "next", Page: 1, Limit: 1})
		if len(next) != 0 {
			t.Errorf("generation 2 listed before the swap: %v", next)
		}
	})
}

func TestChildChunkEdits(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", func(d *Document) { d.DocForm = "hierarchical_model" })
		parent := Segment{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 1, Content: "parent text", IndexNodeID: NewID(), Enabled: true}
		var children []ChildChunk
		var nodes []IndexNode
		for i, text := range []string{"kiwi fruit", "mango fruit", "papaya fruit"} {
			c := ChildChunk{ID: NewID(), SegmentID: parent.ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: i + 1, Content: text, IndexNodeID: NewID()}
			children = append(children, c)
			nodes = append(nodes, IndexNode{NodeID: c.IndexNodeID, DatasetID: ds.ID, DocumentID: doc.ID, SegmentID: parent.ID, ChildChunkID: c.ID,
				Generation: 1, Terms: text, Keywords: []string{"fruit"}, Vector: []float32{float32(i)}})
		}
		if err := s.AddSegments(ctx, []Segment{parent}, children); err != nil {
			t.Fatal(err)
		}
		if err := s.IndexNodes(ctx, nodes, at(1)); err != nil {
			t.Fatal(err)
		}
		search := func(term string) []string {
			t.Helper()
			hits, err := s.SearchFullText(ctx, []string{ds.ID}, []string{term}, 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, h := range hits {
				out = append(out, h.NodeID)
			}
			return out
		}
		if got := search("fruit"); len(got) != 3 {
			t.Fatalf("fruit hits = %v, want 3 child nodes", got)
		}

		// List with keyword and paging.
		page, total, err := s.ListChildChunks(ctx, parent.ID, "FRUIT", 2, 2)
		if err != nil || total != 3 || !reflect.DeepEqual(ids(page, childID), []string{children[2].ID}) {
			t.Errorf("ListChildChunks = %v, %d, %v", ids(page, childID), total, err)
		}
		if got, total, err := s.ListChildChunks(ctx, parent.ID, "mango", 1, 10); err != nil || total != 1 || got[0].ID != children[1].ID {
			t.Errorf("ListChildChunks(mango) = %v, %d, %v", ids(got, childID), total, err)
		}
		if _, _, err := s.ListChildChunks(ctx, parent.ID, "", 0, 10); err == nil {
			t.Error("page 0: want error")
		}

		// Update replaces the chunk's node; ids in the node are taken from the row.
		edited := children[0]
		edited.Content, edited.Type, edited.IndexNodeID, edited.UpdatedAt = "lychee", ChildChunkCustomized, NewID(), at(50)
		v0, _ := s.IndexVersion(ctx, ds.ID)
		if err := s.UpdateChildChunk(ctx, edited, IndexNode{NodeID: edited.IndexNodeID, Terms: "lychee", Keywords: []string{"lychee"}}); err != nil {
			t.Fatal(err)
		}
		if v1, _ := s.IndexVersion(ctx, ds.ID); v1 <= v0 {
			t.Errorf("UpdateChildChunk did not move the index version")
		}
		if got := search("kiwi"); len(got) != 0 {
			t.Errorf("old child node still found: %v", got)
		}
		if got := search("lychee"); !reflect.DeepEqual(got, []string{edited.IndexNodeID}) {
			t.Errorf("lychee hits = %v, want the new node", got)
		}
		hits, err := s.ResolveHits(ctx, []string{edited.IndexNodeID})
		if h := hits[edited.IndexNodeID]; err != nil || h.ChildChunk == nil || h.ChildChunk.Content != "lychee" || h.ChildChunk.Type != ChildChunkCustomized ||
			!h.ChildChunk.UpdatedAt.Equal(at(50)) || h.Segment.ID != parent.ID {
			t.Errorf("ResolveHits(edited child) = %+v, %v", h, err)
		}

		// An update with no node takes the chunk out of the index.
		if err := s.UpdateChildChunk(ctx, children[1], IndexNode{}); err != nil {
			t.Fatal(err)
		}
		if got := search("mango"); len(got) != 0 {
			t.Errorf("unindexed child still found: %v", got)
		}

		// Delete removes the row and its node.
		if err := s.DeleteChildChunk(ctx, parent.ID, children[2].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ChildChunk(ctx, parent.ID, children[2].ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted child: err = %v", err)
		}
		if n := kbCount(t, s, "index_nodes", "child_chunk_id = ?", children[2].ID); n != 0 {
			t.Errorf("deleted child's node rows = %d", n)
		}
		if got := search("papaya"); len(got) != 0 {
			t.Errorf("deleted child still found: %v", got)
		}
		// kiwi's node was replaced, mango's dropped, papaya's deleted: no row may be left.
		if n := kbFTSCount(t, s, "fruit"); n != 0 {
			t.Errorf("full-text rows for fruit = %d, want 0", n)
		}
	})
}

func TestSegmentEdits(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		segs := kbIndex(t, s, doc, 1, "red apple", "green pear")

		// Update writes the row (keeping hit_count and created_*) and replaces the node.
		if err := s.IncrementHitCounts(ctx, []string{segs[0].ID}); err != nil {
			t.Fatal(err)
		}
		edited := segs[0]
		edited.Content, edited.Keywords, edited.IndexNodeID, edited.UpdatedBy, edited.UpdatedAt = "yellow banana", []string{"yellow", "banana"}, NewID(), "acct-9", at(70)
		edited.HitCount, edited.CreatedBy = 99, "intruder"
		node := kbNode(edited)
		node.DatasetID, node.DocumentID, node.SegmentID, node.Generation = "", "", "", 0 // taken from the row
		if err := s.UpdateSegment(ctx, edited, []IndexNode{node}); err != nil {
			t.Fatal(err)
		}
		edited.HitCount, edited.CreatedBy = 1, segs[0].CreatedBy
		if got, err := s.Segment(ctx, doc.ID, edited.ID); err != nil || !reflect.DeepEqual(got, edited) {
			t.Fatalf("after UpdateSegment = %+v, %v\nwant %+v", got, err, edited)
		}
		if hits, _ := s.SearchKeywords(ctx, []string{ds.ID}, []string{"apple"}, 5); len(hits) != 0 {
			t.Errorf("old keywords still found: %v", hits)
		}
		hits, err := s.SearchKeywords(ctx, []string{ds.ID}, []string{"banana"}, 5)
		if err != nil || len(hits) != 1 || hits[0].NodeID != edited.IndexNodeID {
			t.Errorf("new keywords = %v, %v", hits, err)
		}
		if vs, err := s.NodeVectors(ctx, []string{segs[0].IndexNodeID, edited.IndexNodeID}); err != nil || len(vs) != 1 || vs[edited.IndexNodeID] == nil {
			t.Errorf("vectors after update = %v, %v; want only the new node's", vs, err)
		}

		// Delete removes the segment, its children and all their index rows.
		child := ChildChunk{ID: NewID(), SegmentID: segs[1].ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Content: "pear child", IndexNodeID: NewID()}
		if err := s.AddSegments(ctx, nil, []ChildChunk{child}); err != nil {
			t.Fatal(err)
		}
		if err := s.IndexNodes(ctx, []IndexNode{{NodeID: child.IndexNodeID, DatasetID: ds.ID, DocumentID: doc.ID, SegmentID: segs[1].ID, ChildChunkID: child.ID, Generation: 1, Terms: "pear child"}}, at(2)); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSegment(ctx, doc.ID, segs[1].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Segment(ctx, doc.ID, segs[1].ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted segment: err = %v", err)
		}
		for _, table := range []string{"index_nodes", "child_chunks"} {
			if n := kbCount(t, s, table, "segment_id = ?", segs[1].ID); n != 0 {
				t.Errorf("%s rows of deleted segment = %d", table, n)
			}
		}
		if n := kbFTSCount(t, s, "pear"); n != 0 {
			t.Errorf("full-text rows for pear = %d, want 0", n)
		}
		for kw, want := range map[string]int{"yellow": 1, "banana": 1, "red": 0, "apple": 0, "green": 0, "pear": 0} {
			if n := kbKeywordRows(t, s, "", kw); n != want {
				t.Errorf("keyword rows for %s = %d, want %d", kw, n, want)
			}
		}
	})
}
