package store

import (
	"encoding/hex"
	"slices"
	"testing"
)

func TestFoldKeyword(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"penguins": "penguins", "Penguins": "penguins", "PenGUINS": "penguins", "e-Mail_2": "e-mail_2",
		"STRASSE": "strasse", "Straße": "strasse", "ΟΔΟΣ": "οδοσ", "οδος": "οδοσ", "Ёлка": "ёлка",
		"Ǆemal": "ǆemal", "中文检索": "中文检索", "カタカナ": "カタカナ", "": "",
	} {
		if got := foldKeyword(in); got != want {
			t.Errorf("foldKeyword(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSearchKeywordsIgnoresCase: keyword search matches whatever the case of the keyword and of
// the query, in every script with case, on both engines; a node holding a keyword in two cases
// counts it once. A node indexed before keywords were folded still matches its keywords as
// they were (case sensitively).
func TestSearchKeywordsIgnoresCase(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "kb")
		doc := kbDocument(t, s, ds.ID, "doc", nil)
		segs := kbIndex(t, s, doc, 1, "Penguins swim", "STRASSE Berlin", "ΟΔΟΣ Αθήνα", "中文 检索", "penguins Penguins", "Legacy node")
		search := func(kws ...string) []NodeHit {
			t.Helper()
			hits, err := s.SearchKeywords(ctx, []string{ds.ID}, kws, 10)
			if err != nil {
				t.Fatal(err)
			}
			return hits
		}
		both := nodeIDs(segs[0], segs[4])
		slices.Sort(both)
		for _, q := range []string{"penguins", "PENGUINS", "Penguins"} {
			hits := search(q)
			got := hitIDs(hits)
			slices.Sort(got)
			if !slices.Equal(got, both) || hits[0].Score != 1 || hits[1].Score != 1 {
				t.Errorf("%q: %v (%v), want %v", q, got, hits, both)
			}
		}
		for q, seg := range map[string]Segment{"straße": segs[1], "berlin": segs[1], "οδος": segs[2], "αθήνα": segs[2], "中文": segs[3]} {
			if got := hitIDs(search(q)); !slices.Equal(got, nodeIDs(seg)) {
				t.Errorf("%q: %v, want %v", q, got, nodeIDs(seg))
			}
		}
		// Two query keywords, one of them in two cases: scores count folded keywords.
		if hits := search("Penguins", "penguins", "swim"); len(hits) != 2 || hits[0].NodeID != segs[0].IndexNodeID || hits[0].Score != 1 || hits[1].Score != 0.5 {
			t.Errorf("two keywords: %+v", hits)
		}

		// The "Legacy" keyword as an index written before folding holds it.
		node := segs[5].IndexNodeID
		if s.dialect == DialectPostgres {
			if _, err := s.conn().ExecContext(ctx, "UPDATE index_keywords SET keyword = 'Legacy' WHERE keyword = 'legacy' AND node_id = $1", node); err != nil {
				t.Fatal(err)
			}
		} else {
			var rid int64
			if err := s.conn().QueryRowContext(ctx, "SELECT rid FROM index_nodes WHERE node_id = ?", node).Scan(&rid); err != nil {
				t.Fatal(err)
			}
			if _, err := s.conn().ExecContext(ctx, "DELETE FROM index_fts WHERE rowid = ?", rid); err != nil {
				t.Fatal(err)
			}
			if _, err := s.conn().ExecContext(ctx, "INSERT INTO index_fts (rowid, terms, keywords, dataset) VALUES (?, '', ?, ?)",
				rid, hex.EncodeToString([]byte("Legacy"))+" "+hex.EncodeToString([]byte("node")), datasetToken(ds.ID)); err != nil {
				t.Fatal(err)
			}
		}
		if got := hitIDs(search("Legacy")); !slices.Equal(got, []string{node}) {
			t.Errorf("legacy keyword as it was: %v", got)
		}
		if hits := search("Legacy", "node"); len(hits) != 1 || hits[0].Score != 1 {
			t.Errorf("legacy keyword with another: %+v", hits)
		}
	})
}

// BenchmarkFoldKeyword folds a mix of keywords as an English and a Greek text give them: most
// lower case already, some capitalized, one non-ASCII.
func BenchmarkFoldKeyword(b *testing.B) {
	kws := []string{"penguins", "swim", "Antarctica", "colony", "emperor", "ice", "Krill", "breeding", "winter", "Πιγκουίνοι"}
	b.ReportAllocs()
	for b.Loop() {
		for _, kw := range kws {
			_ = foldKeyword(kw)
		}
	}
}
