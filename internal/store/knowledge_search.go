package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// searchableFrom joins an index node (alias n) to its segment (s) and document (d), and
// searchableWhere keeps the nodes a search may return (see [SearchableNode]): the segment is
// completed, enabled and of the generation the document serves, and the document is enabled
// and not archived. A child chunk's node names its parent segment, whose state decides.
const (
	searchableFrom = ` FROM index_nodes n
JOIN document_segments s ON s.id = n.segment_id
JOIN documents d ON d.id = n.document_id`
	searchableWhere = `s.status = 'completed' AND s.enabled AND s.generation = d.generation AND d.enabled AND NOT d.archived`
)

// oneChunk returns the distinct non-empty values of list as one IN list, or an error when there
// are more than inChunk of them.
func oneChunk(what string, list []string) ([]string, error) {
	var kept []string
	for _, v := range list {
		if v != "" {
			kept = append(kept, v)
		}
	}
	cs := chunks(kept)
	switch len(cs) {
	case 0:
		return nil, nil
	case 1:
		return cs[0], nil
	default:
		return nil, fmt.Errorf("more than %d %s", inChunk, what)
	}
}

// SearchKeywords returns up to topK searchable nodes of the datasets mapped to any of the
// keywords, those matching the most keywords first. Keywords match whatever their case (both
// sides are case folded, see foldKeyword). Ties go by node id on PostgreSQL and by index order
// on SQLite (see rankSQLite). Score is the share of the distinct (folded) keywords the node
// matches, in (0, 1]. No datasets, no keywords or a topK below 1 give no hits.
//
// Nodes indexed before keywords were folded hold their keywords as extracted; a keyword with
// upper-case letters is looked up that way too, so such nodes match as they always did, case
// sensitively, until their document is indexed again.
func (s *Store) SearchKeywords(ctx context.Context, datasetIDs, keywords []string, topK int) ([]NodeHit, error) {
	datasets, err := oneChunk("datasets", datasetIDs)
	if err != nil {
		return nil, fmt.Errorf("store: search keywords: %w", err)
	}
	folded := make([]string, len(keywords))
	var legacy [][2]string // [folded keyword, keyword as given] where they differ
	for i, kw := range keywords {
		if folded[i] = foldKeyword(kw); folded[i] != kw {
			legacy = append(legacy, [2]string{folded[i], kw})
		}
	}
	kws, err := oneChunk("keywords", folded)
	if err != nil {
		return nil, fmt.Errorf("store: search keywords: %w", err)
	}
	if len(datasets) == 0 || len(kws) == 0 || topK < 1 {
		return nil, nil
	}
	groups := len(kws)
	// The lookups: the folded keywords, then the legacy forms. A token no node holds costs one
	// probe of the index, so on an index written after folding the legacy forms cost next to
	// nothing. A node counts once per lookup it matches; only a node indexed before folding that
	// holds one keyword in two cases can match two lookups of one keyword, and its score is
	// capped at 1.
	for _, l := range legacy {
		if l[0] != "" && !slices.Contains(kws, l[1]) {
			kws = append(kws, l[1])
		}
	}
	if kws, err = oneChunk("keywords", kws); err != nil {
		return nil, fmt.Errorf("store: search keywords: %w", err)
	}
	var hits []NodeHit
	if s.dialect == DialectSQLite {
		// One FTS5 lookup per keyword token within the datasets; a node is counted once per
		// token it holds. json_each must drive the join (CROSS JOIN fixes the order): index_fts
		// can only be searched with a MATCH value in hand. The key is -count, so that lower
		// ranks first as with bm25.
		scope, err := s.fts5Scope(ctx, datasets)
		if err != nil {
			return nil, fmt.Errorf("store: search keywords: %w", err)
		}
		if scope.empty {
			return nil, nil
		}
		matches := make([]string, len(kws))
		for i, kw := range kws {
			matches[i] = scope.match + `keywords : "` + keywordToken(kw) + `"`
		}
		text, err := json.Marshal(matches)
		if err != nil {
			return nil, fmt.Errorf("store: search keywords: %w", err)
		}
		hits, err = s.rankSQLite(ctx, `SELECT index_fts.rowid, -COUNT(*) AS k FROM json_each(?) q
CROSS JOIN index_fts ON index_fts MATCH q.value AND index_fts.rowid BETWEEN ? AND ?
GROUP BY index_fts.rowid ORDER BY k, index_fts.rowid LIMIT ?`, []any{string(text), scope.lo, scope.hi}, datasets, topK)
		if err != nil {
			return nil, fmt.Errorf("store: search keywords: %w", err)
		}
		for i := range hits {
			hits[i].Score = -hits[i].Score
		}
	} else {
		dph, dargs := inList(datasets)
		kph, kargs := inList(kws)
		hits, err = s.rankPostgres(ctx, `SELECT node_id, COUNT(*) AS matched FROM index_keywords
WHERE dataset_id IN (`+dph+`) AND keyword IN (`+kph+`)
GROUP BY node_id ORDER BY matched DESC, node_id LIMIT ?`, append(dargs, kargs...), datasets, topK)
		if err != nil {
			return nil, fmt.Errorf("store: search keywords: %w", err)
		}
	}
	for i := range hits {
		hits[i].Score = min(hits[i].Score, float64(groups)) / float64(groups)
	}
	return hits, nil
}

// SearchFullText returns up to topK searchable nodes of the datasets whose terms contain any of
// the given terms, best BM25-style rank first (ties as for [Store.SearchKeywords]), with scores
// in (0, 1). Each term is matched literally (a term the tokenizer splits, such as "e-mail",
// must match as a phrase); terms without a letter or digit are ignored. No datasets, no terms or
// a topK below 1 give no hits.
//
// Common terms (in commonTermNodes nodes or more) are left out when a rarer one is given (see
// dropCommonTerms). When every term is common, the nodes holding all of them rank; when fewer
// than topK do, those holding all but the most common term, and so on (see searchCommon).
//
// SQLite ranks with FTS5's bm25(), mapped to s/(1+s) where s = -bm25 ≥ 0; PostgreSQL with
// ts_rank(…, 32), which is already r/(1+r). The two engines' scores are comparable in order of
// magnitude, not equal.
func (s *Store) SearchFullText(ctx context.Context, datasetIDs, terms []string, topK int) ([]NodeHit, error) {
	datasets, err := oneChunk("datasets", datasetIDs)
	if err != nil {
		return nil, fmt.Errorf("store: search full text: %w", err)
	}
	var kept []string
	for _, t := range terms {
		if strings.IndexFunc(t, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0 {
			kept = append(kept, t)
		}
	}
	kept, err = oneChunk("terms", kept)
	if err != nil {
		return nil, fmt.Errorf("store: search full text: %w", err)
	}
	if len(datasets) == 0 || len(kept) == 0 || topK < 1 {
		return nil, nil
	}
	var scope ftsScope
	if s.dialect == DialectSQLite {
		if scope, err = s.fts5Scope(ctx, datasets); err != nil {
			return nil, fmt.Errorf("store: search full text: %w", err)
		}
		if scope.empty {
			return nil, nil
		}
	}
	rare, freq, err := s.dropCommonTerms(ctx, scope, kept)
	if err != nil {
		return nil, fmt.Errorf("store: search full text: %w", err)
	}
	var hits []NodeHit
	if len(rare) == 0 {
		hits, err = s.searchCommon(ctx, scope, datasets, kept, freq, topK)
	} else {
		hits, err = s.searchTerms(ctx, scope, datasets, rare, false, topK)
	}
	if err != nil {
		return nil, fmt.Errorf("store: search full text: %w", err)
	}
	return hits, nil
}

// searchTerms ranks the searchable nodes of the datasets holding any of terms (all of them
// when all is set) by BM25 (ts_rank on PostgreSQL), scores mapped to 0..1.
func (s *Store) searchTerms(ctx context.Context, scope ftsScope, datasets, terms []string, all bool, topK int) ([]NodeHit, error) {
	if s.dialect == DialectSQLite {
		match := fts5Terms(terms)
		if all {
			match = strings.ReplaceAll(match, `" OR "`, `" AND "`)
		}
		hits, err := s.rankSQLite(ctx, `SELECT rowid, bm25(index_fts, 1.0, 0.0, 0.0) AS k FROM index_fts
WHERE index_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY k, rowid LIMIT ?`, []any{scope.match + match, scope.lo, scope.hi}, datasets, topK)
		if err != nil {
			return nil, err
		}
		for i := range hits {
			sc := max(-hits[i].Score, 0)
			hits[i].Score = sc / (1 + sc)
		}
		return hits, nil
	}
	// Ranking reads each match's tsvector, so it runs on index_nodes alone and only the best
	// candidates are checked for searchability. "dataset_id || ''" keeps the planner on the GIN
	// index: with the dataset's B-tree index it filters every row of the dataset by tsv.
	dph, dargs := inList(datasets)
	rank := `SELECT node_id, ts_rank(tsv, to_tsquery('simple', ?), 32) AS r FROM index_nodes
WHERE tsv @@ to_tsquery('simple', ?) AND (dataset_id || '') IN (` + dph + `)
ORDER BY r DESC, node_id LIMIT ?`
	q := tsQuery(terms)
	if all {
		q = strings.ReplaceAll(q, "' | '", "' & '")
	} else if pairs, ok := tsPairs(terms); ok {
		// When topK searchable nodes hold two of the terms, they are the answer (see tsPairs).
		hits, err := s.rankPostgres(ctx, rank, append([]any{q, pairs}, dargs...), datasets, topK)
		if err != nil || len(hits) >= topK {
			return hits, err
		}
	}
	return s.rankPostgres(ctx, rank, append([]any{q, q}, dargs...), datasets, topK)
}

// tsPairs returns a tsquery matching the nodes that hold at least two of terms, when each term
// is one lexeme of its own (ASCII letters and digits, which PostgreSQL's parser keeps whole)
// and there are few enough of them to pair. ts_rank of an OR query adds, for each query term a
// node holds, between 0.1/1.645 (one occurrence) and just under 0.1 (0.1/i² for its i-th
// occurrence, over π²/6), then divides by the number of terms: a node holding two of the terms
// outranks every node holding one. So if topK searchable nodes hold two, they are the answer,
// with the scores ranking every node holding any term gives, and ranking them alone spares the
// tsvector of every node holding just one (at 100k nodes, a few dozen nodes instead of
// thousands).
func tsPairs(terms []string) (string, bool) {
	if len(terms) < 2 || len(terms) > 16 {
		return "", false
	}
	for _, t := range terms {
		if len(t) > 64 || strings.IndexFunc(t, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') }) >= 0 {
			return "", false
		}
	}
	var b strings.Builder
	for i, a := range terms {
		for _, c := range terms[i+1:] {
			if b.Len() > 0 {
				b.WriteString(" | ")
			}
			b.WriteString("'" + a + "' & '" + c + "'")
		}
	}
	return b.String(), true
}

// searchCommon ranks the searchable nodes of the datasets holding every one of terms, all of
// them common, freq[i] being an estimate of the nodes holding terms[i]. When fewer than topK
// are found it leaves out the most common term and ranks the nodes holding all the others,
// then the two most common, and so on down to the rarest term alone; the nodes holding more of
// the terms are among each round's. Ranking the nodes holding any of the terms instead, as for
// rare terms, meant ranking tens of thousands of nodes (a third of the index for five common
// terms at 100k nodes: 100 ms on SQLite, 250 ms on PostgreSQL) to order the few holding most.
//
// A round whose terms fewer than topK nodes hold (searchable or not) cannot succeed, so it is
// skipped after a count that stops at topK, without ranking: the rounds' nodes only grow as
// terms are left out, so a binary search finds the first round worth ranking. Should even the
// rarest term alone give fewer than topK searchable nodes, the nodes holding any term rank, as
// for rare terms.
func (s *Store) searchCommon(ctx context.Context, scope ftsScope, datasets, terms []string, freq []float64, topK int) ([]NodeHit, error) {
	rarest := make([]int, len(terms))
	for i := range rarest {
		rarest[i] = i
	}
	slices.SortStableFunc(rarest, func(a, b int) int { return cmp.Compare(freq[a], freq[b]) })
	// keep returns the n rarest terms in the query's order, the order ranking adds up their
	// weights in.
	keep := func(n int) []string {
		in := make([]bool, len(terms))
		for _, i := range rarest[:n] {
			in[i] = true
		}
		var out []string
		for i, t := range terms {
			if in[i] {
				out = append(out, t)
			}
		}
		return out
	}
	enough := func(n int) (bool, error) {
		c, err := s.countHolding(ctx, scope, datasets, keep(n), topK)
		return c >= topK, err
	}
	// Every term first, as most queries of common terms end there; then the binary search.
	lo, hi := 1, len(terms)
	ok, err := enough(hi)
	if err != nil {
		return nil, err
	}
	if !ok {
		for hi--; lo < hi; {
			mid := (lo + hi + 1) / 2
			if ok, err = enough(mid); err != nil {
				return nil, err
			}
			if ok {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
	}
	for n := hi; n >= 1; n-- {
		if hits, err := s.searchTerms(ctx, scope, datasets, keep(n), true, topK); err != nil || len(hits) >= topK {
			return hits, err
		}
	}
	return s.searchTerms(ctx, scope, datasets, terms, false, topK)
}

// countHolding returns how many nodes of the datasets (searchable or not) hold every one of
// terms, counting no further than limit.
func (s *Store) countHolding(ctx context.Context, scope ftsScope, datasets, terms []string, limit int) (int, error) {
	var n int
	if s.dialect == DialectSQLite {
		match := strings.ReplaceAll(fts5Terms(terms), `" OR "`, `" AND "`)
		err := s.conn().QueryRowContext(ctx, "SELECT count(*) FROM (SELECT rowid FROM index_fts WHERE index_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT ?)",
			scope.match+match, scope.lo, scope.hi, limit).Scan(&n)
		return n, err
	}
	dph, dargs := inList(datasets)
	q := strings.ReplaceAll(tsQuery(terms), "' | '", "' & '")
	err := s.conn().QueryRowContext(ctx, s.Rebind(`SELECT count(*) FROM (SELECT 1 FROM index_nodes
WHERE tsv @@ to_tsquery('simple', ?) AND (dataset_id || '') IN (`+dph+`) LIMIT ?) c`), append(append([]any{q}, dargs...), limit)...).Scan(&n)
	return n, err
}

// lexemeStats caches the common lexemes of index_nodes.tsv on PostgreSQL, with the rows each
// is estimated in.
type lexemeStats struct {
	common  map[string]float64
	fetched time.Time
}

// lexemeStatsTTL is how long the common lexemes are trusted before they are read again.
const lexemeStatsTTL = time.Minute

// commonLexemes returns the lexemes that PostgreSQL's column statistics estimate in at least
// commonTermNodes rows, with that estimate, read at most once a lexemeStatsTTL. Before the first
// ANALYZE there are none, and every term counts as rare.
func (s *Store) commonLexemes(ctx context.Context) (map[string]float64, error) {
	if st := s.lexemes.Load(); st != nil && time.Since(st.fetched) < lexemeStatsTTL {
		return st.common, nil
	}
	var elems, freqs sql.NullString
	var rows float64
	err := s.conn().QueryRowContext(ctx, `SELECT array_to_json(st.most_common_elems::text::text[])::text,
array_to_json(st.most_common_elem_freqs)::text, c.reltuples
FROM pg_class c LEFT JOIN pg_stats st ON st.schemaname = current_schema() AND st.tablename = c.relname AND st.attname = 'tsv'
WHERE c.oid = 'index_nodes'::regclass`).Scan(&elems, &freqs, &rows)
	if err != nil {
		return nil, err
	}
	common := map[string]float64{}
	var es []string
	var fs []float64
	if elems.Valid && freqs.Valid && json.Unmarshal([]byte(elems.String), &es) == nil && json.Unmarshal([]byte(freqs.String), &fs) == nil {
		for i, e := range es {
			if i < len(fs) && fs[i]*rows >= float64(s.commonNodes()) {
				common[e] = fs[i] * rows
			}
		}
	}
	s.lexemes.Store(&lexemeStats{common: common, fetched: time.Now()})
	return common, nil
}

// rankPostgres is rankSQLite's two stages on PostgreSQL: rank (a query taking args then a
// limit, returning node_id and score, best first) over the index tables alone, then keep the
// candidates that are searchable nodes of the datasets, ranking again with eight times the
// candidates when too few survive and more matches exist.
func (s *Store) rankPostgres(ctx context.Context, rank string, args []any, datasets []string, topK int) ([]NodeHit, error) {
	dph, dargs := inList(datasets)
	for limit := max(4*topK, 32); ; limit *= 8 {
		rows, err := s.conn().QueryContext(ctx, s.Rebind(rank), append(slices.Clone(args), limit+1)...)
		if err != nil {
			return nil, err
		}
		cands, err := collect(rows, func(r scanner) (NodeHit, error) {
			var h NodeHit
			return h, r.Scan(&h.NodeID, &h.Score)
		})
		if err != nil {
			return nil, err
		}
		more := len(cands) > limit
		if more {
			cands = cands[:limit]
		}
		if len(cands) == 0 {
			return nil, nil
		}
		ids := make([]string, len(cands))
		for i, c := range cands {
			ids[i] = c.NodeID
		}
		nph, nargs := inList(ids)
		rows, err = s.conn().QueryContext(ctx, s.Rebind(`SELECT n.node_id`+searchableFrom+`
WHERE n.node_id IN (`+nph+`) AND n.dataset_id IN (`+dph+`) AND `+searchableWhere), append(nargs, dargs...)...)
		if err != nil {
			return nil, err
		}
		ok, err := collect(rows, func(r scanner) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		if err != nil {
			return nil, err
		}
		keep := make(map[string]bool, len(ok))
		for _, id := range ok {
			keep[id] = true
		}
		var hits []NodeHit
		for _, c := range cands {
			if keep[c.NodeID] && len(hits) < topK {
				hits = append(hits, c)
			}
		}
		if len(hits) >= topK || !more {
			return hits, nil
		}
	}
}

// commonTermNodes is how many matching nodes make a query term common: such terms (stop words,
// in real text) weigh little in BM25 but make ranking visit most of the index.
const commonTermNodes = 2000

// commonNodes is commonTermNodes, or the lower threshold a test set.
func (s *Store) commonNodes() int {
	if s.commonTerms > 0 {
		return s.commonTerms
	}
	return commonTermNodes
}

// dropCommonTerms returns the query terms that match fewer than commonTermNodes nodes of the
// datasets, or, when there are none and more than one term, no terms and an estimate of how
// many nodes each term matches. The rare terms find the same best matches as all of them at a
// fraction of the cost, as a search engine's common-terms query does; when every term is
// common the caller ranks the nodes holding most of them (searchCommon). A single term is
// returned as it is.
//
// On SQLite counting stops at the threshold, so a common term costs a bounded walk of its
// matches; the estimate for a common term is the scope's nodes times the share of them the walk
// covered before it stopped. On PostgreSQL a GIN scan builds the whole bitmap of a term however
// few rows are wanted, so counting is as dear as searching; PostgreSQL's own statistics on the
// column (most common lexemes and their frequencies, kept by ANALYZE) say which terms are
// common, and how common, instead.
func (s *Store) dropCommonTerms(ctx context.Context, scope ftsScope, terms []string) (rare []string, freq []float64, err error) {
	if len(terms) < 2 {
		return terms, nil, nil
	}
	freq = make([]float64, len(terms))
	if s.dialect == DialectPostgres {
		common, err := s.commonLexemes(ctx)
		if err != nil {
			return nil, nil, err
		}
		for i, t := range terms {
			if freq[i] = common[t]; freq[i] == 0 {
				rare = append(rare, t)
			}
		}
	}
	for i, t := range terms {
		if s.dialect != DialectSQLite {
			break
		}
		var (
			n    int
			last sql.NullInt64
		)
		err := s.conn().QueryRowContext(ctx, "SELECT count(*), max(rowid) FROM (SELECT rowid FROM index_fts WHERE index_fts MATCH ? AND rowid BETWEEN ? AND ? LIMIT ?)",
			scope.match+fts5Terms([]string{t}), scope.lo, scope.hi, s.commonNodes()).Scan(&n, &last)
		if err != nil {
			return nil, nil, err
		}
		if n < s.commonNodes() {
			rare = append(rare, t)
			continue
		}
		freq[i] = float64(n) * float64(scope.hi-scope.lo+1) / float64(last.Int64-scope.lo+1)
	}
	if len(rare) > 0 {
		freq = nil
	}
	return rare, freq, nil
}

// rankSQLite runs a SQLite search in two stages and returns up to topK hits ordered by key
// (lower first), ties in index order (rid), with Score set to the key.
//
// Stage one, rank, is a query over index_fts alone taking args then a limit and returning
// (rowid, key) ordered by key then rowid: it ranks every match, which is cheap in FTS5. Stage two
// resolves the best candidates to nodes, keeping only searchable nodes of the datasets: a join
// of three tables per row, which done for every match cost most of a search (at 100k nodes, a
// four-term full-text query matching 20k of them took 130 ms in one query and 45 ms in two; a
// keyword query 24 ms and 4 ms). When fewer than topK candidates survive and more matches
// exist, it ranks again with eight times the candidates, so the result is the one-query result.
//
// Ties are broken by rid, not node id as on PostgreSQL: stage one sees only rids, and ties are
// common in keyword search (counts are small integers), so ordering them by node id would mean
// resolving every tied match. rid order is the order nodes were indexed, which for ids made by
// NewID is nearly always id order.
func (s *Store) rankSQLite(ctx context.Context, rank string, args []any, datasets []string, topK int) ([]NodeHit, error) {
	type candidate struct {
		rid int64
		key float64
	}
	dph, dargs := inList(datasets)
	resolve := `SELECT n.rid, n.node_id` + searchableFrom + `
WHERE n.rid IN (SELECT value FROM json_each(?)) AND n.dataset_id IN (` + dph + `) AND ` + searchableWhere
	for limit := max(4*topK, 32); ; limit *= 8 {
		rows, err := s.conn().QueryContext(ctx, rank, append(slices.Clone(args), limit+1)...)
		if err != nil {
			return nil, err
		}
		cands, err := collect(rows, func(r scanner) (candidate, error) {
			var c candidate
			return c, r.Scan(&c.rid, &c.key)
		})
		if err != nil {
			return nil, err
		}
		cut := len(cands) > limit
		if cut {
			cands = cands[:limit]
		}
		if len(cands) == 0 {
			return nil, nil
		}
		ids := make([]byte, 0, 12*len(cands))
		ids = append(ids, '[')
		for i, c := range cands {
			if i > 0 {
				ids = append(ids, ',')
			}
			ids = strconv.AppendInt(ids, c.rid, 10)
		}
		ids = append(ids, ']')
		rows, err = s.conn().QueryContext(ctx, resolve, append([]any{string(ids)}, dargs...)...)
		if err != nil {
			return nil, err
		}
		nodeOf := make(map[int64]string, len(cands))
		err = eachRow(rows, func(r scanner) error {
			var (
				rid int64
				id  string
			)
			err := r.Scan(&rid, &id)
			nodeOf[rid] = id
			return err
		})
		if err != nil {
			return nil, err
		}
		if cut && len(nodeOf) < topK {
			continue
		}
		hits := make([]NodeHit, 0, min(topK, len(nodeOf)))
		for _, c := range cands {
			if id, ok := nodeOf[c.rid]; ok && len(hits) < topK {
				hits = append(hits, NodeHit{NodeID: id, Score: c.key})
			}
		}
		return hits, nil
	}
}

// fts5Terms is an FTS5 MATCH expression for any of terms in the terms column: each term a
// string (a phrase), with embedded double quotes doubled, so no term is read as an operator or
// column filter.
func fts5Terms(terms []string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return "terms : (" + strings.Join(parts, " OR ") + ")"
}

// ftsScope keeps a SQLite search to the index_fts rows of its datasets: rowids lo to hi, the
// least and greatest rid of the datasets' nodes, and, when nodes of other datasets lie between
// them, match, the start of a MATCH expression naming the datasets' tokens ("dataset : (…) AND
// "). empty means the datasets have no nodes.
type ftsScope struct {
	match  string
	lo, hi int64
	empty  bool
}

// fts5Scope returns the scope of a search of the datasets. A rowid range costs FTS5 nothing (it
// starts and stops each term's doclist walk there), but matching the dataset token walks the
// token's doclist, every row of the datasets, in step with the terms' (at 100k nodes it took
// three times as long as the rest of a full-text search, and doubled a keyword search). Nodes
// get rids in the order they are indexed, so a dataset's nodes usually form a run of their own,
// and the token is matched only when another dataset's nodes interleave with them. Either way
// the second stage of rankSQLite filters by dataset, so a dataset indexed meanwhile changes
// nothing.
func (s *Store) fts5Scope(ctx context.Context, datasets []string) (ftsScope, error) {
	ids, err := json.Marshal(datasets)
	if err != nil {
		return ftsScope{}, err
	}
	// One index seek per dataset for each bound (a min or max over an IN list would read every
	// entry of the datasets), and one per other dataset for a node between them.
	var lo, hi sql.NullInt64
	err = s.conn().QueryRowContext(ctx, `SELECT min(lo), max(hi) FROM (SELECT
(SELECT min(rid) FROM index_nodes WHERE dataset_id = j.value) AS lo,
(SELECT max(rid) FROM index_nodes WHERE dataset_id = j.value) AS hi FROM json_each(?) j)`, string(ids)).Scan(&lo, &hi)
	if err != nil {
		return ftsScope{}, err
	}
	if !lo.Valid {
		return ftsScope{empty: true}, nil
	}
	sc := ftsScope{lo: lo.Int64, hi: hi.Int64}
	var mixed bool
	err = s.conn().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM datasets d WHERE d.id NOT IN (SELECT value FROM json_each(?))
AND EXISTS (SELECT 1 FROM index_nodes n WHERE n.dataset_id = d.id AND n.rid BETWEEN ? AND ?))`, string(ids), sc.lo, sc.hi).Scan(&mixed)
	if err != nil || !mixed {
		return sc, err
	}
	parts := make([]string, len(datasets))
	for i, id := range datasets {
		parts[i] = `"` + datasetToken(id) + `"`
	}
	sc.match = "dataset : (" + strings.Join(parts, " OR ") + ") AND "
	return sc, nil
}

// tsQuery is a to_tsquery expression for any of terms: each a quoted lexeme with its quotes and
// backslashes doubled, so no term is read as an operator, weight or prefix mark. to_tsquery then
// normalises each with the 'simple' configuration (a term its parser splits becomes a phrase).
func tsQuery(terms []string) string {
	r := strings.NewReplacer(`'`, `''`, `\`, `\\`)
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = "'" + r.Replace(t) + "'"
	}
	return strings.Join(parts, " | ")
}

// IndexVersion returns the dataset's index version, which changes whenever its searchable set
// of nodes or their vectors change. An unknown dataset gives an error wrapping [ErrNotFound].
func (s *Store) IndexVersion(ctx context.Context, datasetID string) (int64, error) {
	var v int64
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT index_version FROM datasets WHERE id = ?"), datasetID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: index version of dataset %s: %w", datasetID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: index version of dataset %s: %w", datasetID, err)
	}
	return v, nil
}

// SearchableVectors returns the dataset's searchable nodes that have a vector, in no particular
// order, with the index version they are current for: both are read from one snapshot, so a
// cache keyed by the version never holds another version's nodes. An unknown dataset gives an
// error wrapping [ErrNotFound].
func (s *Store) SearchableVectors(ctx context.Context, datasetID string) (version int64, nodes []SearchableNode, err error) {
	err = s.snapshot(ctx, func(q execer) error {
		err := q.QueryRowContext(ctx, s.Rebind("SELECT index_version FROM datasets WHERE id = ?"), datasetID).Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, s.Rebind("SELECT n.node_id, n.document_id, n.segment_id, v.vector"+searchableFrom+`
JOIN index_vectors v ON v.node_id = n.node_id
WHERE n.dataset_id = ? AND `+searchableWhere), datasetID)
		if err != nil {
			return err
		}
		nodes, err = collect(rows, func(r scanner) (SearchableNode, error) {
			var (
				n   SearchableNode
				raw []byte
			)
			if err := r.Scan(&n.NodeID, &n.DocumentID, &n.SegmentID, &raw); err != nil {
				return SearchableNode{}, err
			}
			n.Vector, err = decodeVector(raw)
			return n, err
		})
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("store: searchable vectors of dataset %s: %w", datasetID, err)
	}
	return version, nodes, nil
}

// NodeVectors returns the stored vector of each of the given nodes that has one, searchable or
// not.
func (s *Store) NodeVectors(ctx context.Context, nodeIDs []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(nodeIDs))
	for _, chunk := range chunks(nodeIDs) {
		ph, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT node_id, vector FROM index_vectors WHERE node_id IN ("+ph+")"), args...)
		if err != nil {
			return nil, fmt.Errorf("store: node vectors: %w", err)
		}
		err = eachRow(rows, func(r scanner) error {
			var (
				id  string
				raw []byte
			)
			if err := r.Scan(&id, &raw); err != nil {
				return err
			}
			v, err := decodeVector(raw)
			out[id] = v
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("store: node vectors: %w", err)
		}
	}
	return out, nil
}

// ResolveHits loads, for each of the given node ids that is still searchable, its segment, its
// child chunk (for a child chunk's node), its document and its dataset. Other ids are absent from
// the map.
func (s *Store) ResolveHits(ctx context.Context, nodeIDs []string) (map[string]Hit, error) {
	out := make(map[string]Hit, len(nodeIDs))
	childOf := make(map[string]string) // child chunk id → node id
	for _, chunk := range chunks(nodeIDs) {
		ph, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT n.node_id, n.child_chunk_id, "+segmentColumnsS+", "+documentColumnsD+", "+datasetColumnsDS+
			searchableFrom+" JOIN datasets ds ON ds.id = n.dataset_id WHERE n.node_id IN ("+ph+") AND "+searchableWhere), args...)
		if err != nil {
			return nil, fmt.Errorf("store: resolve hits: %w", err)
		}
		err = eachRow(rows, func(r scanner) error {
			var (
				h     Hit
				child sql.NullString
				seg   segmentRow
				doc   documentRow
				ds    datasetRow
			)
			dest := append(append(append([]any{&h.NodeID, &child}, seg.dest()...), doc.dest()...), ds.dest()...)
			if err := r.Scan(dest...); err != nil {
				return err
			}
			var err error
			if h.Segment, err = seg.value(); err != nil {
				return err
			}
			h.Document, h.Dataset = doc.value(), ds.value()
			out[h.NodeID] = h
			if child.Valid {
				childOf[child.String] = h.NodeID
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: resolve hits: %w", err)
		}
	}
	childIDs := make([]string, 0, len(childOf))
	for id := range childOf {
		childIDs = append(childIDs, id)
	}
	for _, chunk := range chunks(childIDs) {
		ph, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT "+childChunkColumns+" FROM child_chunks WHERE id IN ("+ph+")"), args...)
		if err != nil {
			return nil, fmt.Errorf("store: resolve hits: %w", err)
		}
		cs, err := collect(rows, scanChildChunk)
		if err != nil {
			return nil, fmt.Errorf("store: resolve hits: %w", err)
		}
		for _, c := range cs {
			nodeID := childOf[c.ID]
			h := out[nodeID]
			h.ChildChunk = &c
			out[nodeID] = h
		}
	}
	// A child chunk deleted between the two queries leaves its node unresolvable.
	for id := range childOf {
		if out[childOf[id]].ChildChunk == nil {
			delete(out, childOf[id])
		}
	}
	return out, nil
}

// IncrementHitCounts adds one to the hit count of each of the given segments. An id listed
// more than once counts once: a retrieval that returns several child chunks of one segment is
// one hit on it, as in Dify. Unknown ids are ignored.
func (s *Store) IncrementHitCounts(ctx context.Context, segmentIDs []string) error {
	cs := chunks(segmentIDs)
	if len(cs) == 0 {
		return nil
	}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		for _, chunk := range cs {
			ph, args := inList(chunk)
			if _, err := s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE document_segments SET hit_count = hit_count + 1 WHERE id IN ("+ph+")"), args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: increment hit counts: %w", err)
	}
	return nil
}
