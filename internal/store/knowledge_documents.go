package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Document display statuses accepted by [DocumentQuery.DisplayStatus] (Dify's values).
const (
	DisplayQueuing   = "queuing"
	DisplayIndexing  = "indexing"
	DisplayPaused    = "paused"
	DisplayError     = "error"
	DisplayAvailable = "available"
	DisplayDisabled  = "disabled"
	DisplayArchived  = "archived"
)

// displayStatusWhere is the SQL condition for each display status. They exclude one another:
// paused comes first (any unfinished document that is paused), then the indexing statuses.
// Dify derives them the same way (api/models/dataset.py Document.display_status).
var displayStatusWhere = map[string]string{
	DisplayPaused:    "is_paused AND indexing_status NOT IN ('completed', 'error')",
	DisplayQueuing:   "indexing_status = 'waiting' AND NOT is_paused",
	DisplayIndexing:  "indexing_status IN ('parsing', 'cleaning', 'splitting', 'indexing') AND NOT is_paused",
	DisplayError:     "indexing_status = 'error'",
	DisplayAvailable: "indexing_status = 'completed' AND NOT archived AND enabled",
	DisplayDisabled:  "indexing_status = 'completed' AND NOT archived AND NOT enabled",
	DisplayArchived:  "indexing_status = 'completed' AND archived",
}

const documentColumns = `id, dataset_id, position, data_source_type, upload_file_id, process_rule_id, batch, name,
created_from, created_by, created_at, updated_at, indexing_status, processing_started_at, parsing_completed_at,
cleaning_completed_at, splitting_completed_at, completed_at, paused_at, stopped_at, is_paused, indexing_latency,
error, enabled, disabled_at, disabled_by, archived, archived_at, archived_by, word_count, tokens, doc_form,
doc_language, doc_metadata, generation, indexing_generation`

// documentColumnsD is documentColumns qualified with the table alias d.
var documentColumnsD = qualify("d", documentColumns)

var documentColumnCount = len(strings.Split(documentColumns, ","))

// documentUpdate is the UPDATE that writes a document row, and documentUpdateArgs the indexes
// into documentValues of its SET values. Every column is written except id and dataset_id (the
// key) and created_at and created_by, which never change.
var documentUpdate, documentUpdateArgs = func() (string, []int) {
	var (
		set  []string
		args []int
	)
	for i, c := range strings.Split(documentColumns, ",") {
		c = strings.TrimSpace(c)
		switch c {
		case "id", "dataset_id", "created_at", "created_by":
			continue
		}
		set = append(set, c+" = ?")
		args = append(args, i)
	}
	return "UPDATE documents SET " + strings.Join(set, ", ") + " WHERE id = ? AND dataset_id = ?", args
}()

var validIndexingStatus = map[string]bool{
	IndexingWaiting: true, IndexingParsing: true, IndexingCleaning: true, IndexingSplitting: true,
	IndexingIndexing: true, IndexingCompleted: true, IndexingError: true, IndexingPaused: true,
}

// prepare checks d and normalises its timestamps to what will read back. It returns the
// doc_metadata column value.
func (d *Document) prepare() (sql.NullString, error) {
	switch {
	case d.ID == "" || d.DatasetID == "":
		return sql.NullString{}, errors.New("missing id or dataset id")
	case d.Name == "":
		return sql.NullString{}, errors.New("missing name")
	case !validIndexingStatus[d.IndexingStatus]:
		return sql.NullString{}, fmt.Errorf("unknown indexing status %q", d.IndexingStatus)
	case d.Position < 0 || d.Generation < 0 || d.IndexingGeneration < 0:
		return sql.NullString{}, errors.New("negative position or generation")
	}
	meta, err := nullJSON(d.DocMetadata)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("doc metadata: %w", err)
	}
	d.CreatedAt = fromUnix(d.CreatedAt.Unix())
	d.UpdatedAt = fromUnix(nowOr(d.UpdatedAt).Unix())
	for _, t := range []**time.Time{&d.ProcessingStartedAt, &d.ParsingCompletedAt, &d.CleaningCompletedAt, &d.SplittingCompletedAt,
		&d.CompletedAt, &d.PausedAt, &d.StoppedAt, &d.DisabledAt, &d.ArchivedAt} {
		*t = truncUnix(*t)
	}
	return meta, nil
}

// documentValues returns d's column values in documentColumns order.
func documentValues(d Document, meta sql.NullString) []any {
	return []any{d.ID, d.DatasetID, d.Position, d.DataSourceType, nullString(d.UploadFileID), nullString(d.ProcessRuleID), d.Batch, d.Name,
		d.CreatedFrom, d.CreatedBy, d.CreatedAt.Unix(), d.UpdatedAt.Unix(), d.IndexingStatus, nullUnix(d.ProcessingStartedAt), nullUnix(d.ParsingCompletedAt),
		nullUnix(d.CleaningCompletedAt), nullUnix(d.SplittingCompletedAt), nullUnix(d.CompletedAt), nullUnix(d.PausedAt), nullUnix(d.StoppedAt), d.IsPaused, d.IndexingLatency,
		nullString(d.Error), d.Enabled, nullUnix(d.DisabledAt), nullString(d.DisabledBy), d.Archived, nullUnix(d.ArchivedAt), nullString(d.ArchivedBy), d.WordCount, d.Tokens, d.DocForm,
		d.DocLanguage, meta, d.Generation, d.IndexingGeneration}
}

// CreateDocument stores a new document and returns it as stored. ID defaults to [NewID],
// IndexingStatus to IndexingWaiting, CreatedAt to now and UpdatedAt to CreatedAt. A Position of
// 0 becomes one more than the dataset's highest, chosen in the same transaction (which locks the
// dataset row, so concurrent creations get distinct positions). Enabled is stored as given. An
// unknown dataset gives an error wrapping [ErrNotFound].
func (s *Store) CreateDocument(ctx context.Context, d Document) (Document, error) {
	if d.ID == "" {
		d.ID = NewID()
	}
	if d.IndexingStatus == "" {
		d.IndexingStatus = IndexingWaiting
	}
	d.CreatedAt = nowOr(d.CreatedAt)
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = d.CreatedAt
	}
	meta, err := d.prepare()
	if err != nil {
		return Document{}, fmt.Errorf("store: create document: %w", err)
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		// A no-op write: it checks the dataset exists and, on PostgreSQL, holds its row lock
		// until commit, which serialises position assignment per dataset. SQLite transactions
		// already hold the database write lock.
		res, err := q.ExecContext(ctx, s.Rebind("UPDATE datasets SET index_version = index_version WHERE id = ?"), d.DatasetID)
		if err != nil {
			return err
		}
		if err := affectedOne(res, "dataset "+d.DatasetID); err != nil {
			return err
		}
		if d.Position == 0 {
			if err := q.QueryRowContext(ctx, s.Rebind("SELECT COALESCE(MAX(position), 0) + 1 FROM documents WHERE dataset_id = ?"),
				d.DatasetID).Scan(&d.Position); err != nil {
				return err
			}
		}
		_, err = q.ExecContext(ctx, s.Rebind("INSERT INTO documents ("+documentColumns+") VALUES ("+placeholders(documentColumnCount)+")"),
			documentValues(d, meta)...)
		return mapError(err)
	})
	if err != nil {
		return Document{}, fmt.Errorf("store: create document: %w", err)
	}
	return d, nil
}

// Document returns the document of the dataset with the given id, or an error wrapping
// [ErrNotFound].
func (s *Store) Document(ctx context.Context, datasetID, id string) (Document, error) {
	d, err := scanDocument(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+documentColumns+" FROM documents WHERE id = ? AND dataset_id = ?"), id, datasetID))
	if err != nil {
		return Document{}, lookupErr(err, "document %s", id)
	}
	return d, nil
}

// DocumentByName returns the newest (created_at, then position) enabled document of the dataset
// with data source upload_file and exactly this name, or an error wrapping [ErrNotFound].
func (s *Store) DocumentByName(ctx context.Context, datasetID, name string) (Document, error) {
	d, err := scanDocument(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+documentColumns+` FROM documents
WHERE dataset_id = ? AND name = ? AND enabled AND data_source_type = 'upload_file'
ORDER BY created_at DESC, position DESC, id DESC LIMIT 1`), datasetID, name))
	if err != nil {
		return Document{}, lookupErr(err, "document named %q", name)
	}
	return d, nil
}

// ListDocuments returns one page of the dataset's documents, newest first (created_at DESC,
// position DESC), and how many match in all. Keyword matches a substring of the name,
// case-insensitively (on SQLite only ASCII letters fold); DisplayStatus is one of the Display*
// constants. Page and Limit must be positive.
func (s *Store) ListDocuments(ctx context.Context, q DocumentQuery) (items []Document, total int, err error) {
	if q.DatasetID == "" {
		return nil, 0, errors.New("store: list documents: missing dataset id")
	}
	if q.Page < 1 || q.Limit < 1 {
		return nil, 0, fmt.Errorf("store: list documents: page %d and limit %d must be positive", q.Page, q.Limit)
	}
	where := " WHERE dataset_id = ?"
	args := []any{q.DatasetID}
	if q.Keyword != "" {
		where += " AND name " + s.ilike() + " ? ESCAPE '\\'"
		args = append(args, containsPattern(q.Keyword))
	}
	if q.DisplayStatus != "" {
		cond, ok := displayStatusWhere[q.DisplayStatus]
		if !ok {
			return nil, 0, fmt.Errorf("store: list documents: unknown display status %q", q.DisplayStatus)
		}
		where += " AND " + cond
	}
	err = s.snapshot(ctx, func(tx execer) error {
		if err := tx.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM documents"+where), args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, s.Rebind("SELECT "+documentColumns+" FROM documents"+where+
			" ORDER BY created_at DESC, position DESC, id DESC LIMIT ? OFFSET ?"), append(args, pageWindow(q.Page, q.Limit)...)...)
		if err != nil {
			return err
		}
		items, err = collect(rows, scanDocument)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: list documents: %w", err)
	}
	return items, total, nil
}

// UpdateDocument writes every column of the document row except id, dataset_id, created_at and
// created_by. A zero UpdatedAt is stored as now. When the write changes whether the document's
// chunks are searchable (enabled, archived or the served generation), the dataset's index
// version moves on. An unknown document gives an error wrapping [ErrNotFound].
func (s *Store) UpdateDocument(ctx context.Context, d Document) error {
	meta, err := d.prepare()
	if err != nil {
		return fmt.Errorf("store: update document %s: %w", d.ID, err)
	}
	err = s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		changed, err := s.writeDocument(ctx, q, d, meta)
		if err != nil || !changed {
			return err
		}
		return s.bumpIndexVersion(ctx, q, d.DatasetID, IndexScope{DocumentID: d.ID})
	})
	if err != nil {
		return fmt.Errorf("store: update document %s: %w", d.ID, err)
	}
	return nil
}

// writeDocument updates the row of a prepared document through q, a transaction. changed
// reports whether the write may change which of its chunks are searchable (enabled, archived or
// the served generation changed); the caller then bumps the index version.
func (s *Store) writeDocument(ctx context.Context, q execer, d Document, meta sql.NullString) (changed bool, err error) {
	var (
		enabled, archived bool
		generation        int
	)
	err = q.QueryRowContext(ctx, s.Rebind("SELECT enabled, archived, generation FROM documents WHERE id = ? AND dataset_id = ?"),
		d.ID, d.DatasetID).Scan(&enabled, &archived, &generation)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("document %s: %w", d.ID, ErrNotFound)
	}
	if err != nil {
		return false, err
	}
	values := documentValues(d, meta)
	args := make([]any, 0, len(documentUpdateArgs)+2)
	for _, i := range documentUpdateArgs {
		args = append(args, values[i])
	}
	if _, err := q.ExecContext(ctx, s.Rebind(documentUpdate), append(args, d.ID, d.DatasetID)...); err != nil {
		return false, mapError(err)
	}
	return enabled != d.Enabled || archived != d.Archived || generation != d.Generation, nil
}

// DeleteDocument removes the document, its segments and child chunks of every generation and
// their index rows in one transaction, and moves the dataset's index version on. An unknown
// document gives an error wrapping [ErrNotFound].
func (s *Store) DeleteDocument(ctx context.Context, datasetID, id string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		var n int
		if err := q.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM documents WHERE id = ? AND dataset_id = ?"), id, datasetID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		if err := s.deleteIndexRows(ctx, q, "document_id = ?", id); err != nil {
			return err
		}
		for _, stmt := range []string{
			"DELETE FROM child_chunks WHERE document_id = ?",
			"DELETE FROM document_segments WHERE document_id = ?",
			"DELETE FROM documents WHERE id = ?",
		} {
			if _, err := q.ExecContext(ctx, s.Rebind(stmt), id); err != nil {
				return err
			}
		}
		return s.bumpIndexVersion(ctx, q, datasetID, IndexScope{DocumentID: id})
	})
	if err != nil {
		return fmt.Errorf("store: delete document %s: %w", id, err)
	}
	return nil
}

// DocumentsByBatch returns the dataset's documents created in one indexing batch, by position.
func (s *Store) DocumentsByBatch(ctx context.Context, datasetID, batch string) ([]Document, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT "+documentColumns+
		" FROM documents WHERE dataset_id = ? AND batch = ? ORDER BY position, id"), datasetID, batch)
	if err != nil {
		return nil, fmt.Errorf("store: documents of batch %s: %w", batch, err)
	}
	docs, err := collect(rows, scanDocument)
	if err != nil {
		return nil, fmt.Errorf("store: documents of batch %s: %w", batch, err)
	}
	return docs, nil
}

// UnfinishedDocuments returns the documents of every dataset whose indexing neither completed
// nor failed and is not paused, oldest first (created_at, then id).
func (s *Store) UnfinishedDocuments(ctx context.Context) ([]Document, error) {
	// The first condition repeats documents_unfinished's WHERE word for word, so SQLite can
	// use that partial index.
	rows, err := s.conn().QueryContext(ctx, "SELECT "+documentColumns+
		" FROM documents WHERE indexing_status NOT IN ('completed', 'error') AND NOT is_paused ORDER BY created_at, id")
	if err != nil {
		return nil, fmt.Errorf("store: unfinished documents: %w", err)
	}
	docs, err := collect(rows, scanDocument)
	if err != nil {
		return nil, fmt.Errorf("store: unfinished documents: %w", err)
	}
	return docs, nil
}

// DocumentStats returns, for each of the given documents, the number of segments of its served
// generation (any status) and the sum of their hit counts. Unknown ids are left out.
func (s *Store) DocumentStats(ctx context.Context, ids []string) (map[string]DocumentStats, error) {
	out := make(map[string]DocumentStats, len(ids))
	for _, chunk := range chunks(ids) {
		ph, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT d.id, COUNT(s.id), COALESCE(CAST(SUM(s.hit_count) AS BIGINT), 0)
FROM documents d LEFT JOIN document_segments s ON s.document_id = d.id AND s.generation = d.generation
WHERE d.id IN (`+ph+`) GROUP BY d.id`), args...)
		if err != nil {
			return nil, fmt.Errorf("store: document stats: %w", err)
		}
		err = eachRow(rows, func(r scanner) error {
			var (
				id string
				st DocumentStats
			)
			if err := r.Scan(&id, &st.SegmentCount, &st.HitCount); err != nil {
				return err
			}
			out[id] = st
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: document stats: %w", err)
		}
	}
	return out, nil
}

// IndexingProgress returns, for each of the given documents, how many segments of its indexing
// generation exist and how many of them have completed, leaving out segments in status
// re_segment (see [IndexingProgress]). Unknown ids are left out.
func (s *Store) IndexingProgress(ctx context.Context, ids []string) (map[string]IndexingProgress, error) {
	out := make(map[string]IndexingProgress, len(ids))
	for _, chunk := range chunks(ids) {
		ph, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT d.id, COUNT(s.completed_at), COUNT(s.id)
FROM documents d LEFT JOIN document_segments s
	ON s.document_id = d.id AND s.generation = d.indexing_generation AND s.status <> 're_segment'
WHERE d.id IN (`+ph+`) GROUP BY d.id`), args...)
		if err != nil {
			return nil, fmt.Errorf("store: indexing progress: %w", err)
		}
		err = eachRow(rows, func(r scanner) error {
			var (
				id string
				p  IndexingProgress
			)
			if err := r.Scan(&id, &p.Completed, &p.Total); err != nil {
				return err
			}
			out[id] = p
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: indexing progress: %w", err)
		}
	}
	return out, nil
}

// documentRow receives a documents row (see datasetRow).
type documentRow struct {
	d                                                      Document
	uploadFile, processRule, errText, disabledBy, archived sql.NullString
	meta                                                   sql.NullString
	created, updated                                       int64
	started, parsed, cleaned, split, completed, paused     sql.NullInt64
	stopped, disabledAt, archivedAt                        sql.NullInt64
}

func (r *documentRow) dest() []any {
	d := &r.d
	return []any{&d.ID, &d.DatasetID, &d.Position, &d.DataSourceType, &r.uploadFile, &r.processRule, &d.Batch, &d.Name,
		&d.CreatedFrom, &d.CreatedBy, &r.created, &r.updated, &d.IndexingStatus, &r.started, &r.parsed,
		&r.cleaned, &r.split, &r.completed, &r.paused, &r.stopped, &d.IsPaused, &d.IndexingLatency,
		&r.errText, &d.Enabled, &r.disabledAt, &r.disabledBy, &d.Archived, &r.archivedAt, &r.archived, &d.WordCount, &d.Tokens, &d.DocForm,
		&d.DocLanguage, &r.meta, &d.Generation, &d.IndexingGeneration}
}

func (r *documentRow) value() Document {
	d := r.d
	d.UploadFileID, d.ProcessRuleID, d.Error = r.uploadFile.String, r.processRule.String, r.errText.String
	d.DisabledBy, d.ArchivedBy = r.disabledBy.String, r.archived.String
	d.DocMetadata = rawJSON(r.meta)
	d.CreatedAt, d.UpdatedAt = fromUnix(r.created), fromUnix(r.updated)
	d.ProcessingStartedAt, d.ParsingCompletedAt = fromNullUnix(r.started), fromNullUnix(r.parsed)
	d.CleaningCompletedAt, d.SplittingCompletedAt = fromNullUnix(r.cleaned), fromNullUnix(r.split)
	d.CompletedAt, d.PausedAt, d.StoppedAt = fromNullUnix(r.completed), fromNullUnix(r.paused), fromNullUnix(r.stopped)
	d.DisabledAt, d.ArchivedAt = fromNullUnix(r.disabledAt), fromNullUnix(r.archivedAt)
	return d
}

func scanDocument(r scanner) (Document, error) {
	var row documentRow
	if err := r.Scan(row.dest()...); err != nil {
		return Document{}, err
	}
	return row.value(), nil
}
