package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TagTypeKnowledge is the type of the tags datasets are bound to; it is the only type stored.
const TagTypeKnowledge = "knowledge"

// Metadata field types (Dify's values).
const (
	MetadataTypeString = "string"
	MetadataTypeNumber = "number"
	MetadataTypeTime   = "time"
)

// ---- Tags ----

// tagSelect reads a tag with its binding count; scan with scanTag.
const tagSelect = "SELECT t.id, t.name, t.type, t.created_by, t.created_at," +
	" (SELECT COUNT(*) FROM tag_bindings b WHERE b.tag_id = t.id) FROM tags t"

// CreateTag stores a tag and returns it as stored, with BindingCount 0. ID defaults to
// [NewID], Type to [TagTypeKnowledge] (the only type accepted) and CreatedAt to now. A name
// already taken gives an error wrapping [ErrConflict].
func (s *Store) CreateTag(ctx context.Context, t Tag) (Tag, error) {
	if t.ID == "" {
		t.ID = NewID()
	}
	if t.Type == "" {
		t.Type = TagTypeKnowledge
	}
	switch {
	case strings.TrimSpace(t.Name) == "":
		return Tag{}, errors.New("store: create tag: missing name")
	case t.Type != TagTypeKnowledge:
		return Tag{}, fmt.Errorf("store: create tag: unknown type %q", t.Type)
	}
	t.CreatedAt = fromUnix(nowOr(t.CreatedAt).Unix())
	t.BindingCount = 0
	_, err := s.exec(ctx, "INSERT INTO tags (id, name, type, created_by, created_at) VALUES (?, ?, ?, ?, ?)",
		t.ID, t.Name, t.Type, nullString(t.CreatedBy), t.CreatedAt.Unix())
	if err != nil {
		return Tag{}, fmt.Errorf("store: create tag %q: %w", t.Name, err)
	}
	return t, nil
}

// Tag returns the knowledge tag with the given id and its binding count, or an error wrapping
// [ErrNotFound].
func (s *Store) Tag(ctx context.Context, id string) (Tag, error) {
	t, err := s.tag(ctx, s.conn(), id)
	if err != nil {
		return Tag{}, fmt.Errorf("store: tag %s: %w", id, err)
	}
	return t, nil
}

func (s *Store) tag(ctx context.Context, q execer, id string) (Tag, error) {
	t, err := scanTag(q.QueryRowContext(ctx, s.Rebind(tagSelect+" WHERE t.id = ? AND t.type = ?"), id, TagTypeKnowledge))
	if errors.Is(err, sql.ErrNoRows) {
		return Tag{}, ErrNotFound
	}
	return t, err
}

// ListTags returns every knowledge tag, newest first (created_at, then id, both descending),
// each with its binding count. A non-empty keyword keeps the tags whose name contains it,
// ignoring case.
func (s *Store) ListTags(ctx context.Context, keyword string) ([]Tag, error) {
	rows, err := s.conn().QueryContext(ctx, s.Rebind(tagSelect+" WHERE t.type = ? ORDER BY t.created_at DESC, t.id DESC"), TagTypeKnowledge)
	if err != nil {
		return nil, fmt.Errorf("store: list tags: %w", err)
	}
	tags, err := collect(rows, scanTag)
	if err != nil {
		return nil, fmt.Errorf("store: list tags: %w", err)
	}
	// The keyword is matched here rather than with LIKE/ILIKE: SQLite folds the case of ASCII
	// letters only, PostgreSQL of every letter, and a workspace has few tags.
	keyword = strings.ToLower(keyword)
	return slices.DeleteFunc(tags, func(t Tag) bool { return !strings.Contains(strings.ToLower(t.Name), keyword) }), nil
}

// RenameTag renames a knowledge tag and returns it with its binding count. An unknown id gives
// an error wrapping [ErrNotFound], a name already taken one wrapping [ErrConflict].
func (s *Store) RenameTag(ctx context.Context, id, name string) (Tag, error) {
	if strings.TrimSpace(name) == "" {
		return Tag{}, fmt.Errorf("store: rename tag %s: missing name", id)
	}
	var out Tag
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		res, err := s.inTx(tx).ExecContext(ctx, s.Rebind("UPDATE tags SET name = ? WHERE id = ? AND type = ?"), name, id, TagTypeKnowledge)
		if err != nil {
			return mapError(err)
		}
		if err := affectedOne(res, "tag"); err != nil {
			return err
		}
		out, err = s.tag(ctx, s.inTx(tx), id)
		return err
	})
	if err != nil {
		return Tag{}, fmt.Errorf("store: rename tag %s: %w", id, err)
	}
	return out, nil
}

// DeleteTag deletes a knowledge tag and its bindings. An unknown id gives an error wrapping
// [ErrNotFound].
func (s *Store) DeleteTag(ctx context.Context, id string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		if _, err := q.ExecContext(ctx, s.Rebind("DELETE FROM tag_bindings WHERE tag_id = ?"), id); err != nil {
			return err
		}
		res, err := q.ExecContext(ctx, s.Rebind("DELETE FROM tags WHERE id = ? AND type = ?"), id, TagTypeKnowledge)
		if err != nil {
			return err
		}
		return affectedOne(res, "tag")
	})
	if err != nil {
		return fmt.Errorf("store: delete tag %s: %w", id, err)
	}
	return nil
}

// BindTags binds the knowledge tags to the dataset, by the given account ("" for none). Tag
// ids that name no knowledge tag, and bindings already present, are skipped. The dataset is
// not checked.
func (s *Store) BindTags(ctx context.Context, tagIDs []string, datasetID, by string) error {
	if datasetID == "" {
		return errors.New("store: bind tags: missing dataset id")
	}
	if len(tagIDs) == 0 {
		return nil
	}
	now := time.Now().Unix()
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		// INSERT … SELECT from tags writes a row only for an existing knowledge tag; the WHERE
		// clause also keeps SQLite from reading ON CONFLICT as part of a join.
		insert := s.Rebind(`INSERT INTO tag_bindings (id, tag_id, target_id, created_by, created_at)
SELECT ?, id, ?, ?, ? FROM tags WHERE id = ? AND type = ?
ON CONFLICT (tag_id, target_id) DO NOTHING`)
		for _, tagID := range tagIDs {
			// A tag listed twice conflicts with itself and is skipped like any present binding.
			if _, err := s.inTx(tx).ExecContext(ctx, insert, NewID(), datasetID, nullString(by), now, tagID, TagTypeKnowledge); err != nil {
				return mapError(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: bind tags to %s: %w", datasetID, err)
	}
	return nil
}

// UnbindTags removes the bindings of the tags to the dataset. Tags not bound to it are
// skipped.
func (s *Store) UnbindTags(ctx context.Context, tagIDs []string, datasetID string) error {
	for _, chunk := range chunks(tagIDs) {
		in, args := inList(chunk)
		_, err := s.exec(ctx, "DELETE FROM tag_bindings WHERE target_id = ? AND tag_id IN ("+in+")", append([]any{datasetID}, args...)...)
		if err != nil {
			return fmt.Errorf("store: unbind tags from %s: %w", datasetID, err)
		}
	}
	return nil
}

// DatasetTags returns the knowledge tags bound to each of the given datasets, keyed by dataset
// id, each list ordered by name (byte order, then id) and each tag with its binding count.
// Datasets without tags are absent from the map.
func (s *Store) DatasetTags(ctx context.Context, datasetIDs []string) (map[string][]Tag, error) {
	out := make(map[string][]Tag)
	for _, chunk := range chunks(datasetIDs) {
		in, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT bt.target_id, t.id, t.name, t.type, t.created_by, t.created_at,"+
			" (SELECT COUNT(*) FROM tag_bindings b WHERE b.tag_id = t.id)"+
			" FROM tag_bindings bt JOIN tags t ON t.id = bt.tag_id WHERE t.type = ? AND bt.target_id IN ("+in+")"),
			append([]any{TagTypeKnowledge}, args...)...)
		if err != nil {
			return nil, fmt.Errorf("store: dataset tags: %w", err)
		}
		err = eachRow(rows, func(r scanner) error {
			var (
				target  string
				by      sql.NullString
				created int64
				t       Tag
			)
			if err := r.Scan(&target, &t.ID, &t.Name, &t.Type, &by, &created, &t.BindingCount); err != nil {
				return err
			}
			t.CreatedBy, t.CreatedAt = by.String, fromUnix(created)
			out[target] = append(out[target], t)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: dataset tags: %w", err)
		}
	}
	// Sorted here, not in SQL: PostgreSQL would order names by its locale, SQLite by bytes.
	for _, tags := range out {
		slices.SortFunc(tags, func(a, b Tag) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	return out, nil
}

func scanTag(r scanner) (Tag, error) {
	var (
		t       Tag
		by      sql.NullString
		created int64
	)
	if err := r.Scan(&t.ID, &t.Name, &t.Type, &by, &created, &t.BindingCount); err != nil {
		return Tag{}, err
	}
	t.CreatedBy, t.CreatedAt = by.String, fromUnix(created)
	return t, nil
}

// deleteDatasetExtras deletes the dataset's tag bindings and metadata fields; DeleteDataset
// calls it inside its transaction.
func (s *Store) deleteDatasetExtras(ctx context.Context, q execer, datasetID string) error {
	if _, err := q.ExecContext(ctx, s.Rebind("DELETE FROM tag_bindings WHERE target_id = ?"), datasetID); err != nil {
		return fmt.Errorf("delete tag bindings: %w", err)
	}
	if _, err := q.ExecContext(ctx, s.Rebind("DELETE FROM dataset_metadata_fields WHERE dataset_id = ?"), datasetID); err != nil {
		return fmt.Errorf("delete metadata fields: %w", err)
	}
	return nil
}

// ---- Metadata fields ----

const metadataFieldColumns = "id, dataset_id, name, type, created_by, created_at, updated_at"

// CreateMetadataField stores a custom metadata field of a dataset and returns it as stored.
// ID defaults to [NewID] and CreatedAt to now; UpdatedAt is set to CreatedAt. Type must be
// one of the MetadataType* constants. An unknown dataset gives an error wrapping
// [ErrNotFound], a name the dataset already has one wrapping [ErrConflict].
func (s *Store) CreateMetadataField(ctx context.Context, f MetadataField) (MetadataField, error) {
	if f.ID == "" {
		f.ID = NewID()
	}
	switch {
	case f.DatasetID == "":
		return MetadataField{}, errors.New("store: create metadata field: missing dataset id")
	case strings.TrimSpace(f.Name) == "":
		return MetadataField{}, errors.New("store: create metadata field: missing name")
	case !validMetadataType(f.Type):
		return MetadataField{}, fmt.Errorf("store: create metadata field: unknown type %q", f.Type)
	}
	f.CreatedAt = fromUnix(nowOr(f.CreatedAt).Unix())
	f.UpdatedAt = f.CreatedAt
	_, err := s.exec(ctx, "INSERT INTO dataset_metadata_fields ("+metadataFieldColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		f.ID, f.DatasetID, f.Name, f.Type, nullString(f.CreatedBy), f.CreatedAt.Unix(), f.UpdatedAt.Unix())
	if isForeignKeyViolation(err) {
		err = fmt.Errorf("dataset %s: %w", f.DatasetID, ErrNotFound)
	}
	if err != nil {
		return MetadataField{}, fmt.Errorf("store: create metadata field %q: %w", f.Name, err)
	}
	return f, nil
}

func validMetadataType(t string) bool {
	switch t {
	case MetadataTypeString, MetadataTypeNumber, MetadataTypeTime:
		return true
	}
	return false
}

// MetadataField returns a metadata field of the dataset, or an error wrapping [ErrNotFound].
func (s *Store) MetadataField(ctx context.Context, datasetID, id string) (MetadataField, error) {
	f, err := s.metadataField(ctx, s.conn(), datasetID, id)
	if err != nil {
		return MetadataField{}, fmt.Errorf("store: metadata field %s: %w", id, err)
	}
	return f, nil
}

func (s *Store) metadataField(ctx context.Context, q execer, datasetID, id string) (MetadataField, error) {
	f, err := scanMetadataField(q.QueryRowContext(ctx, s.Rebind("SELECT "+metadataFieldColumns+
		" FROM dataset_metadata_fields WHERE dataset_id = ? AND id = ?"), datasetID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return MetadataField{}, ErrNotFound
	}
	return f, err
}

// ListMetadataFields returns the dataset's metadata fields in creation order (created_at, then
// id).
func (s *Store) ListMetadataFields(ctx context.Context, datasetID string) ([]MetadataField, error) {
	fields, err := s.listMetadataFields(ctx, s.conn(), datasetID)
	if err != nil {
		return nil, fmt.Errorf("store: list metadata fields: %w", err)
	}
	return fields, nil
}

func (s *Store) listMetadataFields(ctx context.Context, q execer, datasetID string) ([]MetadataField, error) {
	rows, err := q.QueryContext(ctx, s.Rebind("SELECT "+metadataFieldColumns+
		" FROM dataset_metadata_fields WHERE dataset_id = ? ORDER BY created_at, id"), datasetID)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanMetadataField)
}

// MetadataFieldCounts returns, for every metadata field of the dataset, how many of its
// documents have a value for it (their doc_metadata object has the field's name as a key),
// keyed by field id. Fields no document uses count 0.
func (s *Store) MetadataFieldCounts(ctx context.Context, datasetID string) (map[string]int, error) {
	var (
		fields []MetadataField
		docs   []docMetadataRow
	)
	err := s.snapshot(ctx, func(q execer) error {
		var err error
		if fields, err = s.listMetadataFields(ctx, q, datasetID); err != nil || len(fields) == 0 {
			return err
		}
		docs, err = s.docMetadata(ctx, q, datasetID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: metadata field counts: %w", err)
	}
	// Counted in Go, like the rewrites below, so that both engines agree on what a key is.
	perName := make(map[string]int, len(fields))
	for _, f := range fields {
		perName[f.Name] = 0
	}
	for _, d := range docs {
		members, ok, err := parseJSONObject(d.metadata)
		if err != nil {
			return nil, fmt.Errorf("store: metadata field counts: document %s: %w", d.id, err)
		}
		if !ok {
			continue
		}
		seen := make(map[string]bool, len(members))
		for _, m := range members {
			if _, isField := perName[m.key]; isField && !seen[m.key] {
				seen[m.key] = true
				perName[m.key]++
			}
		}
	}
	out := make(map[string]int, len(fields))
	for _, f := range fields {
		out[f.ID] = perName[f.Name]
	}
	return out, nil
}

// RenameMetadataField renames a metadata field of the dataset and the key of its values in
// the dataset's documents, in one transaction, and returns the field. Other keys keep their
// values and order. An unknown field gives an error wrapping [ErrNotFound], a name the
// dataset already has one wrapping [ErrConflict].
func (s *Store) RenameMetadataField(ctx context.Context, datasetID, id, name string) (MetadataField, error) {
	if strings.TrimSpace(name) == "" {
		return MetadataField{}, fmt.Errorf("store: rename metadata field %s: missing name", id)
	}
	var out MetadataField
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		old, err := s.metadataField(ctx, q, datasetID, id)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.Rebind("UPDATE dataset_metadata_fields SET name = ?, updated_at = ? WHERE id = ?"),
			name, time.Now().Unix(), id); err != nil {
			return mapError(err)
		}
		if old.Name != name {
			err := s.rewriteDocMetadata(ctx, q, datasetID, func(ms []jsonMember) ([]jsonMember, bool) {
				if !slices.ContainsFunc(ms, func(m jsonMember) bool { return m.key == old.Name }) {
					return nil, false
				}
				// A stale value already under the new name gives way to the renamed one.
				ms = slices.DeleteFunc(ms, func(m jsonMember) bool { return m.key == name })
				for i := range ms {
					if ms[i].key == old.Name {
						ms[i].key = name
					}
				}
				return ms, true
			})
			if err != nil {
				return err
			}
		}
		out, err = s.metadataField(ctx, q, datasetID, id)
		return err
	})
	if err != nil {
		return MetadataField{}, fmt.Errorf("store: rename metadata field %s: %w", id, err)
	}
	return out, nil
}

// DeleteMetadataField deletes a metadata field of the dataset and its values from the
// dataset's documents, in one transaction. An unknown field gives an error wrapping
// [ErrNotFound].
func (s *Store) DeleteMetadataField(ctx context.Context, datasetID, id string) error {
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		q := s.inTx(tx)
		f, err := s.metadataField(ctx, q, datasetID, id)
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.Rebind("DELETE FROM dataset_metadata_fields WHERE id = ?"), id); err != nil {
			return err
		}
		return s.rewriteDocMetadata(ctx, q, datasetID, func(ms []jsonMember) ([]jsonMember, bool) {
			n := len(ms)
			ms = slices.DeleteFunc(ms, func(m jsonMember) bool { return m.key == f.Name })
			return ms, len(ms) != n
		})
	})
	if err != nil {
		return fmt.Errorf("store: delete metadata field %s: %w", id, err)
	}
	return nil
}

func scanMetadataField(r scanner) (MetadataField, error) {
	var (
		f                MetadataField
		by               sql.NullString
		created, updated int64
	)
	if err := r.Scan(&f.ID, &f.DatasetID, &f.Name, &f.Type, &by, &created, &updated); err != nil {
		return MetadataField{}, err
	}
	f.CreatedBy, f.CreatedAt, f.UpdatedAt = by.String, fromUnix(created), fromUnix(updated)
	return f, nil
}

// docMetadataRow is one document's stored doc_metadata text.
type docMetadataRow struct {
	id, metadata string
}

// docMetadata reads the doc_metadata of the dataset's documents that have one.
func (s *Store) docMetadata(ctx context.Context, q execer, datasetID string) ([]docMetadataRow, error) {
	rows, err := q.QueryContext(ctx, s.Rebind("SELECT id, doc_metadata FROM documents WHERE dataset_id = ? AND doc_metadata IS NOT NULL"), datasetID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (docMetadataRow, error) {
		var d docMetadataRow
		err := r.Scan(&d.id, &d.metadata)
		return d, err
	})
}

// rewriteDocMetadata applies edit to the doc_metadata object of each of the dataset's
// documents and writes back those edit reports changed. Values that are not JSON objects are
// left alone.
//
// The rewrite is done in Go, not with SQLite's json_* or PostgreSQL's jsonb functions, so that
// it behaves the same on both engines and leaves the other keys' bytes and order as stored.
func (s *Store) rewriteDocMetadata(ctx context.Context, q execer, datasetID string, edit func([]jsonMember) ([]jsonMember, bool)) error {
	docs, err := s.docMetadata(ctx, q, datasetID)
	if err != nil {
		return fmt.Errorf("read document metadata: %w", err)
	}
	update := s.Rebind("UPDATE documents SET doc_metadata = ? WHERE id = ?")
	for _, d := range docs {
		members, ok, err := parseJSONObject(d.metadata)
		if err != nil {
			return fmt.Errorf("document %s: metadata: %w", d.id, err)
		}
		if !ok {
			continue
		}
		members, changed := edit(members)
		if !changed {
			continue
		}
		text, err := formatJSONObject(members)
		if err != nil {
			return fmt.Errorf("document %s: metadata: %w", d.id, err)
		}
		if _, err := q.ExecContext(ctx, update, text, d.id); err != nil {
			return fmt.Errorf("document %s: update metadata: %w", d.id, err)
		}
	}
	return nil
}

// jsonMember is one key and value of a JSON object.
type jsonMember struct {
	key   string
	value json.RawMessage
}

// parseJSONObject returns the members of a JSON object in document order, values as the raw
// bytes stored. ok is false when text holds valid JSON that is not an object (null, say).
func parseJSONObject(text string) (members []jsonMember, ok bool, err error) {
	if !json.Valid([]byte(text)) {
		return nil, false, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	tok, err := dec.Token()
	if err != nil {
		return nil, false, err
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return nil, false, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		key, isKey := tok.(string)
		if !isKey {
			return nil, false, fmt.Errorf("object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, err
		}
		members = append(members, jsonMember{key: key, value: v})
	}
	return members, true, nil
}

// formatJSONObject writes members as a compact JSON object, in order.
func formatJSONObject(members []jsonMember) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(m.key); err != nil {
			return "", err
		}
		b.Truncate(b.Len() - 1) // Encode ends with a newline
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// ---- Retriever resources ----

const retrieverResourceColumns = "id, message_id, position, dataset_id, dataset_name, document_id, document_name, data_source_type," +
	" segment_id, segment_position, index_node_hash, content, score, hit_count, word_count, created_at"

// AddRetrieverResources stores the resources cited by chat messages, all or none. ID defaults
// to [NewID] and CreatedAt to now. An unknown message gives an error wrapping [ErrNotFound].
func (s *Store) AddRetrieverResources(ctx context.Context, rs []RetrieverResource) error {
	if len(rs) == 0 {
		return nil
	}
	rs, err := prepareRetrieverResources(rs)
	if err == nil {
		err = s.WithTx(ctx, func(tx *sql.Tx) error { return s.insertRetrieverResources(ctx, s.inTx(tx), rs, false) })
	}
	if err != nil {
		return fmt.Errorf("store: add retriever resources: %w", err)
	}
	return nil
}

// prepareRetrieverResources checks rs and returns copies with their defaults filled in.
func prepareRetrieverResources(rs []RetrieverResource) ([]RetrieverResource, error) {
	out := make([]RetrieverResource, len(rs))
	now := time.Now()
	for i, r := range rs {
		if r.MessageID == "" {
			return nil, fmt.Errorf("resource %d: missing message id", i)
		}
		if r.ID == "" {
			r.ID = NewID()
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		out[i] = r
	}
	return out, nil
}

// insertRetrieverResources writes prepared resources through q, which must be a transaction.
// With ignoreExisting, a resource whose id is already stored is skipped, so that writing the
// same resources again is harmless.
func (s *Store) insertRetrieverResources(ctx context.Context, q execer, rs []RetrieverResource, ignoreExisting bool) error {
	query := "INSERT INTO retriever_resources (" + retrieverResourceColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	if ignoreExisting {
		query += " ON CONFLICT (id) DO NOTHING"
	}
	insert := s.Rebind(query)
	for _, r := range rs {
		_, err := q.ExecContext(ctx, insert, r.ID, r.MessageID, r.Position, r.DatasetID, r.DatasetName,
			r.DocumentID, r.DocumentName, r.DataSourceType, r.SegmentID, r.SegmentPosition, r.IndexNodeHash, r.Content,
			r.Score, r.HitCount, r.WordCount, r.CreatedAt.Unix())
		if isForeignKeyViolation(err) {
			return fmt.Errorf("message %s: %w", r.MessageID, ErrNotFound)
		}
		if err != nil {
			return mapError(err)
		}
	}
	return nil
}

// RetrieverResources returns the resources of the given messages keyed by message id, each
// list ordered by position (then id). Messages without resources are absent from the map.
func (s *Store) RetrieverResources(ctx context.Context, messageIDs []string) (map[string][]RetrieverResource, error) {
	out := make(map[string][]RetrieverResource)
	for _, chunk := range chunks(messageIDs) {
		in, args := inList(chunk)
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT "+retrieverResourceColumns+
			" FROM retriever_resources WHERE message_id IN ("+in+") ORDER BY message_id, position, id"), args...)
		if err != nil {
			return nil, fmt.Errorf("store: retriever resources: %w", err)
		}
		err = eachRow(rows, func(sc scanner) error {
			var (
				r       RetrieverResource
				created int64
			)
			if err := sc.Scan(&r.ID, &r.MessageID, &r.Position, &r.DatasetID, &r.DatasetName, &r.DocumentID, &r.DocumentName,
				&r.DataSourceType, &r.SegmentID, &r.SegmentPosition, &r.IndexNodeHash, &r.Content, &r.Score, &r.HitCount,
				&r.WordCount, &created); err != nil {
				return err
			}
			r.CreatedAt = fromUnix(created)
			out[r.MessageID] = append(out[r.MessageID], r)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: retriever resources: %w", err)
		}
	}
	return out, nil
}
