package store

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store/storetest"
)

func hitIDs(hits []NodeHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.NodeID
	}
	return out
}

func nodeIDs(segs ...Segment) []string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.IndexNodeID
	}
	return out
}

// kbSearchAll runs every kind of search for term over the datasets and returns the node ids
// each finds, sorted: keyword, full-text, vectors (of the first dataset) and resolvable among
// candidates.
func kbSearchAll(t *testing.T, s *Store, datasets []string, term string, candidates []string) (kw, ft, vec, resolved []string) {
	t.Helper()
	ctx := t.Context()
	k, err := s.SearchKeywords(ctx, datasets, []string{term}, 100)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.SearchFullText(ctx, datasets, []string{term}, 100)
	if err != nil {
		t.Fatal(err)
	}
	_, nodes, err := s.SearchableVectors(ctx, datasets[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		vec = append(vec, n.NodeID)
	}
	hits, err := s.ResolveHits(ctx, candidates)
	if err != nil {
		t.Fatal(err)
	}
	for id := range hits {
		resolved = append(resolved, id)
	}
	kw, ft = hitIDs(k), hitIDs(f)
	for _, l := range [][]string{kw, ft, vec, resolved} {
		slices.Sort(l)
	}
	return kw, ft, vec, resolved
}

func TestSearchability(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds, other := kbDataset(t, s, "kb"), kbDataset(t, s, "other")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		segs := kbIndex(t, s, doc, 1, "zebra one", "zebra two")
		kbIndex(t, s, kbDocument(t, s, other.ID, "elsewhere", nil), 1, "zebra three")
		all := nodeIDs(segs...)
		slices.Sort(all)

		check := func(name string, want []string) {
			t.Helper()
			kw, ft, vec, resolved := kbSearchAll(t, s, []string{ds.ID}, "zebra", nodeIDs(segs...))
			for kind, got := range map[string][]string{"keyword": kw, "full-text": ft, "vectors": vec, "resolve": resolved} {
				if !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
					t.Errorf("%s: %s search = %v, want %v", name, kind, got, want)
				}
			}
		}
		check("all searchable", all)

		// Each of these makes the document's nodes, or one segment's, unsearchable; undoing it
		// makes them searchable again.
		docCases := map[string]func(d *Document){
			"disabled document": func(d *Document) { d.Enabled = false },
			"archived document": func(d *Document) { d.Archived = true },
			"other generation":  func(d *Document) { d.Generation = 2 },
		}
		for name, mod := range docCases {
			changed := doc
			mod(&changed)
			if err := s.UpdateDocument(ctx, changed); err != nil {
				t.Fatal(err)
			}
			check(name, nil)
			if err := s.UpdateDocument(ctx, doc); err != nil {
				t.Fatal(err)
			}
			check("after undoing "+name, all)
		}
		segCases := map[string]func(g *Segment){
			"disabled segment":  func(g *Segment) { g.Enabled = false },
			"indexing segment":  func(g *Segment) { g.Status = SegmentIndexing },
			"error segment":     func(g *Segment) { g.Status = SegmentError },
			"re_segment status": func(g *Segment) { g.Status = SegmentReSegment },
		}
		for name, mod := range segCases {
			changed := segs[0]
			mod(&changed)
			if err := s.UpdateSegment(ctx, changed, []IndexNode{kbNode(segs[0])}); err != nil {
				t.Fatal(err)
			}
			check(name, []string{segs[1].IndexNodeID})
			if err := s.UpdateSegment(ctx, segs[0], []IndexNode{kbNode(segs[0])}); err != nil {
				t.Fatal(err)
			}
			check("after undoing "+name, all)
		}

		// Other datasets' nodes are found only when asked for.
		kw, ft, _, _ := kbSearchAll(t, s, []string{ds.ID, other.ID}, "zebra", nil)
		if len(kw) != 3 || len(ft) != 3 {
			t.Errorf("search over both datasets = %v, %v; want 3 hits each", kw, ft)
		}
		for _, datasets := range [][]string{nil, {NewID()}} {
			kw, err := s.SearchKeywords(ctx, datasets, []string{"zebra"}, 10)
			if err != nil || len(kw) != 0 {
				t.Errorf("keyword search over %v = %v, %v; want no hits", datasets, kw, err)
			}
			ft, err := s.SearchFullText(ctx, datasets, []string{"zebra"}, 10)
			if err != nil || len(ft) != 0 {
				t.Errorf("full-text search over %v = %v, %v; want no hits", datasets, ft, err)
			}
		}
	})
}

// TestSearchFullTextCommonTerms pins the search of a query whose terms are all common: the nodes
// holding all of them rank, then, when too few do, those holding all but the most common term,
// never the nodes holding any of them (which, for real stop words, is most of the index).
func TestSearchFullTextCommonTerms(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		s.commonTerms = 4
		ds := kbDataset(t, s, "kb")
		// gamma is in 5 nodes, beta in 6, alpha in 7: all common at 4. The dense node holds
		// alpha and beta often, which the nodes holding any term would have ranked high.
		segs := kbIndex(t, s, kbDocument(t, s, ds.ID, "doc", nil), 1,
			"alpha beta", "alpha beta", "alpha alpha alpha beta beta beta", "alpha",
			"alpha beta gamma", "beta gamma", "beta gamma filler", "gamma", "gamma", "alpha", "alpha")
		if s.Dialect() == DialectPostgres {
			// Which terms are common comes from the column's statistics.
			if _, err := s.DB().ExecContext(ctx, "ANALYZE index_nodes"); err != nil {
				t.Fatal(err)
			}
		}
		search := func(topK int) []string {
			t.Helper()
			hits, err := s.SearchFullText(ctx, []string{ds.ID}, []string{"alpha", "beta", "gamma"}, topK)
			if err != nil {
				t.Fatal(err)
			}
			got := hitIDs(hits)
			slices.Sort(got)
			return got
		}
		sorted := func(segs ...Segment) []string {
			ids := nodeIDs(segs...)
			slices.Sort(ids)
			return ids
		}
		if got, want := search(1), sorted(segs[4]); !slices.Equal(got, want) {
			t.Errorf("top 1 = %v, want the node holding every term %v", got, want)
		}
		// One node holds all three, three hold beta and gamma.
		got := search(2)
		if len(got) != 2 {
			t.Errorf("top 2 = %v, want 2 hits", got)
		}
		for _, id := range got {
			if !slices.Contains(sorted(segs[4], segs[5], segs[6]), id) {
				t.Errorf("top 2 = %v: %s does not hold both beta and gamma", got, id)
			}
		}
		// Fewer nodes than asked for hold even gamma: every node holding a term ranks.
		if got := search(20); len(got) != len(segs) {
			t.Errorf("top 20 = %d hits, want all %d nodes", len(got), len(segs))
		}
	})
}

func TestTSPairs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		terms []string
		want  string
	}{
		{[]string{"a", "b"}, "'a' & 'b'"},
		{[]string{"a", "b2", "c"}, "'a' & 'b2' | 'a' & 'c' | 'b2' & 'c'"},
		// One term, too many to pair, or a term PostgreSQL may split, fold or quote.
		{[]string{"a"}, ""},
		{strings.Fields("a b c d e f g h i j k l m n o p q"), ""},
		{[]string{"a", "e-mail"}, ""},
		{[]string{"a", "Apple"}, ""},
		{[]string{"a", "café"}, ""},
		{[]string{"a", "it's"}, ""},
	} {
		got, ok := tsPairs(tt.terms)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("tsPairs(%q) = %q, %v; want %q", tt.terms, got, ok, tt.want)
		}
	}
}

// TestSearchFullTextPairs pins PostgreSQL's ranking of the nodes holding two of the terms
// alone when at least topK do: their hits and scores are those of ranking every node holding
// a term, as a node holding one term never outranks one holding two, however often it holds it.
func TestSearchFullTextPairs(t *testing.T) {
	t.Parallel()
	s := openEngine(t, storetest.NewEngine(t, storetest.Postgres), true)
	ctx := t.Context()
	ds := kbDataset(t, s, "kb")
	segs := kbIndex(t, s, kbDocument(t, s, ds.ID, "doc", nil), 1,
		"apple banana", "apple apple apple apple apple banana", "apple apple apple apple apple apple apple apple",
		"cherry banana", "cherry", "nothing here")
	terms := []string{"apple", "banana", "cherry"}
	pairs, ok := tsPairs(terms)
	if !ok {
		t.Fatal("tsPairs refused plain words")
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM index_nodes WHERE tsv @@ to_tsquery('simple', $1)", pairs).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("the pairs match %d nodes, want the 3 holding two terms", n)
	}
	three, err := s.SearchFullText(ctx, []string{ds.ID}, terms, 3)
	if err != nil {
		t.Fatal(err)
	}
	ties := nodeIDs(segs[0], segs[3])
	slices.Sort(ties)
	if got, want := hitIDs(three), append(nodeIDs(segs[1]), ties...); !slices.Equal(got, want) {
		t.Errorf("top 3 = %v, want %v", got, want)
	}
	// Five is more than hold two terms: every node holding one ranks, with the same scores.
	five, err := s.SearchFullText(ctx, []string{ds.ID}, terms, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(five) != 5 || !slices.Equal(hitIDs(five[:3]), hitIDs(three)) {
		t.Fatalf("top 5 = %v, want the top 3 %v first", hitIDs(five), hitIDs(three))
	}
	for i := range three {
		if five[i].Score != three[i].Score {
			t.Errorf("hit %d: score %v among the pairs, %v among all", i, three[i].Score, five[i].Score)
		}
	}
}

// TestFTS5Scope pins how a SQLite search keeps to its datasets: by the range of their rids
// alone while their nodes form a run of their own, adding the dataset token to the match only
// when another dataset's nodes lie in that range. Matching the token walks every node of the
// datasets on each search, which took most of the time of a search at 100k nodes.
func TestFTS5Scope(t *testing.T) {
	t.Parallel()
	s := openEngine(t, storetest.NewEngine(t, storetest.SQLite), true)
	ctx := t.Context()
	a, b, c := kbDataset(t, s, "a"), kbDataset(t, s, "b"), kbDataset(t, s, "empty")
	// a's nodes, then b's, then a's again: b's run lies inside a's range.
	a1 := kbIndex(t, s, kbDocument(t, s, a.ID, "a1", nil), 1, "zebra a one", "zebra a two")
	b1 := kbIndex(t, s, kbDocument(t, s, b.ID, "b1", nil), 1, "zebra b one")
	a2 := kbIndex(t, s, kbDocument(t, s, a.ID, "a2", nil), 1, "zebra a three")
	for _, tt := range []struct {
		name      string
		datasets  []string
		token     bool
		empty     bool
		want      []Segment
		firstLast [2]Segment
	}{
		{"a run of its own", []string{b.ID}, false, false, b1, [2]Segment{b1[0], b1[0]}},
		{"interleaved", []string{a.ID}, true, false, append(slices.Clone(a1), a2...), [2]Segment{a1[0], a2[0]}},
		{"both", []string{a.ID, b.ID}, false, false, append(append(slices.Clone(a1), b1...), a2...), [2]Segment{a1[0], a2[0]}},
		{"no nodes", []string{c.ID}, false, true, nil, [2]Segment{}},
		{"unknown", []string{NewID()}, false, true, nil, [2]Segment{}},
	} {
		sc, err := s.fts5Scope(ctx, tt.datasets)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if sc.empty != tt.empty || (sc.match != "") != tt.token {
			t.Errorf("%s: scope %+v, want empty %v, token match %v", tt.name, sc, tt.empty, tt.token)
		}
		if !tt.empty {
			var lo, hi int64
			for i, seg := range tt.firstLast {
				rid := &lo
				if i == 1 {
					rid = &hi
				}
				if err := s.DB().QueryRowContext(ctx, "SELECT rid FROM index_nodes WHERE node_id = ?", seg.IndexNodeID).Scan(rid); err != nil {
					t.Fatal(err)
				}
			}
			if sc.lo != lo || sc.hi != hi {
				t.Errorf("%s: rids %d..%d, want %d..%d", tt.name, sc.lo, sc.hi, lo, hi)
			}
		}
		want := nodeIDs(tt.want...)
		slices.Sort(want)
		kw, err := s.SearchKeywords(ctx, tt.datasets, []string{"zebra"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		ft, err := s.SearchFullText(ctx, tt.datasets, []string{"zebra"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for kind, hits := range map[string][]NodeHit{"keyword": kw, "full-text": ft} {
			got := hitIDs(hits)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s search = %v, want %v", tt.name, kind, got, want)
			}
		}
	}
}

// TestSearchPastUnsearchableMatches pins that the best matches being unsearchable (more of them
// than SQLite's first round of candidates) does not hide a worse searchable one.
func TestSearchPastUnsearchableMatches(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		off := kbDocument(t, s, ds.ID, "off", func(d *Document) { d.Enabled = false })
		texts := make([]string, 300)
		for i := range texts {
			texts[i] = "apple apple apple pie"
		}
		kbIndex(t, s, off, 1, texts...)
		want := kbIndex(t, s, kbDocument(t, s, ds.ID, "on", nil), 1, "apple crumble with a long tail of other words")
		ft, err := s.SearchFullText(ctx, []string{ds.ID}, []string{"apple"}, 1)
		if err != nil || !reflect.DeepEqual(hitIDs(ft), nodeIDs(want...)) {
			t.Errorf("full text = %v, %v; want %v", hitIDs(ft), err, nodeIDs(want...))
		}
		kw, err := s.SearchKeywords(ctx, []string{ds.ID}, []string{"apple", "pie"}, 3)
		if err != nil || !reflect.DeepEqual(hitIDs(kw), nodeIDs(want...)) {
			t.Errorf("keywords = %v, %v; want %v", hitIDs(kw), err, nodeIDs(want...))
		}
	})
}

func TestGenerationSwap(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		old := kbIndex(t, s, doc, 1, "shared old alpha", "shared old beta")
		oldChild := ChildChunk{ID: NewID(), SegmentID: old[0].ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Content: "old child", IndexNodeID: NewID()}
		if err := s.AddSegments(ctx, nil, []ChildChunk{oldChild}); err != nil {
			t.Fatal(err)
		}

		// Re-indexing builds generation 2 beside the served one.
		doc.IndexingGeneration, doc.IndexingStatus = 2, IndexingIndexing
		if err := s.UpdateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		fresh := kbIndex(t, s, doc, 2, "shared new gamma")
		search := func(term string) []string {
			t.Helper()
			kw, ft, _, _ := kbSearchAll(t, s, []string{ds.ID}, term, nil)
			if !reflect.DeepEqual(kw, ft) {
				t.Errorf("%s: keyword hits %v differ from full-text hits %v", term, kw, ft)
			}
			return ft
		}
		wantOld := nodeIDs(old...)
		slices.Sort(wantOld)
		if got := search("shared"); !reflect.DeepEqual(got, wantOld) {
			t.Fatalf("before swap: shared = %v, want the old generation %v", got, wantOld)
		}
		if got := search("new"); len(got) != 0 {
			t.Fatalf("before swap: the new generation is searchable: %v", got)
		}
		if list, _, _ := s.ListSegments(ctx, SegmentQuery{DocumentID: doc.ID, Page: 1, Limit: 10}); len(list) != 2 {
			t.Fatalf("before swap: %d segments listed, want the old 2", len(list))
		}

		v0, _ := s.IndexVersion(ctx, ds.ID)
		doc.Generation, doc.IndexingStatus = 2, IndexingCompleted
		if err := s.SwapGeneration(ctx, doc); err != nil {
			t.Fatal(err)
		}
		if v1, _ := s.IndexVersion(ctx, ds.ID); v1 <= v0 {
			t.Errorf("SwapGeneration kept index version %d", v1)
		}
		if got := search("shared"); !reflect.DeepEqual(got, nodeIDs(fresh...)) {
			t.Fatalf("after swap: shared = %v, want only the new generation %v", got, nodeIDs(fresh...))
		}
		if got := search("old"); len(got) != 0 {
			t.Fatalf("after swap: old generation still found: %v", got)
		}
		if got, err := s.Document(ctx, ds.ID, doc.ID); err != nil || got.Generation != 2 || got.IndexingStatus != IndexingCompleted {
			t.Errorf("document after swap = %+v, %v", got, err)
		}
		// The old generation is gone from every table, exactly.
		for _, table := range []string{"document_segments", "child_chunks", "index_nodes"} {
			if n := kbCount(t, s, table, "document_id = ? AND generation = 1", doc.ID); n != 0 {
				t.Errorf("%s: %d rows of generation 1 left", table, n)
			}
		}
		if n := kbKeywordRows(t, s, "", "old"); n != 0 {
			t.Errorf("keyword rows of generation 1 left: %d", n)
		}
		if n := kbFTSCount(t, s, "shared"); n != 1 {
			t.Errorf("full-text rows for shared = %d, want 1", n)
		}
		if n := kbCount(t, s, "index_vectors", "dataset_id = ?", ds.ID); n != 1 {
			t.Errorf("vector rows = %d, want 1", n)
		}

		// ClearGeneration drops a half-built generation and nothing else.
		kbIndex(t, s, doc, 3, "shared abandoned")
		if err := s.ClearGeneration(ctx, doc.ID, 3); err != nil {
			t.Fatal(err)
		}
		if n := kbCount(t, s, "document_segments", "document_id = ?", doc.ID); n != 1 {
			t.Errorf("segments after ClearGeneration = %d, want the served 1", n)
		}
		if n := kbFTSCount(t, s, "abandoned"); n != 0 {
			t.Errorf("full-text rows of the cleared generation = %d", n)
		}
		if err := s.ClearGeneration(ctx, NewID(), 1); err == nil {
			t.Error("ClearGeneration(unknown document): want error")
		}
		bad := doc
		bad.ID = NewID()
		if err := s.SwapGeneration(ctx, bad); err == nil {
			t.Error("SwapGeneration(unknown document): want error")
		}
		if got := search("shared"); !reflect.DeepEqual(got, nodeIDs(fresh...)) {
			t.Errorf("after failed calls: shared = %v", got)
		}
	})
}

func TestSearchKeywordsRanking(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		segs := kbIndex(t, s, doc, 1, "lion", "lion tiger bear", "tiger lion", "bear cub", "owl")
		hits, err := s.SearchKeywords(ctx, []string{ds.ID}, []string{"lion", "tiger", "bear", "lion", ""}, 10)
		if err != nil {
			t.Fatal(err)
		}
		// bear cub and lion (one keyword each) tie, ordered by node id.
		ones := nodeIDs(segs[0], segs[3])
		slices.Sort(ones)
		want := append(nodeIDs(segs[1], segs[2]), ones...)
		if !reflect.DeepEqual(hitIDs(hits), want) {
			t.Fatalf("ranking = %v\nwant %v", hitIDs(hits), want)
		}
		for i, score := range []float64{1, 2.0 / 3, 1.0 / 3, 1.0 / 3} {
			if d := hits[i].Score - score; d > 1e-9 || d < -1e-9 {
				t.Errorf("hit %d score = %v, want %v", i, hits[i].Score, score)
			}
		}
		if top, err := s.SearchKeywords(ctx, []string{ds.ID}, []string{"lion", "tiger", "bear"}, 2); err != nil || !reflect.DeepEqual(hitIDs(top), want[:2]) {
			t.Errorf("topK 2 = %v, %v", hitIDs(top), err)
		}
		for _, args := range [][]string{nil, {""}} {
			if got, err := s.SearchKeywords(ctx, []string{ds.ID}, args, 10); err != nil || len(got) != 0 {
				t.Errorf("keywords %q = %v, %v; want no hits", args, got, err)
			}
		}
		if got, err := s.SearchKeywords(ctx, []string{ds.ID}, []string{"lion"}, 0); err != nil || len(got) != 0 {
			t.Errorf("topK 0 = %v, %v", got, err)
		}
	})
}

func TestSearchFullTextRanking(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		segs := kbIndex(t, s, doc, 1,
			"apple apple apple banana",
			"apple cherry plum grape melon fig",
			"banana cherry durian",
			"it's an e-mail about café",
			"中文 检索 测试",
			"nothing relevant here",
		)
		search := func(topK int, terms ...string) []NodeHit {
			t.Helper()
			hits, err := s.SearchFullText(ctx, []string{ds.ID}, terms, topK)
			if err != nil {
				t.Fatalf("SearchFullText(%q): %v", terms, err)
			}
			for _, h := range hits {
				if h.Score <= 0 || h.Score >= 1 {
					t.Errorf("SearchFullText(%q): score %v of %s outside (0, 1)", terms, h.Score, h.NodeID)
				}
			}
			return hits
		}

		// More occurrences rank higher.
		hits := search(10, "apple")
		if got := hitIDs(hits); !reflect.DeepEqual(got, nodeIDs(segs[0], segs[1])) {
			t.Fatalf("apple = %v, want %v", got, nodeIDs(segs[0], segs[1]))
		}
		if hits[0].Score <= hits[1].Score {
			t.Errorf("apple scores %v, %v: want the denser node first", hits[0].Score, hits[1].Score)
		}
		// Terms are ORed; a node matching more of them ranks higher.
		hits = search(10, "durian", "cherry", "banana")
		if got := hitIDs(hits); len(got) != 3 || got[0] != segs[2].IndexNodeID {
			t.Errorf("durian|cherry|banana = %v, want 3 hits led by %s", got, segs[2].IndexNodeID)
		}
		if got := search(1, "durian", "cherry", "banana"); len(got) != 1 {
			t.Errorf("topK 1 gave %d hits", len(got))
		}
		// Pre-segmented CJK terms, diacritics-free matching on SQLite aside, and terms the
		// tokenizer splits match as phrases.
		for term, want := range map[string]Segment{"检索": segs[4], "e-mail": segs[3], "it's": segs[3], "café": segs[3]} {
			if got := hitIDs(search(10, term)); !reflect.DeepEqual(got, nodeIDs(want)) {
				t.Errorf("%q = %v, want %v", term, got, nodeIDs(want))
			}
		}
		// Query syntax of either engine is matched literally, never parsed.
		for _, term := range []string{`"`, `apple"`, `AND`, `OR`, `NOT`, `apple*`, `NEAR(apple`, `terms:apple`, `a & b`, `!x`, `'`, `\`, `apple:*`, `(`, `-`, `^apple`, `+`} {
			search(10, term)
		}
		if got := search(10, `apple"`); len(got) != 2 {
			t.Errorf(`apple" = %d hits, want 2 (the quote is punctuation)`, len(got))
		}
		for _, terms := range [][]string{nil, {""}, {"-", "..."}} {
			if got := search(10, terms...); len(got) != 0 {
				t.Errorf("%q = %v, want no hits", terms, got)
			}
		}
	})
}

func TestSearchableVectorsAndIndexVersion(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		version := func() int64 {
			t.Helper()
			v, err := s.IndexVersion(ctx, ds.ID)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		last := version()
		step := func(what string, wantBump bool) {
			t.Helper()
			v := version()
			if bumped := v != last; bumped != wantBump {
				t.Errorf("%s: index version %d → %d, want bumped=%v", what, last, v, wantBump)
			}
			last = v
		}

		doc := kbDocument(t, s, ds.ID, "doc", nil)
		step("CreateDocument", false)
		segs := kbIndex(t, s, doc, 1, "one", "two")
		step("IndexNodes", true)
		// An economy node (no vector) is searchable but has no vector.
		plain := Segment{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 3, Content: "three", IndexNodeID: NewID(), Enabled: true}
		if err := s.AddSegments(ctx, []Segment{plain}, nil); err != nil {
			t.Fatal(err)
		}
		step("AddSegments", false)
		if err := s.IndexNodes(ctx, []IndexNode{{NodeID: plain.IndexNodeID, DatasetID: ds.ID, DocumentID: doc.ID, SegmentID: plain.ID, Generation: 1, Terms: "three"}}, at(1)); err != nil {
			t.Fatal(err)
		}
		step("IndexNodes", true)

		v, nodes, err := s.SearchableVectors(ctx, ds.ID)
		if err != nil || v != last {
			t.Fatalf("SearchableVectors version = %d, %v; want %d", v, err, last)
		}
		slices.SortFunc(nodes, func(a, b SearchableNode) int { return strings.Compare(a.NodeID, b.NodeID) })
		want := []SearchableNode{}
		for _, g := range segs {
			want = append(want, SearchableNode{NodeID: g.IndexNodeID, DocumentID: doc.ID, SegmentID: g.ID, Vector: kbNode(g).Vector})
		}
		slices.SortFunc(want, func(a, b SearchableNode) int { return strings.Compare(a.NodeID, b.NodeID) })
		if !reflect.DeepEqual(nodes, want) {
			t.Fatalf("SearchableVectors = %+v\nwant %+v", nodes, want)
		}
		vecs, err := s.NodeVectors(ctx, []string{segs[0].IndexNodeID, plain.IndexNodeID, NewID()})
		if err != nil || len(vecs) != 1 || !reflect.DeepEqual(vecs[segs[0].IndexNodeID], kbNode(segs[0]).Vector) {
			t.Errorf("NodeVectors = %v, %v", vecs, err)
		}
		// Float32s survive bit for bit.
		odd := []float32{0, -0.0, 1e-38, 3.4028235e38, -1.5, 0.1}
		if got, err := decodeVector(encodeVector(odd)); err != nil || !reflect.DeepEqual(got, odd) {
			t.Errorf("vector round trip = %v, %v", got, err)
		}
		if _, err := decodeVector([]byte{1, 2, 3}); err == nil {
			t.Error("decodeVector(3 bytes): want error")
		}

		same := doc
		same.Name, same.IndexingStatus, same.Tokens = "renamed", IndexingCompleted, 77
		if err := s.UpdateDocument(ctx, same); err != nil {
			t.Fatal(err)
		}
		step("UpdateDocument without a searchability change", false)
		same.Enabled = false
		if err := s.UpdateDocument(ctx, same); err != nil {
			t.Fatal(err)
		}
		step("UpdateDocument disabling", true)
		if _, nodes, _ := s.SearchableVectors(ctx, ds.ID); len(nodes) != 0 {
			t.Errorf("vectors of a disabled document: %v", nodes)
		}
		same.Enabled = true
		if err := s.UpdateDocument(ctx, same); err != nil {
			t.Fatal(err)
		}
		step("UpdateDocument enabling", true)
		if err := s.UpdateSegment(ctx, segs[0], []IndexNode{kbNode(segs[0])}); err != nil {
			t.Fatal(err)
		}
		step("UpdateSegment", true)
		if err := s.IncrementHitCounts(ctx, []string{segs[0].ID}); err != nil {
			t.Fatal(err)
		}
		step("IncrementHitCounts", false)
		child := ChildChunk{ID: NewID(), SegmentID: segs[1].ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Content: "c", IndexNodeID: NewID()}
		if err := s.AddSegments(ctx, nil, []ChildChunk{child}); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateChildChunk(ctx, child, IndexNode{NodeID: child.IndexNodeID, Terms: "c"}); err != nil {
			t.Fatal(err)
		}
		step("UpdateChildChunk", true)
		if err := s.DeleteChildChunk(ctx, segs[1].ID, child.ID); err != nil {
			t.Fatal(err)
		}
		step("DeleteChildChunk", true)
		if err := s.DeleteSegment(ctx, doc.ID, segs[1].ID); err != nil {
			t.Fatal(err)
		}
		step("DeleteSegment", true)
		if err := s.ClearGeneration(ctx, doc.ID, 5); err != nil {
			t.Fatal(err)
		}
		step("ClearGeneration", true)
		if err := s.SwapGeneration(ctx, same); err != nil {
			t.Fatal(err)
		}
		step("SwapGeneration", true)
		if err := s.DeleteDocument(ctx, ds.ID, doc.ID); err != nil {
			t.Fatal(err)
		}
		step("DeleteDocument", true)
		if err := s.UpdateDataset(ctx, ds); err != nil {
			t.Fatal(err)
		}
		step("UpdateDataset", false)

		for _, err := range []error{
			func() error { _, err := s.IndexVersion(ctx, NewID()); return err }(),
			func() error { _, _, err := s.SearchableVectors(ctx, NewID()); return err }(),
		} {
			if err == nil {
				t.Error("unknown dataset: want error")
			}
		}
	})
}

func TestResolveHits(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		segs := kbIndex(t, s, doc, 1, "first", "second")
		child := ChildChunk{ID: NewID(), SegmentID: segs[1].ID, DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: 1, Content: "part", IndexNodeID: NewID(), Type: ChildChunkAutomatic, CreatedAt: at(3), UpdatedAt: at(3)}
		if err := s.AddSegments(ctx, nil, []ChildChunk{child}); err != nil {
			t.Fatal(err)
		}
		if err := s.IndexNodes(ctx, []IndexNode{{NodeID: child.IndexNodeID, DatasetID: ds.ID, DocumentID: doc.ID, SegmentID: segs[1].ID, ChildChunkID: child.ID, Generation: 1, Terms: "part"}}, at(100)); err != nil {
			t.Fatal(err)
		}
		// An unsearchable node, an unknown id and duplicates are skipped.
		hidden := kbIndex(t, s, kbDocument(t, s, ds.ID, "off", func(d *Document) { d.Enabled = false }), 1, "hidden")
		hits, err := s.ResolveHits(ctx, []string{segs[0].IndexNodeID, child.IndexNodeID, hidden[0].IndexNodeID, NewID(), segs[0].IndexNodeID})
		if err != nil || len(hits) != 2 {
			t.Fatalf("ResolveHits = %d hits, %v; want 2", len(hits), err)
		}
		storedDS, _ := s.Dataset(ctx, ds.ID)
		storedDoc, _ := s.Document(ctx, ds.ID, doc.ID)
		want := map[string]Hit{
			segs[0].IndexNodeID: {NodeID: segs[0].IndexNodeID, Segment: segs[0], Document: storedDoc, Dataset: storedDS},
			child.IndexNodeID:   {NodeID: child.IndexNodeID, Segment: segs[1], ChildChunk: &child, Document: storedDoc, Dataset: storedDS},
		}
		if !reflect.DeepEqual(hits, want) {
			t.Fatalf("ResolveHits =\n%+v\nwant\n%+v", hits, want)
		}
		if got, err := s.ResolveHits(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("ResolveHits(nil) = %v, %v", got, err)
		}
	})
}

// Benchmarks on SQLite at benchNodes nodes: index writes and the two searches.

const benchNodes = 100_000

var benchWords = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 5000)
	for i := range words {
		b := make([]byte, 3+r.IntN(6))
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(b)
	}
	return words
}()

// benchText returns about n characters of words drawn with a skew (low-numbered words are
// common), like natural text.
func benchText(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[int(float64(len(benchWords))*r.Float64()*r.Float64())])
	}
	return b.String()
}

// benchCorpus is one document's segments and their nodes: 10 keywords and ~500 characters of
// terms each, no vectors (an economy dataset).
func benchCorpus(r *rand.Rand, ds Dataset, doc Document, n int) ([]Segment, []IndexNode) {
	segs := make([]Segment, n)
	nodes := make([]IndexNode, n)
	for i := range segs {
		text := benchText(r, 500)
		kws := strings.Fields(benchText(r, 60))
		if len(kws) > 10 {
			kws = kws[:10]
		}
		segs[i] = Segment{ID: NewID(), DatasetID: ds.ID, DocumentID: doc.ID, Generation: 1, Position: i + 1, Content: text,
			Keywords: kws, IndexNodeID: NewID(), Enabled: true, Status: SegmentIndexing}
		nodes[i] = IndexNode{NodeID: segs[i].IndexNodeID, DatasetID: ds.ID, DocumentID: doc.ID, SegmentID: segs[i].ID, Generation: 1, Keywords: kws, Terms: text}
	}
	return segs, nodes
}

func openBenchStore(b *testing.B) *Store {
	b.Helper()
	s := openEngine(b, storetest.NewEngine(b, storetest.SQLite), true)
	return s
}

// BenchmarkIndexNodes indexes batches of 1000 nodes into a dataset that already holds
// benchNodes; nodes/s is the figure to watch (target ≥ 20k).
func BenchmarkIndexNodes(b *testing.B) {
	if testing.Short() {
		b.Skip("slow setup")
	}
	ctx := b.Context()
	s := openBenchStore(b)
	ds, err := s.CreateDataset(ctx, Dataset{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const batch = 1000
	load := func(n int) []IndexNode {
		doc, err := s.CreateDocument(ctx, Document{DatasetID: ds.ID, Name: "doc", Enabled: true, IndexingStatus: IndexingIndexing, Generation: 1, IndexingGeneration: 1})
		if err != nil {
			b.Fatal(err)
		}
		segs, nodes := benchCorpus(r, ds, doc, n)
		if err := s.AddSegments(ctx, segs, nil); err != nil {
			b.Fatal(err)
		}
		return nodes
	}
	for range benchNodes / 10_000 {
		if err := s.IndexNodes(ctx, load(10_000), time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var elapsed time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		nodes := load(batch)
		b.StartTimer()
		start := time.Now()
		if err := s.IndexNodes(ctx, nodes, time.Now()); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		n += batch
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "nodes/s")
}

// benchSearchStore is a SQLite store holding benchNodes searchable nodes in 10 documents: 9 in
// dataset big, 1 in dataset small. It is built once per benchmark.
func benchSearchStore(b *testing.B) (s *Store, big, small Dataset) {
	b.Helper()
	if testing.Short() {
		b.Skip("slow setup")
	}
	ctx := b.Context()
	s = openBenchStore(b)
	r := rand.New(rand.NewPCG(5, 6))
	for i, name := range []string{"big", "small"} {
		ds, err := s.CreateDataset(ctx, Dataset{Name: name})
		if err != nil {
			b.Fatal(err)
		}
		for range 9 - 8*i {
			doc, err := s.CreateDocument(ctx, Document{DatasetID: ds.ID, Name: "doc", Enabled: true, IndexingStatus: IndexingCompleted, Generation: 1, IndexingGeneration: 1})
			if err != nil {
				b.Fatal(err)
			}
			segs, nodes := benchCorpus(r, ds, doc, benchNodes/10)
			if err := s.AddSegments(ctx, segs, nil); err != nil {
				b.Fatal(err)
			}
			if err := s.IndexNodes(ctx, nodes, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		if i == 0 {
			big = ds
		} else {
			small = ds
		}
	}
	return s, big, small
}

// benchSearch runs search over three scopes: both datasets (every node: the case of one
// dataset, where no scoping is needed), big alone (90% of the nodes) and small alone (10%).
func benchSearch(b *testing.B, search func(s *Store, datasets, words []string) error) {
	s, big, small := benchSearchStore(b)
	qs := benchQueries()
	for _, sc := range []struct {
		name     string
		datasets []string
	}{
		{"all-100k", []string{big.ID, small.ID}},
		{"scoped-90k", []string{big.ID}},
		{"scoped-10k", []string{small.ID}},
	} {
		b.Run(sc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := search(s, sc.datasets, qs[i%len(qs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// benchQueries are queries of 4 words: two common, one middling, one rare.
func benchQueries() [][]string {
	r := rand.New(rand.NewPCG(7, 8))
	qs := make([][]string, 64)
	for i := range qs {
		qs[i] = []string{benchWords[r.IntN(20)], benchWords[r.IntN(100)], benchWords[100+r.IntN(900)], benchWords[1000+r.IntN(4000)]}
	}
	return qs
}

// BenchmarkSearchFullText ranks 4-term queries (two common words, one middling, one rare) by
// BM25 among benchNodes nodes of ~500 characters, top 10.
func BenchmarkSearchFullText(b *testing.B) {
	benchSearch(b, func(s *Store, datasets, words []string) error {
		_, err := s.SearchFullText(b.Context(), datasets, words, 10)
		return err
	})
}

// BenchmarkSearchKeywords ranks nodes by how many of 4 keywords they hold (10 keywords each),
// top 10.
func BenchmarkSearchKeywords(b *testing.B) {
	benchSearch(b, func(s *Store, datasets, words []string) error {
		_, err := s.SearchKeywords(b.Context(), datasets, words, 10)
		return err
	})
}

// BenchmarkSearchKeywordsCapitalized is BenchmarkSearchKeywords with each query word capitalized,
// as a query's first word is: such a keyword is looked up folded and, for nodes indexed before
// keywords were folded, as given.
func BenchmarkSearchKeywordsCapitalized(b *testing.B) {
	benchSearch(b, func(s *Store, datasets, words []string) error {
		caps := make([]string, len(words))
		for i, w := range words {
			caps[i] = strings.ToUpper(w[:1]) + w[1:]
		}
		_, err := s.SearchKeywords(b.Context(), datasets, caps, 10)
		return err
	})
}
