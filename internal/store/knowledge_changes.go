package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrationIndexChanges adds the change log of the vector index: one row per change of a
// dataset's searchable set, at the index version the change produced (datasets.index_version
// after it). A row's scope is the narrowest that covers the change: a node (node_id), every
// node of a segment (segment_id), every node of a document (document_id), or, all three empty,
// the whole dataset. Every version bump writes at least one row, so the rows of the versions
// after v tell an in-memory index which nodes to look at again to catch up from v; the oldest
// rows of a dataset are trimmed past indexChangesKept versions, and an index further behind
// than that reloads the dataset.
var migrationIndexChanges = migration{
	version: 15,
	name:    "vector index change log",
	sqlite: `
CREATE TABLE index_changes (
	dataset_id  TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	document_id TEXT    NOT NULL,
	segment_id  TEXT    NOT NULL,
	node_id     TEXT    NOT NULL
) STRICT;

CREATE INDEX index_changes_dataset ON index_changes (dataset_id, version);
`,
	postgres: `
CREATE TABLE index_changes (
	dataset_id  TEXT   NOT NULL,
	version     BIGINT NOT NULL,
	document_id TEXT   NOT NULL,
	segment_id  TEXT   NOT NULL,
	node_id     TEXT   NOT NULL
);

CREATE INDEX index_changes_dataset ON index_changes (dataset_id, version);
`,
}

// indexChangesKept is how many versions of change rows a dataset keeps.
const indexChangesKept = 1024

// IndexScope is what one change of a dataset's searchable set touched: one node, every node of
// a segment, every node of a document, or (the zero value) the whole dataset.
type IndexScope struct {
	DocumentID string
	SegmentID  string
	NodeID     string
}

// IndexDelta is what changed in a dataset's searchable set between two index versions.
type IndexDelta struct {
	// Version is the index version the delta brings a holder of Since to.
	Version int64
	// Full means the change log cannot give the delta (trimmed, a dataset-wide change, or more
	// changes than asked for): reload the dataset with [Store.SearchableVectors].
	Full bool
	// Documents, Segments and Nodes are the scopes that changed: a holder drops every node it
	// has in them, then adds Vectors.
	Documents, Segments, Nodes []string
	// Vectors are the searchable nodes with vectors within those scopes at Version.
	Vectors []SearchableNode
}

// SetIndexChangeHook sets a function called, after the commit, with the id of each dataset
// whose searchable set a transaction changed (or that was deleted). It must not block; nil
// removes it. Replicas use it to tell the others (see vectorindex).
func (s *Store) SetIndexChangeHook(fn func(datasetID string)) {
	if fn == nil {
		s.indexHook.Store(nil)
		return
	}
	s.indexHook.Store(&fn)
}

// bumpIndexVersion records, in the transaction q, that the searchable set of a dataset changed
// within scopes (none: the whole dataset): it moves datasets.index_version on, logs the scopes
// at the new version and trims the log. An unknown dataset is left alone.
func (s *Store) bumpIndexVersion(ctx context.Context, q execer, datasetID string, scopes ...IndexScope) error {
	var v int64
	err := q.QueryRowContext(ctx, s.Rebind("UPDATE datasets SET index_version = index_version + 1 WHERE id = ? RETURNING index_version"), datasetID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(scopes) == 0 {
		scopes = []IndexScope{{}}
	}
	const perStmt = 200
	for len(scopes) > 0 {
		n := min(len(scopes), perStmt)
		args := make([]any, 0, 5*n)
		query := "INSERT INTO index_changes (dataset_id, version, document_id, segment_id, node_id) VALUES "
		for i, sc := range scopes[:n] {
			if i > 0 {
				query += ", "
			}
			query += "(?, ?, ?, ?, ?)"
			args = append(args, datasetID, v, sc.DocumentID, sc.SegmentID, sc.NodeID)
		}
		if _, err := q.ExecContext(ctx, s.Rebind(query), args...); err != nil {
			return err
		}
		scopes = scopes[n:]
	}
	if v > indexChangesKept && v%64 == 0 {
		// Trimming every 64th version keeps the log short at a fraction of a DELETE per bump.
		if _, err := q.ExecContext(ctx, s.Rebind("DELETE FROM index_changes WHERE dataset_id = ? AND version <= ?"), datasetID, v-indexChangesKept); err != nil {
			return err
		}
	}
	if c, ok := q.(cached); ok && c.tx != nil {
		s.noteIndexChange(c.tx, datasetID)
	}
	return nil
}

// noteIndexChange remembers that tx changed the dataset's searchable set, for the hook to be
// told after the commit.
func (s *Store) noteIndexChange(tx *sql.Tx, datasetID string) {
	if s.indexHook.Load() == nil {
		return
	}
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	if s.pending == nil {
		s.pending = map[*sql.Tx][]string{}
	}
	for _, id := range s.pending[tx] {
		if id == datasetID {
			return
		}
	}
	s.pending[tx] = append(s.pending[tx], datasetID)
}

// endTx tells the hook of the datasets tx changed if it committed, and forgets them.
func (s *Store) endTx(tx *sql.Tx, committed bool) {
	s.pendingMu.Lock()
	ids := s.pending[tx]
	delete(s.pending, tx)
	s.pendingMu.Unlock()
	if !committed || len(ids) == 0 {
		return
	}
	if fn := s.indexHook.Load(); fn != nil {
		for _, id := range ids {
			(*fn)(id)
		}
	}
}

// IndexDelta returns what changed in the dataset's searchable set after index version since,
// read from one snapshot. It reports Full when the log cannot say it: the versions after since
// were trimmed, one of them changed the whole dataset, or they logged more than maxChanges
// scopes. An unknown dataset gives an error wrapping [ErrNotFound].
func (s *Store) IndexDelta(ctx context.Context, datasetID string, since int64, maxChanges int) (IndexDelta, error) {
	var d IndexDelta
	err := s.snapshot(ctx, func(q execer) error {
		d = IndexDelta{}
		err := q.QueryRowContext(ctx, s.Rebind("SELECT index_version FROM datasets WHERE id = ?"), datasetID).Scan(&d.Version)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if d.Version == since {
			return nil
		}
		if d.Version < since {
			d.Full = true
			return nil
		}
		rows, err := q.QueryContext(ctx, s.Rebind(`SELECT version, document_id, segment_id, node_id FROM index_changes
WHERE dataset_id = ? AND version > ? AND version <= ? ORDER BY version LIMIT ?`), datasetID, since, d.Version, maxChanges+1)
		if err != nil {
			return err
		}
		type change struct {
			version int64
			scope   IndexScope
		}
		changes, err := collect(rows, func(r scanner) (change, error) {
			var c change
			err := r.Scan(&c.version, &c.scope.DocumentID, &c.scope.SegmentID, &c.scope.NodeID)
			return c, err
		})
		if err != nil {
			return err
		}
		if len(changes) == 0 || len(changes) > maxChanges || changes[0].version != since+1 {
			d.Full = true
			return nil
		}
		seen := map[IndexScope]bool{}
		for _, c := range changes {
			sc := c.scope
			if seen[sc] {
				continue
			}
			seen[sc] = true
			switch {
			case sc.NodeID != "":
				d.Nodes = append(d.Nodes, sc.NodeID)
			case sc.SegmentID != "":
				d.Segments = append(d.Segments, sc.SegmentID)
			case sc.DocumentID != "":
				d.Documents = append(d.Documents, sc.DocumentID)
			default:
				d.Full = true
				return nil
			}
		}
		got := map[string]bool{}
		for _, scope := range []struct {
			column string
			ids    []string
		}{{"n.node_id", d.Nodes}, {"n.segment_id", d.Segments}, {"n.document_id", d.Documents}} {
			for _, chunk := range chunks(scope.ids) {
				ph, args := inList(chunk)
				rows, err := q.QueryContext(ctx, s.Rebind("SELECT n.node_id, n.document_id, n.segment_id, v.vector"+searchableFrom+`
JOIN index_vectors v ON v.node_id = n.node_id
WHERE n.dataset_id = ? AND `+scope.column+" IN ("+ph+") AND "+searchableWhere), append([]any{datasetID}, args...)...)
				if err != nil {
					return err
				}
				nodes, err := collect(rows, func(r scanner) (SearchableNode, error) {
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
				if err != nil {
					return err
				}
				for _, n := range nodes {
					if !got[n.NodeID] {
						got[n.NodeID] = true
						d.Vectors = append(d.Vectors, n)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return IndexDelta{}, fmt.Errorf("store: index delta of dataset %s: %w", datasetID, err)
	}
	return d, nil
}
