package knowledge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/store"
)

// Doc forms.
const (
	DocFormText         = "text_model"
	DocFormHierarchical = "hierarchical_model"
	DocFormQA           = "qa_model"
)

// DocumentConfig is the configuration of a create or update request (the JSON body of the text
// routes, the `data` part of the file routes). Nil members were absent or null.
type DocumentConfig struct {
	IndexingTechnique      *string         `json:"indexing_technique"`
	DocForm                *string         `json:"doc_form"`
	DocLanguage            *string         `json:"doc_language"`
	ProcessRule            json.RawMessage `json:"process_rule"`
	RetrievalModel         json.RawMessage `json:"retrieval_model"`
	EmbeddingModel         *string         `json:"embedding_model"`
	EmbeddingModelProvider *string         `json:"embedding_model_provider"`
}

// Source is a document's new content: an uploaded file, or text.
type Source struct {
	// Filename is the file's name; for text, the document name, kept as sent.
	Filename    string
	ContentType string
	Body        io.Reader
	// Text marks a text source (not size-checked, stored as <name>.txt).
	Text bool
	// Stored is a file already stored (a pipeline upload): the document is made from it, and
	// Body is not read.
	Stored *store.UploadFile
	// Batch is the indexing batch a created document joins; a new one when empty.
	Batch string
}

// DocumentView is a document with what its API shapes derive.
type DocumentView struct {
	store.Document
	Upload             *store.UploadFile
	Stats              store.DocumentStats
	ProcessRule        *store.ProcessRule
	DatasetProcessRule *store.ProcessRule
	MetadataFields     []store.MetadataField
	BuiltInFields      bool
	Dataset            store.Dataset
}

// DisplayStatus derives Dify's display_status ("" for null).
func DisplayStatus(d store.Document) string {
	switch {
	case d.IsPaused && d.IndexingStatus != store.IndexingCompleted && d.IndexingStatus != store.IndexingError:
		return "paused"
	case d.IndexingStatus == store.IndexingWaiting:
		return "queuing"
	case d.IndexingStatus == store.IndexingParsing, d.IndexingStatus == store.IndexingCleaning,
		d.IndexingStatus == store.IndexingSplitting, d.IndexingStatus == store.IndexingIndexing:
		return "indexing"
	case d.IndexingStatus == store.IndexingError:
		return "error"
	case d.IndexingStatus == store.IndexingCompleted && !d.Archived && d.Enabled:
		return "available"
	case d.IndexingStatus == store.IndexingCompleted && !d.Archived:
		return "disabled"
	case d.IndexingStatus == store.IndexingCompleted:
		return "archived"
	}
	return ""
}

// NewBatch returns a batch id as Dify makes them: local time YYYYmmddHHMMSS and 6 random digits.
func (s *Service) NewBatch() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	return s.now().Format("20060102150405") + fmt.Sprintf("%06d", n.Int64())
}

// resolveConfig applies Dify's rules for the technique, doc_form and process rule of a create
// or update, setting the dataset's technique and embedding model on first use. It returns the
// process rule to store (nil: keep keptRuleID, or on a create, where keptRuleID is "", reuse the
// dataset's latest rule) and the doc form. Nothing is stored: every refusal comes before the
// caller stores anything.
func (s *Service) resolveConfig(ctx context.Context, d *store.Dataset, cfg DocumentConfig, keptRuleID string, requireRule bool) (rule *segment.ProcessRule, docForm string, err error) {
	if d.IndexingTechnique == "" {
		if cfg.IndexingTechnique == nil || *cfg.IndexingTechnique == "" {
			return nil, "", ErrTechniqueRequired
		}
		switch *cfg.IndexingTechnique {
		case store.TechniqueEconomy, store.TechniqueHighQuality:
		default:
			return nil, "", invalidParam("Indexing technique is invalid.")
		}
	}
	docForm = DocFormText
	if d.DocForm != "" {
		docForm = d.DocForm
	}
	if cfg.DocForm != nil && *cfg.DocForm != "" {
		docForm = *cfg.DocForm
	}
	switch docForm {
	case DocFormText, DocFormHierarchical:
	case DocFormQA:
		return nil, "", invalidParam("The qa_model doc form needs an LLM to generate questions, which Parley does not run for knowledge bases; use text_model or hierarchical_model.")
	default:
		return nil, "", ErrInvalidDocForm
	}
	if len(cfg.ProcessRule) > 0 && string(cfg.ProcessRule) != "null" {
		r, err := segment.ParseProcessRule(cfg.ProcessRule)
		if err == nil {
			// A rule the splitter cannot use (a max_tokens outside 50 to
			// INDEXING_MAX_SEGMENTATION_TOKENS_LENGTH, an overlap over the chunk size, a
			// hierarchical rule without subchunk_segmentation) fails only at indexing in
			// Dify, with the same messages; it is refused here instead.
			err = segment.Splitter{MaxSegmentLength: s.maxSeg}.Check(r)
		}
		if err != nil {
			var ve *segment.ValidationError
			if errors.As(err, &ve) {
				return nil, "", invalidParam(ve.Message)
			}
			return nil, "", invalidParam(err.Error())
		}
		rule = &r
	} else if requireRule || docForm == DocFormHierarchical {
		var kept store.ProcessRule
		if keptRuleID != "" {
			kept, err = s.st.ProcessRule(ctx, keptRuleID)
		} else {
			kept, err = s.st.LatestProcessRule(ctx, d.ID)
		}
		switch {
		case errors.Is(err, store.ErrNotFound) && requireRule:
			return nil, "", ErrProcessRuleNeeded
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, "", fmt.Errorf("knowledge: process rule: %w", err)
		default:
			if err := checkFormMode(docForm, kept.Mode); err != nil {
				return nil, "", err
			}
		}
	}
	if rule != nil {
		if err := checkFormMode(docForm, rule.Mode); err != nil {
			return nil, "", err
		}
	}
	if d.IndexingTechnique == "" {
		d.IndexingTechnique = *cfg.IndexingTechnique
		if d.IndexingTechnique == store.TechniqueHighQuality {
			p, m := "", ""
			if cfg.EmbeddingModel != nil && cfg.EmbeddingModelProvider != nil {
				p, m = *cfg.EmbeddingModelProvider, *cfg.EmbeddingModel
			}
			if p == "" || m == "" {
				var ok bool
				if p, m, ok = s.defaultEmbedding(); !ok {
					return nil, "", ErrNoEmbeddingModel
				}
			}
			d.EmbeddingModelProvider, d.EmbeddingModel = providerName(p), m
			if len(cfg.RetrievalModel) > 0 && string(cfg.RetrievalModel) != "null" && d.RetrievalModel == nil {
				rm, err := parseRetrievalModel(cfg.RetrievalModel, 2)
				if err != nil {
					return nil, "", err
				}
				d.RetrievalModel, _ = json.Marshal(rm)
			}
		}
	}
	if d.IndexingTechnique == store.TechniqueHighQuality {
		rm, _ := parseRetrievalModel(d.RetrievalModel, 2)
		if err := s.checkEmbedding(d.EmbeddingModelProvider, d.EmbeddingModel, rm); err != nil {
			return nil, "", err
		}
	}
	return rule, docForm, nil
}

// checkFormMode refuses a hierarchical_model document whose process rule is not hierarchical:
// its indexing could only fail (see build).
func checkFormMode(docForm, mode string) error {
	if docForm == DocFormHierarchical && mode != segment.ModeHierarchical {
		return invalidParam(fmt.Sprintf("The hierarchical_model doc form needs a hierarchical process rule, not %q.", mode))
	}
	return nil
}

// checkSource refuses a file the upload would refuse for its name, and a file the extractor
// cannot read, before anything is stored.
func checkSource(src Source) error {
	if src.Text {
		// The name is the document's, kept as sent; Dify takes an empty one, but a document
		// nobody can tell apart in a list is a mistake worth refusing.
		if strings.TrimSpace(src.Filename) == "" {
			return invalidParam("name is required")
		}
		return nil
	}
	if err := files.CheckName(src.Filename); err != nil {
		return err
	}
	if !extract.Supported(src.Filename) {
		return files.ErrUnsupportedType
	}
	return nil
}

func (s *Service) storeSource(ctx context.Context, src Source) (store.UploadFile, error) {
	if src.Stored != nil {
		return *src.Stored, nil
	}
	name := src.Filename
	if src.Text {
		// Dify's upload_text keeps the name as sent, cut to 200 characters.
		name = truncateRunes(name, 200)
	}
	return s.files.UploadDocument(ctx, files.DocumentUpload{Filename: name, ContentType: src.ContentType,
		Body: src.Body, CreatedBy: s.account, NoLimit: src.Text, Text: src.Text})
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// CreateDocument adds a document from src and queues its indexing. A document of the same name
// already in the dataset (enabled, from a file) is re-pointed to the new content and re-indexed
// instead, keeping its id and position, as Dify does.
func (s *Service) CreateDocument(ctx context.Context, datasetID string, cfg DocumentConfig, src Source) (DocumentView, string, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return DocumentView{}, "", err
	}
	if err := checkSource(src); err != nil {
		return DocumentView{}, "", err
	}
	rule, docForm, err := s.resolveConfig(ctx, &d, cfg, "", true)
	if err != nil {
		return DocumentView{}, "", err
	}
	up, err := s.storeSource(ctx, src)
	if err != nil {
		return DocumentView{}, "", err
	}
	ruleID, err := s.saveRule(ctx, d.ID, rule)
	if err != nil {
		return DocumentView{}, "", err
	}
	if d.DataSourceType == "" {
		d.DataSourceType = "upload_file"
	}
	if d.DocForm == "" {
		d.DocForm = docForm
	}
	d.UpdatedAt = s.nowUTC()
	if err := s.st.UpdateDataset(ctx, d); err != nil {
		return DocumentView{}, "", fmt.Errorf("knowledge: update dataset: %w", err)
	}
	batch := src.Batch
	if batch == "" {
		batch = s.NewBatch()
	}
	now := s.nowUTC()
	lang := "English"
	if cfg.DocLanguage != nil && *cfg.DocLanguage != "" {
		lang = *cfg.DocLanguage
	}
	doc, err := s.st.DocumentByName(ctx, d.ID, up.Name)
	switch {
	case err == nil:
		// The document may be being indexed: replaceContent stops that run, which would
		// otherwise go on with the old file and write it back.
		doc, err = s.replaceContent(ctx, d.ID, doc.ID, func(doc *store.Document) error {
			doc.UploadFileID = up.ID
			doc.Batch = batch
			doc.ProcessRuleID = ruleID
			doc.DocForm = docForm
			doc.DocLanguage = lang
			doc.UpdatedAt = now
			return nil
		})
		if err != nil {
			return DocumentView{}, "", err
		}
	case errors.Is(err, store.ErrNotFound):
		doc, err = s.st.CreateDocument(ctx, store.Document{DatasetID: d.ID, DataSourceType: "upload_file",
			UploadFileID: up.ID, ProcessRuleID: ruleID, Batch: batch, Name: up.Name, CreatedFrom: "api",
			CreatedBy: s.account, CreatedAt: now, UpdatedAt: now, IndexingStatus: store.IndexingWaiting,
			Enabled: true, DocForm: docForm, DocLanguage: lang})
		if err != nil {
			return DocumentView{}, "", fmt.Errorf("knowledge: create document: %w", err)
		}
		s.queue(ctx, doc, false)
	default:
		return DocumentView{}, "", fmt.Errorf("knowledge: find document: %w", err)
	}
	v, err := s.documentView(ctx, d, doc)
	return v, doc.Batch, err
}

// replaceContent applies change to the document's current row under its lock, puts it back to
// waiting, writes it and queues its indexing in place of any run queued or running for it.
func (s *Service) replaceContent(ctx context.Context, datasetID, id string, change func(doc *store.Document) error) (store.Document, error) {
	unlock := s.lockDoc(id)
	defer unlock()
	doc, err := s.st.Document(ctx, datasetID, id)
	if err != nil {
		return doc, storeErr(err, ErrDocumentNotFound, "document")
	}
	if err := change(&doc); err != nil {
		return doc, err
	}
	resetIndexing(&doc)
	if err := s.st.UpdateDocument(ctx, doc); err != nil {
		return doc, fmt.Errorf("knowledge: update document: %w", err)
	}
	s.queue(ctx, doc, true)
	return doc, nil
}

// modifyDocument applies change to the document's current row under its lock and writes it
// back unless change reports no change, so that concurrent writers (an indexing job, another
// request) do not undo each other's changes. It returns the row as it now is.
func (s *Service) modifyDocument(ctx context.Context, datasetID, id string, change func(doc *store.Document) (bool, error)) (store.Document, error) {
	unlock := s.lockDoc(id)
	defer unlock()
	doc, err := s.st.Document(ctx, datasetID, id)
	if err != nil {
		return doc, storeErr(err, ErrDocumentNotFound, "document")
	}
	changed, err := change(&doc)
	if err != nil || !changed {
		return doc, err
	}
	if err := s.st.UpdateDocument(ctx, doc); err != nil {
		return doc, fmt.Errorf("knowledge: update document: %w", err)
	}
	return doc, nil
}

// resetIndexing puts a document back to waiting with its indexing timestamps cleared. Its new
// content starts with no interrupted attempt: the next one builds the generation after the
// served one, clearing what an earlier attempt left there.
func resetIndexing(doc *store.Document) {
	doc.IndexingStatus = store.IndexingWaiting
	doc.IndexingGeneration = doc.Generation
	doc.ProcessingStartedAt, doc.ParsingCompletedAt, doc.CleaningCompletedAt = nil, nil, nil
	doc.SplittingCompletedAt, doc.CompletedAt, doc.StoppedAt, doc.PausedAt = nil, nil, nil, nil
	doc.IsPaused = false
	doc.Error = ""
	doc.IndexingLatency = 0
}

func (s *Service) saveRule(ctx context.Context, datasetID string, rule *segment.ProcessRule) (string, error) {
	if rule == nil {
		r, err := s.st.LatestProcessRule(ctx, datasetID)
		if err != nil {
			return "", fmt.Errorf("knowledge: process rule: %w", err)
		}
		return r.ID, nil
	}
	var rules json.RawMessage
	if rule.Mode != segment.ModeAutomatic && rule.Rules != nil {
		rules, _ = json.Marshal(rule.Rules)
	}
	r, err := s.st.CreateProcessRule(ctx, store.ProcessRule{DatasetID: datasetID, Mode: rule.Mode, Rules: rules,
		CreatedBy: s.account, CreatedAt: s.nowUTC()})
	if err != nil {
		return "", fmt.Errorf("knowledge: save process rule: %w", err)
	}
	return r.ID, nil
}

// UpdateDocument replaces a document's content (src, when not nil) and/or its configuration and
// re-indexes it. Only an available document can be updated. The response keeps the document's
// batch. Until the new chunks are indexed, searches keep seeing the old ones.
func (s *Service) UpdateDocument(ctx context.Context, datasetID, documentID string, cfg DocumentConfig, src *Source) (DocumentView, string, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return DocumentView{}, "", err
	}
	doc, err := s.document(ctx, d.ID, documentID)
	if err != nil {
		return DocumentView{}, "", err
	}
	if DisplayStatus(doc) != "available" {
		return DocumentView{}, "", ErrNotAvailable
	}
	if src != nil {
		if err := checkSource(*src); err != nil {
			return DocumentView{}, "", err
		}
	}
	cfg.IndexingTechnique = nil // updates always use the dataset's technique
	rule, docForm, err := s.resolveConfig(ctx, &d, cfg, doc.ProcessRuleID, false)
	if err != nil {
		return DocumentView{}, "", err
	}
	var up *store.UploadFile
	if src != nil {
		u, err := s.storeSource(ctx, *src)
		if err != nil {
			return DocumentView{}, "", err
		}
		up = &u
	}
	ruleID := ""
	if rule != nil {
		if ruleID, err = s.saveRule(ctx, d.ID, rule); err != nil {
			return DocumentView{}, "", err
		}
	}
	doc, err = s.replaceContent(ctx, d.ID, doc.ID, func(doc *store.Document) error {
		// Checked again on the current row: the document may have changed since.
		if DisplayStatus(*doc) != "available" {
			return ErrNotAvailable
		}
		if up != nil {
			doc.UploadFileID = up.ID
			doc.Name = up.Name
			if src.Text {
				doc.Name = truncateRunes(src.Filename, 200)
			}
		}
		if ruleID != "" {
			doc.ProcessRuleID = ruleID
		}
		doc.DocForm = docForm
		if cfg.DocLanguage != nil && *cfg.DocLanguage != "" {
			doc.DocLanguage = *cfg.DocLanguage
		}
		doc.UpdatedAt = s.nowUTC()
		return nil
	})
	if err != nil {
		return DocumentView{}, "", err
	}
	v, err := s.documentView(ctx, d, doc)
	return v, doc.Batch, err
}

func (s *Service) document(ctx context.Context, datasetID, id string) (store.Document, error) {
	if !isUUID(id) {
		return store.Document{}, ErrDocumentNotFound
	}
	doc, err := s.st.Document(ctx, datasetID, strings.ToLower(id))
	if err != nil {
		return store.Document{}, storeErr(err, ErrDocumentNotFound, "document")
	}
	return doc, nil
}

// GetDocument returns one document.
func (s *Service) GetDocument(ctx context.Context, datasetID, documentID string) (DocumentView, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return DocumentView{}, err
	}
	doc, err := s.document(ctx, d.ID, documentID)
	if err != nil {
		return DocumentView{}, err
	}
	return s.documentView(ctx, d, doc)
}

// ListDocuments returns a page of a dataset's documents.
func (s *Service) ListDocuments(ctx context.Context, datasetID string, q store.DocumentQuery) ([]DocumentView, int, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return nil, 0, err
	}
	q.DatasetID = d.ID
	docs, total, err := s.st.ListDocuments(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("knowledge: list documents: %w", err)
	}
	views, err := s.documentViews(ctx, d, docs)
	return views, total, err
}

// DeleteDocument deletes a document and its chunks. Dify refuses to delete a document being
// indexed (document_indexing); here its indexing is stopped first (its extraction process
// killed), so a document whose indexing hangs can always be deleted.
func (s *Service) DeleteDocument(ctx context.Context, datasetID, documentID string) error {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return err
	}
	doc, err := s.document(ctx, d.ID, documentID)
	if errors.Is(err, ErrDocumentNotFound) {
		return notFound("Document Not Exists.")
	}
	if err != nil {
		return err
	}
	unlock := s.lockDoc(doc.ID)
	defer unlock()
	if doc, err = s.st.Document(ctx, d.ID, doc.ID); err != nil {
		return storeErr(err, notFound("Document Not Exists."), "document")
	}
	if doc.Archived {
		return ErrArchived
	}
	s.stopRun(doc.ID, errDocumentDeleted)
	if err := s.st.DeleteDocument(ctx, d.ID, doc.ID); err != nil {
		return storeErr(err, notFound("Document Not Exists."), "delete document")
	}
	return nil
}

// IndexingStatus is one document's entry of GET …/{batch}/indexing-status.
type IndexingStatus struct {
	store.Document
	Progress store.IndexingProgress
}

// BatchStatus returns the indexing status of the documents of a batch.
func (s *Service) BatchStatus(ctx context.Context, datasetID, batch string) ([]IndexingStatus, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return nil, err
	}
	docs, err := s.st.DocumentsByBatch(ctx, d.ID, batch)
	if err != nil {
		return nil, fmt.Errorf("knowledge: batch: %w", err)
	}
	if len(docs) == 0 {
		return nil, notFound("Documents not found.")
	}
	return s.statuses(ctx, docs)
}

func (s *Service) statuses(ctx context.Context, docs []store.Document) ([]IndexingStatus, error) {
	ids := make([]string, len(docs))
	for i, doc := range docs {
		ids[i] = doc.ID
	}
	prog, err := s.st.IndexingProgress(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("knowledge: progress: %w", err)
	}
	out := make([]IndexingStatus, len(docs))
	for i, doc := range docs {
		if doc.IsPaused {
			doc.IndexingStatus = store.IndexingPaused
		}
		out[i] = IndexingStatus{Document: doc, Progress: prog[doc.ID]}
	}
	return out, nil
}

// Status actions.
const (
	ActionEnable    = "enable"
	ActionDisable   = "disable"
	ActionArchive   = "archive"
	ActionUnarchive = "un_archive"
)

// SetStatus applies an enable/disable/archive/un_archive action to documents; unknown ids are
// skipped.
func (s *Service) SetStatus(ctx context.Context, datasetID, action string, ids []string) error {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return err
	}
	switch action {
	case ActionEnable, ActionDisable, ActionArchive, ActionUnarchive:
	default:
		return ErrInvalidAction
	}
	now := s.nowUTC()
	for _, id := range ids {
		doc, err := s.document(ctx, d.ID, id)
		if errors.Is(err, ErrDocumentNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = s.modifyDocument(ctx, d.ID, doc.ID, func(doc *store.Document) (bool, error) {
			return applyStatusAction(doc, action, now, s.account)
		})
		if errors.Is(err, ErrDocumentNotFound) {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// applyStatusAction applies a status action to doc and reports whether it changed.
func applyStatusAction(doc *store.Document, action string, now time.Time, account string) (bool, error) {
	changed := false
	switch action {
	case ActionEnable:
		if !doc.Enabled {
			doc.Enabled, doc.DisabledAt, doc.DisabledBy, changed = true, nil, "", true
		}
	case ActionDisable:
		if doc.IndexingStatus != store.IndexingCompleted {
			return false, newError(KindInvalidAction, fmt.Sprintf("Document: %s is not completed.", doc.Name))
		}
		if doc.Enabled {
			doc.Enabled, doc.DisabledAt, doc.DisabledBy, changed = false, &now, account, true
		}
	case ActionArchive:
		if !doc.Archived {
			doc.Archived, doc.ArchivedAt, doc.ArchivedBy, changed = true, &now, account, true
		}
	case ActionUnarchive:
		if doc.Archived {
			doc.Archived, doc.ArchivedAt, doc.ArchivedBy, changed = false, nil, "", true
		}
	}
	if changed {
		doc.UpdatedAt = now
	}
	return changed, nil
}

func (s *Service) documentView(ctx context.Context, d store.Dataset, doc store.Document) (DocumentView, error) {
	v, err := s.documentViews(ctx, d, []store.Document{doc})
	if err != nil {
		return DocumentView{}, err
	}
	return v[0], nil
}

func (s *Service) documentViews(ctx context.Context, d store.Dataset, docs []store.Document) ([]DocumentView, error) {
	ids := make([]string, len(docs))
	for i, doc := range docs {
		ids[i] = doc.ID
	}
	stats, err := s.st.DocumentStats(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("knowledge: document stats: %w", err)
	}
	fields, err := s.st.ListMetadataFields(ctx, d.ID)
	if err != nil {
		return nil, fmt.Errorf("knowledge: metadata fields: %w", err)
	}
	var datasetRule *store.ProcessRule
	if r, err := s.st.LatestProcessRule(ctx, d.ID); err == nil {
		datasetRule = &r
	}
	rules := map[string]*store.ProcessRule{}
	out := make([]DocumentView, len(docs))
	for i, doc := range docs {
		v := DocumentView{Document: doc, Stats: stats[doc.ID], MetadataFields: fields, Dataset: d,
			DatasetProcessRule: datasetRule, BuiltInFields: d.BuiltInFieldEnabled}
		if doc.UploadFileID != "" {
			if up, err := s.files.Lookup(ctx, doc.UploadFileID); err == nil {
				v.Upload = &up
			}
		}
		if doc.ProcessRuleID != "" {
			r, ok := rules[doc.ProcessRuleID]
			if !ok {
				if pr, err := s.st.ProcessRule(ctx, doc.ProcessRuleID); err == nil {
					r = &pr
				}
				rules[doc.ProcessRuleID] = r
			}
			v.ProcessRule = r
		}
		out[i] = v
	}
	return out, nil
}
