package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/jsonenc"
)

const segmentColumns = `id, dataset_id, document_id, generation, position, content, answer, word_count, tokens,
keywords, index_node_id, index_node_hash, hit_count, enabled, disabled_at, disabled_by, status, created_by,
created_at, updated_by, updated_at, indexing_at, completed_at, error, stopped_at`

// segmentColumnsS is segmentColumns qualified with the table alias s.
var segmentColumnsS = qualify("s", segmentColumns)

const childChunkColumns = `id, segment_id, dataset_id, document_id, generation, position, content, word_count,
index_node_id, index_node_hash, type, created_by, created_at, updated_at`

var validSegmentStatus = map[string]bool{
	SegmentWaiting: true, SegmentIndexing: true, SegmentCompleted: true, SegmentError: true, SegmentReSegment: true,
}

// Bulk inserts put up to batchRows rows, and at most batchParams bound values, in one
// multi-row INSERT: far fewer statement executions than one per row, and well within both
// engines' limits on bound parameters.
const (
	batchRows   = 250
	batchParams = 4000
)

// insertMany inserts the rows whose values are args (perRow values each, in order) with
// multi-row INSERTs of the form head VALUES row, row, …. Full batches share one cached
// statement; the shorter last batch runs unprepared, so that its one-off text does not take a
// slot in the statement cache.
func (s *Store) insertMany(ctx context.Context, tx *sql.Tx, head, row string, perRow int, args []any) error {
	rows := len(args) / perRow
	batch := min(batchRows, batchParams/perRow)
	build := func(n int) string {
		return s.Rebind(head + " VALUES " + strings.Repeat(row+", ", n-1) + row)
	}
	var full string
	for start := 0; start < rows; start += batch {
		n := min(batch, rows-start)
		var (
			q    execer = tx
			text string
		)
		if n == batch {
			if full == "" {
				full = build(n)
			}
			q, text = s.inTx(tx), full
		} else {
			text = build(n)
		}
		if _, err := q.ExecContext(ctx, text, args[start*perRow:(start+n)*perRow]...); err != nil {
			return mapError(err)
		}
	}
	return nil
}

// prepare checks seg, fills in defaults and normalises its timestamps; it returns the keywords
// column value.
func (seg *Segment) prepare() (string, error) {
	if seg.Status == "" {
		seg.Status = SegmentWaiting
	}
	switch {
	case seg.ID == "" || seg.DatasetID == "" || seg.DocumentID == "":
		return "", errors.New("segment: missing id, dataset id or document id")
	case !validSegmentStatus[seg.Status]:
		return "", fmt.Errorf("segment %s: unknown status %q", seg.ID, seg.Status)
	case seg.Generation < 0:
		return "", fmt.Errorf("segment %s: negative generation", seg.ID)
	}
	seg.CreatedAt = fromUnix(nowOr(seg.CreatedAt).Unix())
	if seg.UpdatedAt.IsZero() {
		seg.UpdatedAt = seg.CreatedAt
	}
	seg.UpdatedAt = fromUnix(seg.UpdatedAt.Unix())
	for _, t := range []**time.Time{&seg.DisabledAt, &seg.IndexingAt, &seg.CompletedAt, &seg.StoppedAt} {
		*t = truncUnix(*t)
	}
	kw := seg.Keywords
	if kw == nil {
		kw = []string{}
	}
	b, err := json.Marshal(kw)
	if err != nil {
		return "", fmt.Errorf("segment %s: keywords: %w", seg.ID, err)
	}
	return string(b), nil
}

// prepare checks c and fills in defaults.
func (c *ChildChunk) prepare() error {
	if c.Type == "" {
		c.Type = ChildChunkAutomatic
	}
	switch {
	case c.ID == "" || c.SegmentID == "" || c.DatasetID == "" || c.DocumentID == "":
		return errors.New("child chunk: missing id, segment id, dataset id or document id")
	case c.Type != ChildChunkAutomatic && c.Type != ChildChunkCustomized:
		return fmt.Errorf("child chunk %s: unknown type %q", c.ID, c.Type)
	}
	c.CreatedAt = fromUnix(nowOr(c.CreatedAt).Unix())
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.UpdatedAt = fromUnix(c.UpdatedAt.Unix())
	return nil
}

// AddSegments inserts segments and child chunks, of any generation, in one transaction, with
// multi-row INSERTs. Every segment and child chunk needs its ID, DatasetID and DocumentID (and a
// child its SegmentID); Status defaults to SegmentWaiting, a child's Type to
// ChildChunkAutomatic, CreatedAt to now and UpdatedAt to CreatedAt. HitCount is stored as
// given. A segment of an unknown document, or a child of an unknown segment, gives an error
// wrapping [ErrNotFound]; a reused id or index node id one wrapping [ErrConflict].
func (s *Store) AddSegments(ctx context.Context, segs []Segment, children []ChildChunk) error {
	if len(segs) == 0 && len(children) == 0 {
		return nil
	}
	segArgs := make([]any, 0, len(segs)*25)
	for _, seg := range segs {
		kw, err := seg.prepare()
		if err != nil {
			return fmt.Errorf("store: add segments: %w", err)
		}
		segArgs = append(segArgs, seg.ID, seg.DatasetID, seg.DocumentID, seg.Generation, seg.Position, seg.Content, nullString(seg.Answer),
			seg.WordCount, seg.Tokens, kw, nullString(seg.IndexNodeID), nullString(seg.IndexNodeHash), seg.HitCount, seg.Enabled,
			nullUnix(seg.DisabledAt), nullString(seg.DisabledBy), seg.Status, seg.CreatedBy, seg.CreatedAt.Unix(), nullString(seg.UpdatedBy),
			seg.UpdatedAt.Unix(), nullUnix(seg.IndexingAt), nullUnix(seg.CompletedAt), nullString(seg.Error), nullUnix(seg.StoppedAt))
	}
	childArgs := make([]any, 0, len(children)*14)
	for _, c := range children {
		if err := c.prepare(); err != nil {
			return fmt.Errorf("store: add segments: %w", err)
		}
		childArgs = append(childArgs, c.ID, c.SegmentID, c.DatasetID, c.DocumentID, c.Generation, c.Position, c.Content, c.WordCount,
			nullString(c.IndexNodeID), nullString(c.IndexNodeHash), c.Type, c.CreatedBy, c.CreatedAt.Unix(), c.UpdatedAt.Unix())
	}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		err := s.insertMany(ctx, tx, "INSERT INTO document_segments ("+segmentColumns+")", "("+placeholders(25)+")", 25, segArgs)
		if isForeignKeyViolation(err) {
			return fmt.Errorf("document of a segment: %w", ErrNotFound)
		}
		if err != nil {
			return err
		}
		err = s.insertMany(ctx, tx, "INSERT INTO child_chunks ("+childChunkColumns+")", "("+placeholders(14)+")", 14, childArgs)
		if isForeignKeyViolation(err) {
			return fmt.Errorf("segment of a child chunk: %w", ErrNotFound)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store: add segments: %w", err)
	}
	return nil
}

// IndexNodes writes the index rows of nodes (the node, its keywords, its full-text terms and
// its vector when it has one) and marks each node's segment completed at at, in one
// transaction, with multi-row INSERTs; it moves the index version of every dataset involved
// on. Keywords repeated within a node are stored once, empty ones not at all. A node id already
// indexed gives an error wrapping [ErrConflict]: clear a generation before rebuilding it.
func (s *Store) IndexNodes(ctx context.Context, nodes []IndexNode, at time.Time) error {
	if len(nodes) == 0 {
		return nil
	}
	for _, n := range nodes {
		if err := n.validate(); err != nil {
			return fmt.Errorf("store: index nodes: %w", err)
		}
	}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		if err := s.insertNodes(ctx, tx, nodes); err != nil {
			return err
		}
		q := s.inTx(tx)
		segIDs := make([]string, 0, len(nodes))
		var withKeywords [][2]string
		for _, n := range nodes {
			if !n.SegmentKeywords || n.ChildChunkID != "" {
				segIDs = append(segIDs, n.SegmentID)
				continue
			}
			kw, err := json.Marshal(nonNil(n.Keywords))
			if err != nil {
				return err
			}
			withKeywords = append(withKeywords, [2]string{n.SegmentID, string(kw)})
		}
		if len(withKeywords) > 0 {
			// One statement for the whole batch: [[segment id, keywords JSON], …].
			rows, err := json.Marshal(withKeywords)
			if err != nil {
				return err
			}
			query := "UPDATE document_segments SET status = 'completed', completed_at = ?, keywords = j.value ->> 1 " +
				"FROM json_each(?) AS j WHERE document_segments.id = j.value ->> 0"
			if s.dialect == DialectPostgres {
				query = "UPDATE document_segments SET status = 'completed', completed_at = ?, keywords = j.value ->> 1 " +
					"FROM jsonb_array_elements(?::jsonb) AS j(value) WHERE document_segments.id = j.value ->> 0"
			}
			if _, err := q.ExecContext(ctx, s.Rebind(query), at.Unix(), string(rows)); err != nil {
				return err
			}
		}
		for _, chunk := range chunks(segIDs) {
			ph, args := inList(chunk)
			_, err := q.ExecContext(ctx, s.Rebind("UPDATE document_segments SET status = 'completed', completed_at = ? WHERE id IN ("+ph+")"),
				append([]any{at.Unix()}, args...)...)
			if err != nil {
				return err
			}
		}
		return s.bumpDatasets(ctx, q, nodes)
	})
	if err != nil {
		return fmt.Errorf("store: index nodes: %w", err)
	}
	return nil
}

func (n IndexNode) validate() error {
	if n.NodeID == "" || n.DatasetID == "" || n.DocumentID == "" || n.SegmentID == "" {
		return errors.New("index node: missing node id, dataset id, document id or segment id")
	}
	return nil
}

// bumpDatasets moves on the index version of each dataset the nodes belong to, recording the
// nodes as its change.
func (s *Store) bumpDatasets(ctx context.Context, q execer, nodes []IndexNode) error {
	var order []string
	scopes := make(map[string][]IndexScope)
	for _, n := range nodes {
		if _, ok := scopes[n.DatasetID]; !ok {
			order = append(order, n.DatasetID)
		}
		scopes[n.DatasetID] = append(scopes[n.DatasetID], IndexScope{NodeID: n.NodeID})
	}
	for _, id := range order {
		if err := s.bumpIndexVersion(ctx, q, id, scopes[id]...); err != nil {
			return err
		}
	}
	return nil
}

// ftsBatch bounds the nodes written to index_fts by one statement. FTS5 flushes its buffered
// postings to a new index segment at the end of every statement, so a few large statements
// build far fewer segments (and later merges) than many small ones: on SQLite, one statement
// per 250 rows indexed 500-character texts at about 11k nodes/s, one per 1000 at about 39k.
const ftsBatch = 5000

// insertNodes writes the index rows of validated nodes in tx.
func (s *Store) insertNodes(ctx context.Context, tx *sql.Tx, nodes []IndexNode) error {
	if s.dialect == DialectSQLite {
		if err := s.insertNodesSQLite(ctx, tx, nodes); err != nil {
			return err
		}
	} else {
		if err := s.insertNodesPostgres(ctx, tx, nodes); err != nil {
			return err
		}
	}
	var vecArgs []any
	for _, n := range nodes {
		if n.Vector != nil {
			vecArgs = append(vecArgs, n.NodeID, n.DatasetID, encodeVector(n.Vector))
		}
	}
	return s.insertMany(ctx, tx, "INSERT INTO index_vectors (node_id, dataset_id, vector)", "(?, ?, ?)", 3, vecArgs)
}

// nodeKeywords returns the node's distinct non-empty keywords as the index holds them: case
// folded (foldKeyword), so that a search matches them whatever their case.
func nodeKeywords(n IndexNode) []string {
	seen := make(map[string]bool, len(n.Keywords))
	out := make([]string, 0, len(n.Keywords))
	for _, kw := range n.Keywords {
		kw = foldKeyword(kw)
		if kw != "" && !seen[kw] {
			seen[kw] = true
			out = append(out, kw)
		}
	}
	return out
}

// keywordToken is the index_fts token of a keyword (SQLite). Hex keeps it one token through
// the unicode61 tokenizer, unfolded, so keyword matches are exact. The dataset is not part of
// the token (that doubled the indexed text and cost a third of the indexing rate); searches
// filter on index_nodes.dataset_id instead.
func keywordToken(keyword string) string {
	return hex.EncodeToString([]byte(keyword))
}

// datasetToken is the index_fts token of a dataset (SQLite), in the dataset column of each of
// its nodes' rows: a search whose datasets' nodes interleave with another dataset's matches it,
// so that it ranks only the rows of its datasets (see fts5Scope). It is
// a 64-bit hash, short to tokenize on every row; a collision only lets another dataset's rows
// into the ranking, and rankSQLite's second stage filters by dataset id.
func datasetToken(datasetID string) string {
	h := fnv.New64a()
	h.Write([]byte(datasetID))
	return "d" + strconv.FormatUint(h.Sum64(), 36)
}

func (s *Store) insertNodesSQLite(ctx context.Context, tx *sql.Tx, nodes []IndexNode) error {
	// The FTS5 rowid of a node is its rid, assigned here: the transaction holds SQLite's write
	// lock, so nobody else can take the same numbers.
	var maxRID int64
	if err := s.inTx(tx).QueryRowContext(ctx, "SELECT COALESCE(MAX(rid), 0) FROM index_nodes").Scan(&maxRID); err != nil {
		return err
	}
	nodeArgs := make([]any, 0, len(nodes)*7)
	for i, n := range nodes {
		nodeArgs = append(nodeArgs, maxRID+1+int64(i), n.NodeID, n.DatasetID, n.DocumentID, n.SegmentID, nullString(n.ChildChunkID), n.Generation)
	}
	if err := s.insertMany(ctx, tx, "INSERT INTO index_nodes (rid, node_id, dataset_id, document_id, segment_id, child_chunk_id, generation)",
		"(?, ?, ?, ?, ?, ?, ?)", 7, nodeArgs); err != nil {
		return err
	}
	// Every node gets an index_fts row, even with no terms and no keywords, so that deleting a
	// node's row by rowid is always exact. The rows go in as one JSON array of [terms, keyword
	// tokens, dataset token] per statement.
	var text []byte
	dsTokens := make(map[string]string, 1)
	for start := 0; start < len(nodes); start += ftsBatch {
		text = append(text[:0], '[')
		for i, n := range nodes[start:min(start+ftsBatch, len(nodes))] {
			if i > 0 {
				text = append(text, ',')
			}
			text = jsonenc.AppendString(append(text, '['), n.Terms)
			text = append(text, ',', '"')
			for j, kw := range nodeKeywords(n) {
				if j > 0 {
					text = append(text, ' ')
				}
				text = hex.AppendEncode(text, []byte(kw))
			}
			tok, ok := dsTokens[n.DatasetID]
			if !ok {
				tok = datasetToken(n.DatasetID)
				dsTokens[n.DatasetID] = tok
			}
			text = append(append(text, '"', ',', '"'), tok...)
			text = append(text, '"', ']')
		}
		text = append(text, ']')
		if _, err := s.inTx(tx).ExecContext(ctx, "INSERT INTO index_fts (rowid, terms, keywords, dataset) SELECT ? + key, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)",
			maxRID+1+int64(start), string(text)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) insertNodesPostgres(ctx context.Context, tx *sql.Tx, nodes []IndexNode) error {
	nodeArgs := make([]any, 0, len(nodes)*7)
	var kwArgs []any
	for _, n := range nodes {
		nodeArgs = append(nodeArgs, n.NodeID, n.DatasetID, n.DocumentID, n.SegmentID, nullString(n.ChildChunkID), n.Generation, n.Terms)
		for _, kw := range nodeKeywords(n) {
			kwArgs = append(kwArgs, n.DatasetID, kw, n.NodeID)
		}
	}
	if err := s.insertMany(ctx, tx, "INSERT INTO index_nodes (node_id, dataset_id, document_id, segment_id, child_chunk_id, generation, tsv)",
		"(?, ?, ?, ?, ?, ?, to_tsvector('simple', ?))", 7, nodeArgs); err != nil {
		return err
	}
	return s.insertMany(ctx, tx, "INSERT INTO index_keywords (dataset_id, keyword, node_id)", "(?, ?, ?)", 3, kwArgs)
}

// deleteIndexRows deletes the index rows (keywords, full-text, vectors, nodes) of the
// index_nodes rows matching where, a condition on index_nodes columns with args bound to its
// placeholders.
func (s *Store) deleteIndexRows(ctx context.Context, q execer, where string, args ...any) error {
	var stmts []string
	if s.dialect == DialectSQLite {
		stmts = append(stmts, "DELETE FROM index_fts WHERE rowid IN (SELECT rid FROM index_nodes WHERE "+where+")")
	} else {
		stmts = append(stmts, "DELETE FROM index_keywords WHERE node_id IN (SELECT node_id FROM index_nodes WHERE "+where+")")
	}
	stmts = append(stmts,
		"DELETE FROM index_vectors WHERE node_id IN (SELECT node_id FROM index_nodes WHERE "+where+")",
		"DELETE FROM index_nodes WHERE "+where)
	for _, stmt := range stmts {
		if _, err := q.ExecContext(ctx, s.Rebind(stmt), args...); err != nil {
			return err
		}
	}
	return nil
}

// SwapGeneration makes d.Generation the document's served generation: in one transaction it
// writes the document row d (as [Store.UpdateDocument] does), deletes the document's segments,
// child chunks and index rows of every other generation, and moves the dataset's index version
// on. A search before the commit sees only the old generation, after it only the new one.
func (s *Store) SwapGeneration(ctx context.Context, d Document) error {
	meta, err := d.prepare()
	if err != nil {
		return fmt.Errorf("store: swap generation of document %s: %w", d.ID, err)
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		if _, err := s.writeDocument(ctx, q, d, meta); err != nil {
			return err
		}
		if err := s.deleteIndexRows(ctx, q, "document_id = ? AND generation <> ?", d.ID, d.Generation); err != nil {
			return err
		}
		for _, stmt := range []string{
			"DELETE FROM child_chunks WHERE document_id = ? AND generation <> ?",
			"DELETE FROM document_segments WHERE document_id = ? AND generation <> ?",
		} {
			if _, err := q.ExecContext(ctx, s.Rebind(stmt), d.ID, d.Generation); err != nil {
				return err
			}
		}
		return s.bumpIndexVersion(ctx, q, d.DatasetID, IndexScope{DocumentID: d.ID})
	})
	if err != nil {
		return fmt.Errorf("store: swap generation of document %s: %w", d.ID, err)
	}
	return nil
}

// ClearGeneration deletes the document's segments, child chunks and index rows of one
// generation in one transaction and moves the dataset's index version on. An unknown document
// gives an error wrapping [ErrNotFound].
func (s *Store) ClearGeneration(ctx context.Context, documentID string, generation int) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		var datasetID string
		err := q.QueryRowContext(ctx, s.Rebind("SELECT dataset_id FROM documents WHERE id = ?"), documentID).Scan(&datasetID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := s.deleteIndexRows(ctx, q, "document_id = ? AND generation = ?", documentID, generation); err != nil {
			return err
		}
		for _, stmt := range []string{
			"DELETE FROM child_chunks WHERE document_id = ? AND generation = ?",
			"DELETE FROM document_segments WHERE document_id = ? AND generation = ?",
		} {
			if _, err := q.ExecContext(ctx, s.Rebind(stmt), documentID, generation); err != nil {
				return err
			}
		}
		return s.bumpIndexVersion(ctx, q, datasetID, IndexScope{DocumentID: documentID})
	})
	if err != nil {
		return fmt.Errorf("store: clear generation %d of document %s: %w", generation, documentID, err)
	}
	return nil
}

// servedSegment joins a segment (alias s) to its document (alias d) only when it is of the
// generation the document serves.
const servedSegment = " FROM document_segments s JOIN documents d ON d.id = s.document_id AND d.generation = s.generation"

// Segment returns the segment of the document's served generation with the given id, or an
// error wrapping [ErrNotFound].
func (s *Store) Segment(ctx context.Context, documentID, id string) (Segment, error) {
	seg, err := scanSegment(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+segmentColumnsS+servedSegment+
		" WHERE s.id = ? AND s.document_id = ?"), id, documentID))
	if errors.Is(err, sql.ErrNoRows) {
		return Segment{}, fmt.Errorf("store: segment %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Segment{}, fmt.Errorf("store: segment %s: %w", id, err)
	}
	return seg, nil
}

// ListSegments returns one page of the segments of the document's served generation, by
// position, and how many match in all. Statuses keeps any of those statuses; Keyword matches a
// substring of the content, case-insensitively (on SQLite only ASCII letters fold). Page and
// Limit must be positive.
func (s *Store) ListSegments(ctx context.Context, q SegmentQuery) (items []Segment, total int, err error) {
	if q.DocumentID == "" {
		return nil, 0, errors.New("store: list segments: missing document id")
	}
	if q.Page < 1 || q.Limit < 1 {
		return nil, 0, fmt.Errorf("store: list segments: page %d and limit %d must be positive", q.Page, q.Limit)
	}
	where := " WHERE s.document_id = ?"
	args := []any{q.DocumentID}
	if len(q.Statuses) > 0 {
		statuses := chunks(q.Statuses)
		if len(statuses) > 1 {
			return nil, 0, fmt.Errorf("store: list segments: more than %d statuses", inChunk)
		}
		ph, sArgs := inList(statuses[0])
		where += " AND s.status IN (" + ph + ")"
		args = append(args, sArgs...)
	}
	if q.Keyword != "" {
		where += " AND s.content " + s.ilike() + " ? ESCAPE '\\'"
		args = append(args, containsPattern(q.Keyword))
	}
	err = s.snapshot(ctx, func(tx execer) error {
		if err := tx.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*)"+servedSegment+where), args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, s.Rebind("SELECT "+segmentColumnsS+servedSegment+where+
			" ORDER BY s.position, s.id LIMIT ? OFFSET ?"), append(args, pageWindow(q.Page, q.Limit)...)...)
		if err != nil {
			return err
		}
		items, err = collect(rows, scanSegment)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: list segments: %w", err)
	}
	return items, total, nil
}

// MaxSegmentPosition returns the highest position among the document's segments of the given
// generation, or 0 when it has none.
func (s *Store) MaxSegmentPosition(ctx context.Context, documentID string, generation int) (int, error) {
	var n int
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT COALESCE(MAX(position), 0) FROM document_segments WHERE document_id = ? AND generation = ?"),
		documentID, generation).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: max segment position of document %s: %w", documentID, err)
	}
	return n, nil
}

// UpdateSegment writes the segment row and replaces all its index rows (its own node and its
// child chunks' nodes) with nodes, in one transaction, and moves the dataset's index version
// on. Every column is written except id, dataset_id, document_id, generation, created_by,
// created_at and hit_count (which only [Store.IncrementHitCounts] changes); a zero UpdatedAt is
// stored as now. Each node's DatasetID, DocumentID, SegmentID and Generation are taken from the
// segment row; its NodeID (and ChildChunkID, for a child node) must be set. Unlike
// [Store.IndexNodes] it does not touch the segment's status: that is written from seg. An
// unknown segment gives an error wrapping [ErrNotFound].
func (s *Store) UpdateSegment(ctx context.Context, seg Segment, nodes []IndexNode) error {
	seg.UpdatedAt = nowOr(seg.UpdatedAt)
	kw, err := seg.prepare()
	if err != nil {
		return fmt.Errorf("store: update segment: %w", err)
	}
	for _, n := range nodes {
		if n.NodeID == "" {
			return fmt.Errorf("store: update segment %s: index node without node id", seg.ID)
		}
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		var (
			datasetID  string
			generation int
		)
		err := q.QueryRowContext(ctx, s.Rebind(`UPDATE document_segments SET position = ?, content = ?, answer = ?, word_count = ?,
tokens = ?, keywords = ?, index_node_id = ?, index_node_hash = ?, enabled = ?, disabled_at = ?, disabled_by = ?, status = ?,
updated_by = ?, updated_at = ?, indexing_at = ?, completed_at = ?, error = ?, stopped_at = ?
WHERE id = ? AND document_id = ? RETURNING dataset_id, generation`),
			seg.Position, seg.Content, nullString(seg.Answer), seg.WordCount,
			seg.Tokens, kw, nullString(seg.IndexNodeID), nullString(seg.IndexNodeHash), seg.Enabled, nullUnix(seg.DisabledAt), nullString(seg.DisabledBy), seg.Status,
			nullString(seg.UpdatedBy), seg.UpdatedAt.Unix(), nullUnix(seg.IndexingAt), nullUnix(seg.CompletedAt), nullString(seg.Error), nullUnix(seg.StoppedAt),
			seg.ID, seg.DocumentID).Scan(&datasetID, &generation)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return mapError(err)
		}
		if err := s.deleteIndexRows(ctx, q, "segment_id = ?", seg.ID); err != nil {
			return err
		}
		nodes = append([]IndexNode(nil), nodes...)
		for i := range nodes {
			nodes[i].DatasetID, nodes[i].DocumentID, nodes[i].SegmentID, nodes[i].Generation = datasetID, seg.DocumentID, seg.ID, generation
		}
		if err := s.insertNodes(ctx, tx, nodes); err != nil {
			return err
		}
		return s.bumpIndexVersion(ctx, q, datasetID, IndexScope{SegmentID: seg.ID})
	})
	if err != nil {
		return fmt.Errorf("store: update segment %s: %w", seg.ID, err)
	}
	return nil
}

// DeleteSegment deletes the segment, its child chunks and their index rows in one transaction
// and moves the dataset's index version on. An unknown segment gives an error wrapping
// [ErrNotFound].
func (s *Store) DeleteSegment(ctx context.Context, documentID, id string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		var datasetID string
		err := q.QueryRowContext(ctx, s.Rebind("SELECT dataset_id FROM document_segments WHERE id = ? AND document_id = ?"), id, documentID).Scan(&datasetID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := s.deleteIndexRows(ctx, q, "segment_id = ?", id); err != nil {
			return err
		}
		for _, stmt := range []string{"DELETE FROM child_chunks WHERE segment_id = ?", "DELETE FROM document_segments WHERE id = ?"} {
			if _, err := q.ExecContext(ctx, s.Rebind(stmt), id); err != nil {
				return err
			}
		}
		return s.bumpIndexVersion(ctx, q, datasetID, IndexScope{SegmentID: id})
	})
	if err != nil {
		return fmt.Errorf("store: delete segment %s: %w", id, err)
	}
	return nil
}

// ChildChunks returns the child chunks of each of the given segments, by position. Segments
// without child chunks are absent from the map.
func (s *Store) ChildChunks(ctx context.Context, segmentIDs []string) (map[string][]ChildChunk, error) {
	out := make(map[string][]ChildChunk)
	for _, chunk := range chunks(segmentIDs) {
		ph, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT "+childChunkColumns+
			" FROM child_chunks WHERE segment_id IN ("+ph+") ORDER BY segment_id, position, id"), args...)
		if err != nil {
			return nil, fmt.Errorf("store: child chunks: %w", err)
		}
		cs, err := collect(rows, scanChildChunk)
		if err != nil {
			return nil, fmt.Errorf("store: child chunks: %w", err)
		}
		for _, c := range cs {
			out[c.SegmentID] = append(out[c.SegmentID], c)
		}
	}
	return out, nil
}

// ListChildChunks returns one page of the segment's child chunks, by position, and how many
// match in all. keyword matches a substring of the content, case-insensitively (on SQLite only
// ASCII letters fold). page and limit must be positive.
func (s *Store) ListChildChunks(ctx context.Context, segmentID, keyword string, page, limit int) (items []ChildChunk, total int, err error) {
	if page < 1 || limit < 1 {
		return nil, 0, fmt.Errorf("store: list child chunks: page %d and limit %d must be positive", page, limit)
	}
	where := " WHERE segment_id = ?"
	args := []any{segmentID}
	if keyword != "" {
		where += " AND content " + s.ilike() + " ? ESCAPE '\\'"
		args = append(args, containsPattern(keyword))
	}
	err = s.snapshot(ctx, func(tx execer) error {
		if err := tx.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM child_chunks"+where), args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, s.Rebind("SELECT "+childChunkColumns+" FROM child_chunks"+where+
			" ORDER BY position, id LIMIT ? OFFSET ?"), append(args, pageWindow(page, limit)...)...)
		if err != nil {
			return err
		}
		items, err = collect(rows, scanChildChunk)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: list child chunks: %w", err)
	}
	return items, total, nil
}

// ChildChunk returns the segment's child chunk with the given id, or an error wrapping
// [ErrNotFound].
func (s *Store) ChildChunk(ctx context.Context, segmentID, id string) (ChildChunk, error) {
	c, err := scanChildChunk(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+childChunkColumns+
		" FROM child_chunks WHERE id = ? AND segment_id = ?"), id, segmentID))
	if errors.Is(err, sql.ErrNoRows) {
		return ChildChunk{}, fmt.Errorf("store: child chunk %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return ChildChunk{}, fmt.Errorf("store: child chunk %s: %w", id, err)
	}
	return c, nil
}

// UpdateChildChunk writes the child chunk row (position, content, word count, index node id
// and hash, type, updated_at; a zero UpdatedAt is stored as now) and replaces its index rows
// with node, in one transaction, and moves the dataset's index version on. node's DatasetID,
// DocumentID, SegmentID, ChildChunkID and Generation are taken from the row; a node without a
// NodeID leaves the chunk out of the index. An unknown child chunk gives an error wrapping
// [ErrNotFound].
func (s *Store) UpdateChildChunk(ctx context.Context, c ChildChunk, node IndexNode) error {
	if c.Type == "" {
		c.Type = ChildChunkAutomatic
	}
	if c.Type != ChildChunkAutomatic && c.Type != ChildChunkCustomized {
		return fmt.Errorf("store: update child chunk %s: unknown type %q", c.ID, c.Type)
	}
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		err := q.QueryRowContext(ctx, s.Rebind(`UPDATE child_chunks SET position = ?, content = ?, word_count = ?,
index_node_id = ?, index_node_hash = ?, type = ?, updated_at = ?
WHERE id = ? AND segment_id = ? RETURNING dataset_id, document_id, generation`),
			c.Position, c.Content, c.WordCount, nullString(c.IndexNodeID), nullString(c.IndexNodeHash), c.Type, nowOr(c.UpdatedAt).Unix(),
			c.ID, c.SegmentID).Scan(&node.DatasetID, &node.DocumentID, &node.Generation)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return mapError(err)
		}
		if err := s.deleteIndexRows(ctx, q, "child_chunk_id = ?", c.ID); err != nil {
			return err
		}
		if node.NodeID != "" {
			node.SegmentID, node.ChildChunkID = c.SegmentID, c.ID
			if err := s.insertNodes(ctx, tx, []IndexNode{node}); err != nil {
				return err
			}
		}
		return s.bumpIndexVersion(ctx, q, node.DatasetID, IndexScope{SegmentID: c.SegmentID})
	})
	if err != nil {
		return fmt.Errorf("store: update child chunk %s: %w", c.ID, err)
	}
	return nil
}

// DeleteChildChunk deletes the child chunk and its index rows in one transaction and moves the
// dataset's index version on. An unknown child chunk gives an error wrapping [ErrNotFound].
func (s *Store) DeleteChildChunk(ctx context.Context, segmentID, id string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		var datasetID string
		err := q.QueryRowContext(ctx, s.Rebind("SELECT dataset_id FROM child_chunks WHERE id = ? AND segment_id = ?"), id, segmentID).Scan(&datasetID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := s.deleteIndexRows(ctx, q, "child_chunk_id = ?", id); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.Rebind("DELETE FROM child_chunks WHERE id = ?"), id); err != nil {
			return err
		}
		return s.bumpIndexVersion(ctx, q, datasetID, IndexScope{SegmentID: segmentID})
	})
	if err != nil {
		return fmt.Errorf("store: delete child chunk %s: %w", id, err)
	}
	return nil
}

// segmentRow receives a document_segments row (see datasetRow).
type segmentRow struct {
	seg                                                      Segment
	answer, nodeID, nodeHash, disabledBy, updatedBy, errText sql.NullString
	keywords                                                 string
	created, updated                                         int64
	disabledAt, indexingAt, completedAt, stoppedAt           sql.NullInt64
}

func (r *segmentRow) dest() []any {
	g := &r.seg
	return []any{&g.ID, &g.DatasetID, &g.DocumentID, &g.Generation, &g.Position, &g.Content, &r.answer, &g.WordCount, &g.Tokens,
		&r.keywords, &r.nodeID, &r.nodeHash, &g.HitCount, &g.Enabled, &r.disabledAt, &r.disabledBy, &g.Status, &g.CreatedBy,
		&r.created, &r.updatedBy, &r.updated, &r.indexingAt, &r.completedAt, &r.errText, &r.stoppedAt}
}

func (r *segmentRow) value() (Segment, error) {
	g := r.seg
	if err := json.Unmarshal([]byte(r.keywords), &g.Keywords); err != nil {
		return Segment{}, fmt.Errorf("segment %s keywords: %w", g.ID, err)
	}
	if len(g.Keywords) == 0 {
		g.Keywords = nil
	}
	g.Answer, g.IndexNodeID, g.IndexNodeHash = r.answer.String, r.nodeID.String, r.nodeHash.String
	g.DisabledBy, g.UpdatedBy, g.Error = r.disabledBy.String, r.updatedBy.String, r.errText.String
	g.CreatedAt, g.UpdatedAt = fromUnix(r.created), fromUnix(r.updated)
	g.DisabledAt, g.IndexingAt = fromNullUnix(r.disabledAt), fromNullUnix(r.indexingAt)
	g.CompletedAt, g.StoppedAt = fromNullUnix(r.completedAt), fromNullUnix(r.stoppedAt)
	return g, nil
}

func scanSegment(r scanner) (Segment, error) {
	var row segmentRow
	if err := r.Scan(row.dest()...); err != nil {
		return Segment{}, err
	}
	return row.value()
}

func scanChildChunk(r scanner) (ChildChunk, error) {
	var (
		c                ChildChunk
		nodeID, nodeHash sql.NullString
		created, updated int64
	)
	if err := r.Scan(&c.ID, &c.SegmentID, &c.DatasetID, &c.DocumentID, &c.Generation, &c.Position, &c.Content, &c.WordCount,
		&nodeID, &nodeHash, &c.Type, &c.CreatedBy, &created, &updated); err != nil {
		return ChildChunk{}, err
	}
	c.IndexNodeID, c.IndexNodeHash = nodeID.String, nodeHash.String
	c.CreatedAt, c.UpdatedAt = fromUnix(created), fromUnix(updated)
	return c, nil
}

// encodeVector stores v as little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// decodeVector is the inverse of encodeVector.
func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector of %d bytes is not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// nonNil returns kw, or an empty slice for nil (stored as [] rather than null).
func nonNil(kw []string) []string {
	if kw == nil {
		return []string{}
	}
	return kw
}
