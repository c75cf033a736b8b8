package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/store"
)

// BuiltInFields are the built-in metadata fields, in Dify's order.
var BuiltInFields = []struct{ Name, Type string }{
	{"document_name", "string"}, {"uploader", "string"}, {"upload_date", "time"},
	{"last_update_date", "time"}, {"source", "string"},
}

func isBuiltIn(name string) bool {
	for _, f := range BuiltInFields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// ListTags lists the workspace's knowledge tags.
func (s *Service) ListTags(ctx context.Context, keyword string) ([]store.Tag, error) {
	t, err := s.st.ListTags(ctx, keyword)
	if err != nil {
		return nil, fmt.Errorf("knowledge: list tags: %w", err)
	}
	return t, nil
}

func validTagName(name string) error {
	if n := utf8.RuneCountInString(strings.TrimSpace(name)); n < 1 || n > 50 {
		return invalidParam("Tag name must be between 1 to 50 characters.")
	}
	return nil
}

// CreateTag creates a knowledge tag.
func (s *Service) CreateTag(ctx context.Context, name string) (store.Tag, error) {
	if err := validTagName(name); err != nil {
		return store.Tag{}, err
	}
	t, err := s.st.CreateTag(ctx, store.Tag{Name: strings.TrimSpace(name), Type: "knowledge", CreatedBy: s.account, CreatedAt: s.nowUTC()})
	if errors.Is(err, store.ErrConflict) {
		return store.Tag{}, invalidParam("Tag name already exists")
	}
	if err != nil {
		return store.Tag{}, fmt.Errorf("knowledge: create tag: %w", err)
	}
	return t, nil
}

// RenameTag renames a tag.
func (s *Service) RenameTag(ctx context.Context, id, name string) (store.Tag, error) {
	if err := validTagName(name); err != nil {
		return store.Tag{}, err
	}
	t, err := s.st.RenameTag(ctx, id, strings.TrimSpace(name))
	if errors.Is(err, store.ErrConflict) {
		return store.Tag{}, invalidParam("Tag name already exists")
	}
	if err != nil {
		return store.Tag{}, storeErr(err, notFound("Tag not found."), "rename tag")
	}
	return t, nil
}

// DeleteTag deletes a tag and its bindings.
func (s *Service) DeleteTag(ctx context.Context, id string) error {
	if err := s.st.DeleteTag(ctx, id); err != nil {
		return storeErr(err, notFound("Tag not found."), "delete tag")
	}
	return nil
}

// BindTags binds tags to a dataset; unknown tag ids are ignored.
func (s *Service) BindTags(ctx context.Context, tagIDs []string, datasetID string) error {
	return s.tagBinding(ctx, tagIDs, datasetID, func(id string) error { return s.st.BindTags(ctx, tagIDs, id, s.account) })
}

// UnbindTags removes tag bindings from a dataset.
func (s *Service) UnbindTags(ctx context.Context, tagIDs []string, datasetID string) error {
	return s.tagBinding(ctx, tagIDs, datasetID, func(id string) error { return s.st.UnbindTags(ctx, tagIDs, id) })
}

// tagBinding checks a binding request and applies change to the dataset's id.
func (s *Service) tagBinding(ctx context.Context, tagIDs []string, datasetID string, change func(datasetID string) error) error {
	if len(tagIDs) == 0 {
		return invalidParam("Tag IDs is required.")
	}
	d, err := s.dataset(ctx, datasetID)
	if errors.Is(err, ErrDatasetNotFound) {
		return notFound("Dataset not found")
	}
	if err != nil {
		return err
	}
	if err := change(d.ID); err != nil {
		return fmt.Errorf("knowledge: tag binding: %w", err)
	}
	return nil
}

// DatasetTags lists the tags bound to a dataset.
func (s *Service) DatasetTags(ctx context.Context, datasetID string) ([]store.Tag, error) {
	d, err := s.dataset(ctx, datasetID)
	if err != nil {
		return nil, err
	}
	m, err := s.st.DatasetTags(ctx, []string{d.ID})
	if err != nil {
		return nil, fmt.Errorf("knowledge: dataset tags: %w", err)
	}
	return m[d.ID], nil
}

// MetadataFieldView is a metadata field with the number of documents holding a value.
type MetadataFieldView struct {
	store.MetadataField
	Count int
}

func validMetadataName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return invalidParam("Metadata name cannot be empty.")
	case utf8.RuneCountInString(name) > 255:
		return invalidParam("Metadata name cannot exceed 255 characters.")
	case isBuiltIn(name):
		return invalidParam("Metadata name already exists in Built-in fields.")
	}
	return nil
}

// CreateMetadataField adds a custom metadata field to a dataset.
func (s *Service) CreateMetadataField(ctx context.Context, datasetID, name, typ string) (store.MetadataField, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return store.MetadataField{}, err
	}
	if err := validMetadataName(name); err != nil {
		return store.MetadataField{}, err
	}
	switch typ {
	case "string", "number", "time":
	default:
		return store.MetadataField{}, invalidParam("Invalid metadata type.")
	}
	now := s.nowUTC()
	f, err := s.st.CreateMetadataField(ctx, store.MetadataField{DatasetID: d.ID, Name: name, Type: typ, CreatedBy: s.account, CreatedAt: now, UpdatedAt: now})
	if errors.Is(err, store.ErrConflict) {
		return store.MetadataField{}, invalidParam("Metadata name already exists.")
	}
	if err != nil {
		return store.MetadataField{}, fmt.Errorf("knowledge: create metadata field: %w", err)
	}
	return f, nil
}

// ListMetadataFields lists a dataset's metadata fields with their document counts.
func (s *Service) ListMetadataFields(ctx context.Context, datasetID string) ([]MetadataFieldView, bool, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return nil, false, err
	}
	fields, err := s.st.ListMetadataFields(ctx, d.ID)
	if err != nil {
		return nil, false, fmt.Errorf("knowledge: metadata fields: %w", err)
	}
	counts, err := s.st.MetadataFieldCounts(ctx, d.ID)
	if err != nil {
		return nil, false, fmt.Errorf("knowledge: metadata counts: %w", err)
	}
	out := make([]MetadataFieldView, len(fields))
	for i, f := range fields {
		out[i] = MetadataFieldView{MetadataField: f, Count: counts[f.ID]}
	}
	return out, d.BuiltInFieldEnabled, nil
}

// RenameMetadataField renames a metadata field.
func (s *Service) RenameMetadataField(ctx context.Context, datasetID, id, name string) (store.MetadataField, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return store.MetadataField{}, err
	}
	if err := validMetadataName(name); err != nil {
		return store.MetadataField{}, err
	}
	f, err := s.st.RenameMetadataField(ctx, d.ID, id, name)
	if errors.Is(err, store.ErrConflict) {
		return store.MetadataField{}, invalidParam("Metadata name already exists.")
	}
	if err != nil {
		return store.MetadataField{}, storeErr(err, notFound("Metadata not found."), "rename metadata field")
	}
	return f, nil
}

// DeleteMetadataField deletes a metadata field and its values.
func (s *Service) DeleteMetadataField(ctx context.Context, datasetID, id string) error {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return err
	}
	if err := s.st.DeleteMetadataField(ctx, d.ID, id); err != nil {
		return storeErr(err, notFound("Metadata not found."), "delete metadata field")
	}
	return nil
}

// SetBuiltInFields turns the built-in metadata fields on (action "enable") or off ("disable").
func (s *Service) SetBuiltInFields(ctx context.Context, datasetID, action string) error {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return err
	}
	switch action {
	case "enable":
		d.BuiltInFieldEnabled = true
	case "disable":
		d.BuiltInFieldEnabled = false
	default:
		return invalidParam("Invalid action.")
	}
	d.UpdatedAt = s.nowUTC()
	if err := s.st.UpdateDataset(ctx, d); err != nil {
		return fmt.Errorf("knowledge: built-in fields: %w", err)
	}
	return nil
}

// MetadataValue is one value of a documents-metadata operation.
type MetadataValue struct {
	ID    string
	Name  string
	Value any
}

// DocumentMetadataOp sets one document's metadata values.
type DocumentMetadataOp struct {
	DocumentID    string
	Values        []MetadataValue
	PartialUpdate bool
}

// SetDocumentsMetadata writes documents' custom metadata values: the listed values replace all
// of a document's values, or are merged into them with PartialUpdate.
func (s *Service) SetDocumentsMetadata(ctx context.Context, datasetID string, ops []DocumentMetadataOp) error {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return err
	}
	fields, err := s.st.ListMetadataFields(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("knowledge: metadata fields: %w", err)
	}
	byID := map[string]store.MetadataField{}
	for _, f := range fields {
		byID[f.ID] = f
	}
	for _, op := range ops {
		doc, err := s.document(ctx, d.ID, op.DocumentID)
		if err != nil {
			return invalidParam("Document not found.")
		}
		_, err = s.modifyDocument(ctx, d.ID, doc.ID, func(doc *store.Document) (bool, error) {
			meta := map[string]any{}
			if op.PartialUpdate && len(doc.DocMetadata) > 0 {
				_ = json.Unmarshal(doc.DocMetadata, &meta)
			}
			for _, v := range op.Values {
				f, ok := byID[v.ID]
				if !ok {
					return false, invalidParam(fmt.Sprintf("Metadata %s not found.", v.ID))
				}
				switch v.Value.(type) {
				case nil, string, float64:
				default:
					return false, invalidParam(fmt.Sprintf("Metadata %s: value must be a string, a number or null.", f.Name))
				}
				meta[f.Name] = v.Value
			}
			doc.DocMetadata, _ = json.Marshal(meta)
			doc.UpdatedAt = s.nowUTC()
			return true, nil
		})
		if errors.Is(err, ErrDocumentNotFound) {
			return invalidParam("Document not found.")
		}
		if err != nil {
			return err
		}
	}
	return nil
}
