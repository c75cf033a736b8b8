package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultKeywordNumber is the number of keywords economy indexing extracts per chunk when a
// dataset does not say (Dify's default).
const DefaultKeywordNumber = 10

const datasetColumns = `id, name, description, provider, permission, data_source_type, indexing_technique,
embedding_model, embedding_model_provider, retrieval_model, doc_form, built_in_field_enabled, enable_api,
keyword_number, created_by, updated_by, created_at, updated_at, external_knowledge_api_id, external_knowledge_id`

// datasetColumnsDS is datasetColumns qualified with the table alias ds.
var datasetColumnsDS = qualify("ds", datasetColumns)

const processRuleColumns = "id, dataset_id, mode, rules, created_by, created_at"

// CreateDataset stores a new dataset and returns it as stored. ID defaults to [NewID], Provider
// to DatasetProviderVendor, Permission to PermissionOnlyMe, KeywordNumber to
// DefaultKeywordNumber, CreatedAt to now and UpdatedAt to CreatedAt. A name already taken gives
// an error wrapping [ErrConflict].
func (s *Store) CreateDataset(ctx context.Context, d Dataset) (Dataset, error) {
	if d.ID == "" {
		d.ID = NewID()
	}
	if d.Provider == "" {
		d.Provider = DatasetProviderVendor
	}
	if d.Permission == "" {
		d.Permission = PermissionOnlyMe
	}
	if d.KeywordNumber == 0 {
		d.KeywordNumber = DefaultKeywordNumber
	}
	d.CreatedAt = fromUnix(nowOr(d.CreatedAt).Unix())
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = d.CreatedAt
	}
	d.UpdatedAt = fromUnix(d.UpdatedAt.Unix())
	retrieval, err := d.validate()
	if err != nil {
		return Dataset{}, fmt.Errorf("store: create dataset: %w", err)
	}
	_, err = s.exec(ctx, "INSERT INTO datasets ("+datasetColumns+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.Name, d.Description, d.Provider, d.Permission, nullString(d.DataSourceType), nullString(d.IndexingTechnique),
		nullString(d.EmbeddingModel), nullString(d.EmbeddingModelProvider), retrieval, nullString(d.DocForm),
		d.BuiltInFieldEnabled, d.EnableAPI, d.KeywordNumber, d.CreatedBy, nullString(d.UpdatedBy),
		d.CreatedAt.Unix(), d.UpdatedAt.Unix(), nullString(d.ExternalKnowledgeAPIID), nullString(d.ExternalKnowledgeID))
	if isForeignKeyViolation(err) {
		err = fmt.Errorf("external knowledge api %s: %w", d.ExternalKnowledgeAPIID, ErrNotFound)
	}
	if err != nil {
		return Dataset{}, fmt.Errorf("store: create dataset %q: %w", d.Name, err)
	}
	return d, nil
}

// validate checks d before it is written and returns the retrieval_model column value.
func (d Dataset) validate() (sql.NullString, error) {
	switch {
	case d.Name == "":
		return sql.NullString{}, errors.New("missing name")
	case d.Permission != PermissionOnlyMe && d.Permission != PermissionAllTeamMembers && d.Permission != PermissionPartialMembers:
		return sql.NullString{}, fmt.Errorf("unknown permission %q", d.Permission)
	case d.IndexingTechnique != "" && d.IndexingTechnique != TechniqueHighQuality && d.IndexingTechnique != TechniqueEconomy:
		return sql.NullString{}, fmt.Errorf("unknown indexing technique %q", d.IndexingTechnique)
	case d.KeywordNumber < 0:
		return sql.NullString{}, fmt.Errorf("negative keyword number %d", d.KeywordNumber)
	case (d.Provider == DatasetProviderExternal) != (d.ExternalKnowledgeAPIID != ""):
		return sql.NullString{}, errors.New("an external knowledge base, and only one, is bound to an external knowledge api")
	}
	retrieval, err := nullJSON(d.RetrievalModel)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("retrieval model: %w", err)
	}
	return retrieval, nil
}

// Dataset returns the dataset with the given id, or an error wrapping [ErrNotFound].
func (s *Store) Dataset(ctx context.Context, id string) (Dataset, error) {
	d, err := scanDataset(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+datasetColumns+" FROM datasets WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Dataset{}, fmt.Errorf("store: dataset %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Dataset{}, fmt.Errorf("store: dataset %s: %w", id, err)
	}
	return d, nil
}

// DatasetByName returns the dataset with the given name (names are unique, compared exactly),
// or an error wrapping [ErrNotFound].
func (s *Store) DatasetByName(ctx context.Context, name string) (Dataset, error) {
	d, err := scanDataset(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+datasetColumns+" FROM datasets WHERE name = ?"), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Dataset{}, fmt.Errorf("store: dataset named %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Dataset{}, fmt.Errorf("store: dataset named %q: %w", name, err)
	}
	return d, nil
}

// ListDatasets returns one page of datasets, newest first (created_at DESC, then id DESC), and
// how many match in all. Keyword matches a substring of the name, case-insensitively (on SQLite
// only ASCII letters fold); TagIDs keeps datasets bound to any of the tags. Page and Limit must
// be positive.
func (s *Store) ListDatasets(ctx context.Context, q DatasetQuery) (items []Dataset, total int, err error) {
	if q.Page < 1 || q.Limit < 1 {
		return nil, 0, fmt.Errorf("store: list datasets: page %d and limit %d must be positive", q.Page, q.Limit)
	}
	where := " WHERE 1 = 1"
	var args []any
	if q.Keyword != "" {
		where += " AND name " + s.ilike() + " ? ESCAPE '\\'"
		args = append(args, containsPattern(q.Keyword))
	}
	if len(q.TagIDs) > 0 {
		tags := chunks(q.TagIDs)
		if len(tags) > 1 {
			return nil, 0, fmt.Errorf("store: list datasets: more than %d tags", inChunk)
		}
		ph, tagArgs := inList(tags[0])
		where += " AND id IN (SELECT target_id FROM tag_bindings WHERE tag_id IN (" + ph + "))"
		args = append(args, tagArgs...)
	}
	err = s.snapshot(ctx, func(q2 execer) error {
		if err := q2.QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM datasets"+where), args...).Scan(&total); err != nil {
			return err
		}
		rows, err := q2.QueryContext(ctx, s.Rebind("SELECT "+datasetColumns+" FROM datasets"+where+
			" ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"), append(args, pageWindow(q.Page, q.Limit)...)...)
		if err != nil {
			return err
		}
		items, err = collect(rows, scanDataset)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: list datasets: %w", err)
	}
	return items, total, nil
}

// UpdateDataset writes every column of the dataset row except id, created_at, created_by and
// the index version. A zero UpdatedAt is stored as now. An unknown id gives an error wrapping
// [ErrNotFound], a name taken by another dataset one wrapping [ErrConflict].
func (s *Store) UpdateDataset(ctx context.Context, d Dataset) error {
	retrieval, err := d.validate()
	if err != nil {
		return fmt.Errorf("store: update dataset %s: %w", d.ID, err)
	}
	res, err := s.exec(ctx, `UPDATE datasets SET name = ?, description = ?, provider = ?, permission = ?,
data_source_type = ?, indexing_technique = ?, embedding_model = ?, embedding_model_provider = ?, retrieval_model = ?,
doc_form = ?, built_in_field_enabled = ?, enable_api = ?, keyword_number = ?, updated_by = ?, updated_at = ?,
external_knowledge_api_id = ?, external_knowledge_id = ?
WHERE id = ?`,
		d.Name, d.Description, d.Provider, d.Permission,
		nullString(d.DataSourceType), nullString(d.IndexingTechnique), nullString(d.EmbeddingModel), nullString(d.EmbeddingModelProvider), retrieval,
		nullString(d.DocForm), d.BuiltInFieldEnabled, d.EnableAPI, d.KeywordNumber, nullString(d.UpdatedBy), nowOr(d.UpdatedAt).Unix(),
		nullString(d.ExternalKnowledgeAPIID), nullString(d.ExternalKnowledgeID),
		d.ID)
	if isForeignKeyViolation(err) {
		err = fmt.Errorf("external knowledge api %s: %w", d.ExternalKnowledgeAPIID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: update dataset %s: %w", d.ID, err)
	}
	return affectedOne(res, "store: update dataset "+d.ID)
}

// DeleteDataset removes the dataset and everything under it in one transaction: index rows,
// child chunks, segments, documents, process rules, and what deleteDatasetExtras removes
// (metadata fields, tag bindings). An unknown id gives an error wrapping [ErrNotFound].
func (s *Store) DeleteDataset(ctx context.Context, id string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		if err := s.deleteIndexRows(ctx, q, "dataset_id = ?", id); err != nil {
			return err
		}
		s.noteIndexChange(tx, id)
		for _, stmt := range []string{
			"DELETE FROM index_changes WHERE dataset_id = ?",
			"DELETE FROM child_chunks WHERE document_id IN (SELECT id FROM documents WHERE dataset_id = ?)",
			"DELETE FROM document_segments WHERE document_id IN (SELECT id FROM documents WHERE dataset_id = ?)",
			"DELETE FROM documents WHERE dataset_id = ?",
			"DELETE FROM dataset_process_rules WHERE dataset_id = ?",
		} {
			if _, err := q.ExecContext(ctx, s.Rebind(stmt), id); err != nil {
				return err
			}
		}
		if err := s.deleteDatasetExtras(ctx, q, id); err != nil {
			return err
		}
		res, err := q.ExecContext(ctx, s.Rebind("DELETE FROM datasets WHERE id = ?"), id)
		if err != nil {
			return err
		}
		return affectedOne(res, "dataset "+id)
	})
	if err != nil {
		return fmt.Errorf("store: delete dataset %s: %w", id, err)
	}
	return nil
}

// DatasetStats returns the document counts of each of the given datasets. Every requested id
// is in the map; one without documents (or unknown) has zero counts.
func (s *Store) DatasetStats(ctx context.Context, ids []string) (map[string]DatasetStats, error) {
	out := make(map[string]DatasetStats, len(ids))
	for _, chunk := range chunks(ids) {
		for _, id := range chunk {
			out[id] = DatasetStats{}
		}
		ph, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind(`SELECT dataset_id, COUNT(*),
COALESCE(SUM(CASE WHEN indexing_status = 'completed' AND enabled AND NOT archived THEN 1 ELSE 0 END), 0),
COALESCE(CAST(SUM(word_count) AS BIGINT), 0)
FROM documents WHERE dataset_id IN (`+ph+`) GROUP BY dataset_id`), args...)
		if err != nil {
			return nil, fmt.Errorf("store: dataset stats: %w", err)
		}
		err = eachRow(rows, func(r scanner) error {
			var (
				id string
				st DatasetStats
			)
			if err := r.Scan(&id, &st.DocumentCount, &st.AvailableDocumentCount, &st.WordCount); err != nil {
				return err
			}
			out[id] = st
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: dataset stats: %w", err)
		}
	}
	return out, nil
}

// CreateProcessRule stores a process rule and returns it as stored. ID defaults to [NewID] and
// CreatedAt to now. An unknown dataset gives an error wrapping [ErrNotFound].
func (s *Store) CreateProcessRule(ctx context.Context, r ProcessRule) (ProcessRule, error) {
	if r.DatasetID == "" || r.Mode == "" {
		return ProcessRule{}, errors.New("store: create process rule: dataset id and mode are required")
	}
	rules, err := nullJSON(r.Rules)
	if err != nil {
		return ProcessRule{}, fmt.Errorf("store: create process rule: rules: %w", err)
	}
	if r.ID == "" {
		r.ID = NewID()
	}
	r.CreatedAt = fromUnix(nowOr(r.CreatedAt).Unix())
	_, err = s.exec(ctx, "INSERT INTO dataset_process_rules ("+processRuleColumns+") VALUES (?, ?, ?, ?, ?, ?)",
		r.ID, r.DatasetID, r.Mode, rules, r.CreatedBy, r.CreatedAt.Unix())
	if isForeignKeyViolation(err) {
		err = fmt.Errorf("dataset %s: %w", r.DatasetID, ErrNotFound)
	}
	if err != nil {
		return ProcessRule{}, fmt.Errorf("store: create process rule: %w", err)
	}
	return r, nil
}

// ProcessRule returns the process rule with the given id, or an error wrapping [ErrNotFound].
func (s *Store) ProcessRule(ctx context.Context, id string) (ProcessRule, error) {
	r, err := scanProcessRule(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+processRuleColumns+" FROM dataset_process_rules WHERE id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return ProcessRule{}, fmt.Errorf("store: process rule %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return ProcessRule{}, fmt.Errorf("store: process rule %s: %w", id, err)
	}
	return r, nil
}

// LatestProcessRule returns the dataset's newest process rule (by created_at, then id), or an
// error wrapping [ErrNotFound] when it has none.
func (s *Store) LatestProcessRule(ctx context.Context, datasetID string) (ProcessRule, error) {
	r, err := scanProcessRule(s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+processRuleColumns+
		" FROM dataset_process_rules WHERE dataset_id = ? ORDER BY created_at DESC, id DESC LIMIT 1"), datasetID))
	if errors.Is(err, sql.ErrNoRows) {
		return ProcessRule{}, fmt.Errorf("store: latest process rule of dataset %s: %w", datasetID, ErrNotFound)
	}
	if err != nil {
		return ProcessRule{}, fmt.Errorf("store: latest process rule of dataset %s: %w", datasetID, err)
	}
	return r, nil
}

func scanProcessRule(r scanner) (ProcessRule, error) {
	var (
		p       ProcessRule
		rules   sql.NullString
		created int64
	)
	if err := r.Scan(&p.ID, &p.DatasetID, &p.Mode, &rules, &p.CreatedBy, &created); err != nil {
		return ProcessRule{}, err
	}
	p.Rules = rawJSON(rules)
	p.CreatedAt = fromUnix(created)
	return p, nil
}

// datasetRow receives a datasets row; dest and value split scanning so that a joined query
// (ResolveHits) can scan a dataset among other columns.
type datasetRow struct {
	d                                                               Dataset
	dataSource, technique, model, modelProvider, retrieval, docForm sql.NullString
	updatedBy, externalAPI, externalID                              sql.NullString
	created, updated                                                int64
}

func (r *datasetRow) dest() []any {
	return []any{&r.d.ID, &r.d.Name, &r.d.Description, &r.d.Provider, &r.d.Permission, &r.dataSource, &r.technique,
		&r.model, &r.modelProvider, &r.retrieval, &r.docForm, &r.d.BuiltInFieldEnabled, &r.d.EnableAPI,
		&r.d.KeywordNumber, &r.d.CreatedBy, &r.updatedBy, &r.created, &r.updated, &r.externalAPI, &r.externalID}
}

func (r *datasetRow) value() Dataset {
	d := r.d
	d.DataSourceType, d.IndexingTechnique = r.dataSource.String, r.technique.String
	d.EmbeddingModel, d.EmbeddingModelProvider = r.model.String, r.modelProvider.String
	d.RetrievalModel, d.DocForm, d.UpdatedBy = rawJSON(r.retrieval), r.docForm.String, r.updatedBy.String
	d.CreatedAt, d.UpdatedAt = fromUnix(r.created), fromUnix(r.updated)
	d.ExternalKnowledgeAPIID, d.ExternalKnowledgeID = r.externalAPI.String, r.externalID.String
	return d
}

func scanDataset(r scanner) (Dataset, error) {
	var row datasetRow
	if err := r.Scan(row.dest()...); err != nil {
		return Dataset{}, err
	}
	return row.value(), nil
}

// Helpers shared by the knowledge repositories.

// snapshot runs fn with an execer on one read-only transaction, so that its queries see one
// snapshot of the database (a count and its page, a version and its rows). On SQLite it is a
// deferred transaction and takes no write lock; on PostgreSQL it is REPEATABLE READ.
func (s *Store) snapshot(ctx context.Context, fn func(q execer) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect == DialectPostgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin read transaction: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // read-only: rolling back is ending
	return fn(s.inTx(tx))
}

// ilike is the engine's case-insensitive LIKE. SQLite's LIKE already ignores the case of ASCII
// letters (and only those); PostgreSQL's ILIKE folds every letter.
func (s *Store) ilike() string {
	if s.dialect == DialectPostgres {
		return "ILIKE"
	}
	return "LIKE"
}

// containsPattern is a LIKE pattern (with ESCAPE '\') matching any text that contains kw
// literally.
func containsPattern(kw string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(kw) + "%"
}

// inList returns placeholders and arguments for an IN list of ids, padded (by repeating the
// last id, which IN ignores) to a power of two up to inChunk, so that IN queries reuse a few
// cached statements instead of filling the cache with one text per length.
func inList(ids []string) (string, []any) {
	n := 1
	for n < len(ids) {
		n *= 2
	}
	n = min(n, max(inChunk, len(ids)))
	args := make([]any, n)
	for i := range args {
		args[i] = ids[min(i, len(ids)-1)]
	}
	return placeholders(n), args
}

// nullJSON returns the column value of an optional JSON object: NULL for empty, the bytes
// unchanged otherwise. Invalid JSON is an error.
func nullJSON(v json.RawMessage) (sql.NullString, error) {
	if len(v) == 0 {
		return sql.NullString{}, nil
	}
	if !json.Valid(v) {
		return sql.NullString{}, errors.New("invalid JSON")
	}
	return sql.NullString{String: string(v), Valid: true}, nil
}

// rawJSON is the inverse of nullJSON.
func rawJSON(v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	return json.RawMessage(v.String)
}

// nullUnix is the column value of an optional timestamp.
func nullUnix(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.Unix(), Valid: true}
}

// truncUnix returns t cut to whole seconds in UTC, as it will read back, or nil.
func truncUnix(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := fromUnix(t.Unix())
	return &u
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	var out []T
	err := eachRow(rows, func(r scanner) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// eachRow calls fn for every row and closes rows.
func eachRow(rows *sql.Rows, fn func(scanner) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
