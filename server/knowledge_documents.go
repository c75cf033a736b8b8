package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/segment"
	"github.com/parleyhq/parley/internal/store"
)

// maxDataPart caps the `data` part of the document file routes.
const maxDataPart = 1 << 20

// CreateDocumentByText answers POST /datasets/{dataset_id}/document/create-by-text.
func (s *Server) CreateDocumentByText(ctx context.Context, req gen.CreateDocumentByTextRequestObject) (gen.CreateDocumentByTextResponseObject, error) {
	out, err := s.createDocumentByText(ctx, req.DatasetId, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.CreateDocumentByText200JSONResponse(out), nil
}

// CreateDocumentByTextLegacy answers POST /datasets/{dataset_id}/document/create_by_text.
func (s *Server) CreateDocumentByTextLegacy(ctx context.Context, req gen.CreateDocumentByTextLegacyRequestObject) (gen.CreateDocumentByTextLegacyResponseObject, error) {
	out, err := s.createDocumentByText(ctx, req.DatasetId, (*gen.CreateDocumentByTextRequest)(req.Body))
	if err != nil {
		return nil, err
	}
	return gen.CreateDocumentByTextLegacy200JSONResponse(out), nil
}

func (s *Server) createDocumentByText(ctx context.Context, datasetID string, b *gen.CreateDocumentByTextRequest) (gen.DocumentWithBatch, error) {
	cfg := knowledge.DocumentConfig{
		IndexingTechnique: (*string)(b.IndexingTechnique), DocForm: (*string)(b.DocForm), DocLanguage: b.DocLanguage,
		ProcessRule: docRawJSON(b.ProcessRule), RetrievalModel: docRawJSON(b.RetrievalModel),
		EmbeddingModel: b.EmbeddingModel, EmbeddingModelProvider: b.EmbeddingModelProvider,
	}
	src := knowledge.Source{Filename: b.Name, ContentType: "text/plain", Body: strings.NewReader(b.Text), Text: true}
	var (
		v     knowledge.DocumentView
		batch string
		err   error
	)
	if b.OriginalDocumentId != nil && *b.OriginalDocumentId != "" {
		v, batch, err = s.knowledge.UpdateDocument(ctx, datasetID, *b.OriginalDocumentId, cfg, &src)
	} else {
		v, batch, err = s.knowledge.CreateDocument(ctx, datasetID, cfg, src)
	}
	if err != nil {
		return gen.DocumentWithBatch{}, err
	}
	return s.documentWithBatch(v, batch), nil
}

// UpdateDocumentByText answers POST /datasets/{dataset_id}/documents/{document_id}/update-by-text.
func (s *Server) UpdateDocumentByText(ctx context.Context, req gen.UpdateDocumentByTextRequestObject) (gen.UpdateDocumentByTextResponseObject, error) {
	out, err := s.updateDocumentByText(ctx, req.DatasetId, req.DocumentId, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.UpdateDocumentByText200JSONResponse(out), nil
}

// UpdateDocumentByTextLegacy answers POST /datasets/{dataset_id}/documents/{document_id}/update_by_text.
func (s *Server) UpdateDocumentByTextLegacy(ctx context.Context, req gen.UpdateDocumentByTextLegacyRequestObject) (gen.UpdateDocumentByTextLegacyResponseObject, error) {
	out, err := s.updateDocumentByText(ctx, req.DatasetId, req.DocumentId, (*gen.UpdateDocumentByTextRequest)(req.Body))
	if err != nil {
		return nil, err
	}
	return gen.UpdateDocumentByTextLegacy200JSONResponse(out), nil
}

func (s *Server) updateDocumentByText(ctx context.Context, datasetID, documentID string, b *gen.UpdateDocumentByTextRequest) (gen.DocumentWithBatch, error) {
	cfg := knowledge.DocumentConfig{
		DocForm: (*string)(b.DocForm), DocLanguage: b.DocLanguage,
		ProcessRule: docRawJSON(b.ProcessRule), RetrievalModel: docRawJSON(b.RetrievalModel),
	}
	var src *knowledge.Source
	if b.Text != nil {
		if b.Name == nil || *b.Name == "" {
			return gen.DocumentWithBatch{}, errInvalidParam("name is required when text is provided")
		}
		src = &knowledge.Source{Filename: *b.Name, ContentType: "text/plain", Body: strings.NewReader(*b.Text), Text: true}
	}
	v, batch, err := s.knowledge.UpdateDocument(ctx, datasetID, documentID, cfg, src)
	if err != nil {
		return gen.DocumentWithBatch{}, err
	}
	return s.documentWithBatch(v, batch), nil
}

// CreateDocumentByFile answers POST /datasets/{dataset_id}/document/create-by-file.
func (s *Server) CreateDocumentByFile(ctx context.Context, req gen.CreateDocumentByFileRequestObject) (gen.CreateDocumentByFileResponseObject, error) {
	out, err := s.createDocumentByFile(ctx, req.DatasetId, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.CreateDocumentByFile200JSONResponse(out), nil
}

// CreateDocumentByFileLegacy answers POST /datasets/{dataset_id}/document/create_by_file.
func (s *Server) CreateDocumentByFileLegacy(ctx context.Context, req gen.CreateDocumentByFileLegacyRequestObject) (gen.CreateDocumentByFileLegacyResponseObject, error) {
	out, err := s.createDocumentByFile(ctx, req.DatasetId, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.CreateDocumentByFileLegacy200JSONResponse(out), nil
}

func (s *Server) createDocumentByFile(ctx context.Context, datasetID string, body *multipart.Reader) (gen.DocumentWithBatch, error) {
	if _, err := s.knowledge.CheckLocalDataset(ctx, datasetID); err != nil {
		return gen.DocumentWithBatch{}, err
	}
	in, err := s.readDocumentForm(body, docCreate)
	defer in.close()
	if err != nil {
		return gen.DocumentWithBatch{}, err
	}
	var (
		v     knowledge.DocumentView
		batch string
	)
	if in.originalID != "" {
		v, batch, err = s.knowledge.UpdateDocument(ctx, datasetID, in.originalID, in.cfg, in.src)
	} else {
		v, batch, err = s.knowledge.CreateDocument(ctx, datasetID, in.cfg, *in.src)
	}
	if err != nil {
		return gen.DocumentWithBatch{}, err
	}
	return s.documentWithBatch(v, batch), nil
}

// UpdateDocumentByFile answers POST /datasets/{dataset_id}/documents/{document_id}/update-by-file.
func (s *Server) UpdateDocumentByFile(ctx context.Context, req gen.UpdateDocumentByFileRequestObject) (gen.UpdateDocumentByFileResponseObject, error) {
	out, err := s.updateDocumentByFile(ctx, req.DatasetId, req.DocumentId, req.Body, docUpdateByFile)
	if err != nil {
		return nil, err
	}
	return gen.UpdateDocumentByFile200JSONResponse(out), nil
}

// UpdateDocumentByFileLegacy answers POST /datasets/{dataset_id}/documents/{document_id}/update_by_file.
func (s *Server) UpdateDocumentByFileLegacy(ctx context.Context, req gen.UpdateDocumentByFileLegacyRequestObject) (gen.UpdateDocumentByFileLegacyResponseObject, error) {
	out, err := s.updateDocumentByFile(ctx, req.DatasetId, req.DocumentId, req.Body, docUpdateByFile)
	if err != nil {
		return nil, err
	}
	return gen.UpdateDocumentByFileLegacy200JSONResponse(out), nil
}

// UpdateDocument answers PATCH /datasets/{dataset_id}/documents/{document_id}.
func (s *Server) UpdateDocument(ctx context.Context, req gen.UpdateDocumentRequestObject) (gen.UpdateDocumentResponseObject, error) {
	out, err := s.updateDocumentByFile(ctx, req.DatasetId, req.DocumentId, req.Body, docPatch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateDocument200JSONResponse(out), nil
}

func (s *Server) updateDocumentByFile(ctx context.Context, datasetID, documentID string, body *multipart.Reader, route docRoute) (gen.DocumentWithBatch, error) {
	if _, err := s.knowledge.CheckLocalDataset(ctx, datasetID); err != nil {
		return gen.DocumentWithBatch{}, err
	}
	in, err := s.readDocumentForm(body, route)
	defer in.close()
	if err != nil {
		return gen.DocumentWithBatch{}, err
	}
	in.cfg.IndexingTechnique = nil
	v, batch, err := s.knowledge.UpdateDocument(ctx, datasetID, documentID, in.cfg, in.src)
	if err != nil {
		return gen.DocumentWithBatch{}, err
	}
	return s.documentWithBatch(v, batch), nil
}

// docRoute is which document file route a form was sent to: their rules differ.
type docRoute int

const (
	// docCreate: exactly one file required (Dify's no_file_uploaded, too_many_files); a file
	// of a type not allowed is 400 invalid_param, one too large 413.
	docCreate docRoute = iota
	// docUpdateByFile: `data` and `file` required; 413/415 for the file.
	docUpdateByFile
	// docPatch: both parts optional; 413/415 for the file.
	docPatch
)

// documentForm is the decoded multipart body of a document file route.
type documentForm struct {
	cfg        knowledge.DocumentConfig
	originalID string
	src        *knowledge.Source
	form       *uploadForm
}

func (d *documentForm) close() {
	if d != nil {
		d.form.close()
	}
}

// readDocumentForm streams the form of a document file route: `data` (a JSON object validated
// against the contract's DocumentProcessConfig) and one `file`, spooled to disk within the
// upload size limit. The checks that need only the form are made here, with Dify's errors.
func (s *Server) readDocumentForm(body *multipart.Reader, route docRoute) (*documentForm, error) {
	form, err := readForm(body, formSpec{
		fields:    map[string]int64{"data": maxDataPart},
		fileLimit: s.uploadLimit,
		// A file whose name is refused or of a type the extractor does not read is refused
		// anyway: it is not read.
		skipFile: func(name string) bool { return files.CheckName(name) != nil || !extract.Supported(name) },
	})
	d := &documentForm{form: form}
	if err != nil {
		return d, err
	}
	switch {
	case form.nFiles > 1:
		return d, apiError(http.StatusBadRequest, "too_many_files", "Only one file is allowed.")
	case route == docCreate && form.nFiles == 0:
		return d, apiError(http.StatusBadRequest, "no_file_uploaded", "Please upload your file.")
	case route == docUpdateByFile && !form.has("data"):
		return d, errInvalidParam("data: part is missing; send the document configuration as a JSON string in a `data` form field.")
	case route == docUpdateByFile && form.nFiles == 0:
		return d, errInvalidParam("file: part is missing; send the new content as a file in a `file` form field.")
	}
	if form.has("data") {
		if d.cfg, d.originalID, err = s.documentConfig(form.fields["data"], form.long["data"]); err != nil {
			return d, err
		}
	}
	if f := form.file; f != nil {
		switch err := files.CheckName(f.filename); {
		case err != nil:
			// Dify's checks, on every route: a name is required, and one with '/' or '\' is
			// refused ("Filename contains invalid characters"), not cut to its last element.
			return d, err
		case f.tmp == nil:
			// A type the extractor does not read. On create-by-file Dify answers this 400
			// invalid_param, on the update routes 415 (forOperation in errmap.go).
			return d, fmt.Errorf("document file %q: %w", f.filename, files.ErrUnsupportedType)
		}
		r, err := f.rewind()
		if err != nil {
			return d, err
		}
		d.src = &knowledge.Source{Filename: f.filename, ContentType: f.contentType, Body: r}
	}
	return d, nil
}

// documentConfig decodes and validates the `data` part.
func (s *Server) documentConfig(data string, long bool) (knowledge.DocumentConfig, string, error) {
	var cfg knowledge.DocumentConfig
	if long {
		return cfg, "", errInvalidParam(fmt.Sprintf("data: larger than %d bytes.", maxDataPart))
	}
	// The same scan as a JSON request body gets (jsonbody.go), for the same reason: the value
	// validated below must be the value used.
	if err := scanJSON([]byte(data), s.docConfigSchema); err != nil {
		var me *jsonMemberError
		if errors.As(err, &me) {
			if me.where == "" {
				me.where = "data"
			} else {
				me.where = "data." + me.where
			}
			return cfg, "", errInvalidParam(me.Error())
		}
		return cfg, "", errInvalidParam("data: invalid JSON")
	}
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		return cfg, "", errInvalidParam("data: invalid JSON")
	}
	if where, bad := unstorable(v, "data"); bad {
		return cfg, "", errNotStorable(where)
	}
	if err := s.docConfigSchema.VisitJSON(v); err != nil {
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			where := "data"
			if p := se.JSONPointer(); len(p) > 0 {
				where += "." + strings.Join(p, ".")
			}
			reason := se.Reason
			if reason == "" {
				reason = se.Error()
			}
			return cfg, "", errInvalidParam(where + ": " + reason)
		}
		return cfg, "", errInvalidParam("data: " + firstLine(err.Error()))
	}
	if err := json.Unmarshal([]byte(data), &cfg); err != nil {
		return cfg, "", errInvalidParam("data: " + err.Error())
	}
	var extra struct {
		OriginalDocumentID *string `json:"original_document_id"`
	}
	_ = json.Unmarshal([]byte(data), &extra)
	if extra.OriginalDocumentID != nil {
		return cfg, *extra.OriginalDocumentID, nil
	}
	return cfg, "", nil
}

// ListDocuments answers GET /datasets/{dataset_id}/documents.
func (s *Server) ListDocuments(ctx context.Context, req gen.ListDocumentsRequestObject) (gen.ListDocumentsResponseObject, error) {
	q := store.DocumentQuery{Page: 1, Limit: 20}
	if p := req.Params; p.Page != nil {
		q.Page = *p.Page
	}
	if p := req.Params; p.Limit != nil {
		q.Limit = min(*p.Limit, 100)
	}
	if req.Params.Keyword != nil {
		q.Keyword = *req.Params.Keyword
	}
	if req.Params.Status != nil {
		q.DisplayStatus = string(*req.Params.Status)
	}
	views, total, err := s.knowledge.ListDocuments(ctx, req.DatasetId, q)
	if err != nil {
		return nil, err
	}
	out := gen.ListDocuments200JSONResponse{Data: make([]gen.KnowledgeDocument, 0, len(views)),
		HasMore: len(views) == q.Limit, Limit: q.Limit, Total: total, Page: q.Page}
	for _, v := range views {
		out.Data = append(out.Data, s.knowledgeDocument(v))
	}
	return out, nil
}

// GetDocument answers GET /datasets/{dataset_id}/documents/{document_id}.
func (s *Server) GetDocument(ctx context.Context, req gen.GetDocumentRequestObject) (gen.GetDocumentResponseObject, error) {
	mode := "all"
	if req.Params.Metadata != nil {
		mode = *req.Params.Metadata
	}
	switch mode {
	case "all", "only", "without":
	default:
		return nil, apiError(http.StatusBadRequest, "invalid_metadata", "Invalid metadata value: "+mode)
	}
	v, err := s.knowledge.GetDocument(ctx, req.DatasetId, req.DocumentId)
	if err != nil {
		return nil, err
	}
	return documentDetailResponse(s.documentDetail(v, mode)), nil
}

// documentDetailResponse sends a DocumentDetail with its own JSON encoding, which writes the
// null members kept in AdditionalProperties (gen.GetDocument200JSONResponse, a distinct type,
// would drop them).
type documentDetailResponse gen.DocumentDetail

func (r documentDetailResponse) VisitGetDocumentResponse(w http.ResponseWriter) error {
	body, err := json.Marshal(gen.DocumentDetail(r))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(append(body, '\n'))
	return err
}

// DeleteDocument answers DELETE /datasets/{dataset_id}/documents/{document_id}.
func (s *Server) DeleteDocument(ctx context.Context, req gen.DeleteDocumentRequestObject) (gen.DeleteDocumentResponseObject, error) {
	if err := s.knowledge.DeleteDocument(ctx, req.DatasetId, req.DocumentId); err != nil {
		return nil, err
	}
	return gen.DeleteDocument204Response{}, nil
}

// GetDocumentIndexingStatus answers GET /datasets/{dataset_id}/documents/{batch}/indexing-status.
func (s *Server) GetDocumentIndexingStatus(ctx context.Context, req gen.GetDocumentIndexingStatusRequestObject) (gen.GetDocumentIndexingStatusResponseObject, error) {
	sts, err := s.knowledge.BatchStatus(ctx, req.DatasetId, req.Batch)
	if err != nil {
		return nil, err
	}
	out := gen.GetDocumentIndexingStatus200JSONResponse{Data: make([]gen.DocumentIndexingStatus, 0, len(sts))}
	for _, st := range sts {
		d := st.Document
		out.Data = append(out.Data, gen.DocumentIndexingStatus{
			Id: mustUUID(d.ID), IndexingStatus: gen.IndexingStatus(d.IndexingStatus),
			ProcessingStartedAt: docUnix(d.ProcessingStartedAt), ParsingCompletedAt: docUnix(d.ParsingCompletedAt),
			CleaningCompletedAt: docUnix(d.CleaningCompletedAt), SplittingCompletedAt: docUnix(d.SplittingCompletedAt),
			CompletedAt: docUnix(d.CompletedAt), PausedAt: docUnix(d.PausedAt), StoppedAt: docUnix(d.StoppedAt),
			Error: docNullable(d.Error), CompletedSegments: st.Progress.Completed, TotalSegments: st.Progress.Total,
		})
	}
	return out, nil
}

// UpdateDocumentStatus answers PATCH /datasets/{dataset_id}/documents/status/{action}.
func (s *Server) UpdateDocumentStatus(ctx context.Context, req gen.UpdateDocumentStatusRequestObject) (gen.UpdateDocumentStatusResponseObject, error) {
	var ids []string
	if req.Body != nil && req.Body.DocumentIds != nil {
		ids = *req.Body.DocumentIds
	}
	if err := s.knowledge.SetStatus(ctx, req.DatasetId, req.Action, ids); err != nil {
		return nil, err
	}
	return gen.UpdateDocumentStatus200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: "success"}}, nil
}

// ---------------------------------------------------------------------------- mapping

func (s *Server) documentWithBatch(v knowledge.DocumentView, batch string) gen.DocumentWithBatch {
	return gen.DocumentWithBatch{Batch: batch, Document: s.knowledgeDocument(v)}
}

// knowledgeDocument is the create/update/list shape of a document (Dify's DocumentResponse).
func (s *Server) knowledgeDocument(v knowledge.DocumentView) gen.KnowledgeDocument {
	d := v.Document
	out := gen.KnowledgeDocument{
		Id: mustUUID(d.ID), Position: d.Position, Name: d.Name, Archived: d.Archived, Enabled: d.Enabled,
		DisabledAt: docUnix(d.DisabledAt), DisabledBy: docNullable(d.DisabledBy),
		CreatedAt: d.CreatedAt.Unix(), CreatedBy: d.CreatedBy, CreatedFrom: d.CreatedFrom,
		DataSourceType: d.DataSourceType, DataSourceDetailDict: docUploadDetail(v.Upload),
		DatasetProcessRuleId: d.ProcessRuleID, DocForm: d.DocForm, DocMetadata: s.docMetadata(v),
		DisplayStatus: gen.DisplayStatus(knowledge.DisplayStatus(d)), IndexingStatus: gen.IndexingStatus(d.IndexingStatus),
		Error: docNullable(d.Error), HitCount: v.Stats.HitCount, Tokens: d.Tokens, WordCount: d.WordCount,
	}
	if d.UploadFileID != "" {
		id := d.UploadFileID
		out.DataSourceInfo.UploadFileId = &id
	}
	return out
}

func docUploadDetail(up *store.UploadFile) gen.DataSourceDetail {
	if up == nil {
		return gen.DataSourceDetail{}
	}
	return gen.DataSourceDetail{UploadFile: &gen.UploadFileDetail{
		Id: up.ID, Name: up.Name, Size: up.Size, Extension: up.Extension, MimeType: up.MimeType,
		CreatedBy: up.CreatedBy, CreatedAt: up.CreatedAt.Unix(),
	}}
}

// docMetadata is the document's metadata array: a value for each custom field the document has
// one for, then the built-in fields when the knowledge base has them enabled.
func (s *Server) docMetadata(v knowledge.DocumentView) []gen.DocMetadata {
	out := []gen.DocMetadata{}
	values := map[string]json.RawMessage{}
	if len(v.DocMetadata) > 0 {
		_ = json.Unmarshal(v.DocMetadata, &values)
	}
	for _, f := range v.MetadataFields {
		raw, ok := values[f.Name]
		if !ok {
			continue
		}
		out = append(out, gen.DocMetadata{Id: f.ID, Name: f.Name, Type: gen.DocMetadataType(f.Type), Value: docMetadataValue(raw)})
	}
	if v.BuiltInFields {
		// Dify gives the two dates as Python floats (a timestamp()), so they are sent with a
		// fraction: 1741267200.0, not 1741267200.
		builtIn := map[string]any{
			"document_name": v.Name, "uploader": s.workspaceName, "upload_date": epochFloat(v.CreatedAt),
			"last_update_date": epochFloat(v.UpdatedAt), "source": "file_upload",
		}
		for _, f := range knowledge.BuiltInFields {
			raw, _ := json.Marshal(builtIn[f.Name])
			out = append(out, gen.DocMetadata{Id: "built-in", Name: f.Name, Type: gen.DocMetadataType(f.Type), Value: docMetadataValue(raw)})
		}
	}
	return out
}

// epochFloat is t in Unix seconds as a JSON number that always has a fraction.
func epochFloat(t time.Time) json.RawMessage {
	f := strconv.FormatFloat(float64(t.UnixMicro())/1e6, 'f', -1, 64)
	if !strings.ContainsAny(f, ".e") {
		f += ".0"
	}
	return json.RawMessage(f)
}

func docMetadataValue(raw json.RawMessage) *gen.DocMetadata_Value {
	var val gen.DocMetadata_Value
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("null")
	}
	if err := val.UnmarshalJSON(raw); err != nil {
		_ = val.UnmarshalJSON([]byte("null"))
	}
	return &val
}

// documentDetail is the detail shape (Dify's GET document): metadata is all, only or without.
func (s *Server) documentDetail(v knowledge.DocumentView, mode string) gen.DocumentDetail {
	d := v.Document
	out := gen.DocumentDetail{Id: mustUUID(d.ID), AdditionalProperties: map[string]any{}}
	if mode != "without" {
		md := s.docMetadata(v)
		out.DocMetadata = &md
		out.AdditionalProperties["doc_type"] = nil
	}
	if mode == "only" {
		return out
	}
	// Members that are null are sent as null, as Dify does.
	nullable := func(name string, set bool) {
		if !set {
			out.AdditionalProperties[name] = nil
		}
	}
	det := docUploadDetail(v.Upload)
	avg := 0
	if v.Stats.SegmentCount > 0 {
		avg = d.WordCount / v.Stats.SegmentCount
	}
	ds := gen.DisplayStatus(knowledge.DisplayStatus(d))
	is := gen.IndexingStatus(d.IndexingStatus)
	latency := d.IndexingLatency
	out.Position, out.DataSourceType, out.DataSourceInfo = &d.Position, &d.DataSourceType, &det
	out.Name, out.CreatedFrom, out.CreatedBy = &d.Name, &d.CreatedFrom, &d.CreatedBy
	out.CreatedAt = docUnix(&d.CreatedAt)
	out.Tokens, out.IndexingStatus = &d.Tokens, &is
	out.CompletedAt = docUnix(d.CompletedAt)
	nullable("completed_at", out.CompletedAt != nil)
	out.UpdatedAt = docUnix(&d.UpdatedAt)
	if d.CompletedAt != nil {
		out.IndexingLatency = &latency
	}
	nullable("indexing_latency", out.IndexingLatency != nil)
	out.Error = docNullable(d.Error)
	nullable("error", out.Error != nil)
	out.Enabled, out.Archived = &d.Enabled, &d.Archived
	out.DisabledAt, out.DisabledBy = docUnix(d.DisabledAt), docNullable(d.DisabledBy)
	nullable("disabled_at", out.DisabledAt != nil)
	nullable("disabled_by", out.DisabledBy != nil)
	out.SegmentCount, out.AverageSegmentLength, out.HitCount = &v.Stats.SegmentCount, &avg, &v.Stats.HitCount
	out.DisplayStatus, out.DocForm = &ds, &d.DocForm
	out.DocLanguage = docNullable(d.DocLanguage)
	nullable("doc_language", out.DocLanguage != nil)
	needSummary := false
	out.NeedSummary = &needSummary
	nullable("summary_index_status", false)
	out.DatasetProcessRuleId = docNullable(d.ProcessRuleID)
	nullable("dataset_process_rule_id", out.DatasetProcessRuleId != nil)
	out.DatasetProcessRule = docProcessRuleDetail(v.DatasetProcessRule, false)
	nullable("dataset_process_rule", out.DatasetProcessRule != nil)
	out.DocumentProcessRule = docProcessRuleDetail(v.ProcessRule, true)
	nullable("document_process_rule", out.DocumentProcessRule != nil)
	if ds == "" {
		out.DisplayStatus = nil
	}
	return out
}

// docProcessRuleDetail is a stored rule as Dify shows it; a document's own rule also names its id
// and knowledge base.
func docProcessRuleDetail(r *store.ProcessRule, withID bool) *gen.ProcessRuleDetail {
	if r == nil {
		return nil
	}
	out := &gen.ProcessRuleDetail{Mode: &r.Mode, AdditionalProperties: map[string]any{}}
	if withID {
		out.Id, out.DatasetId = &r.ID, &r.DatasetID
	}
	var rules map[string]any
	if r.Mode == segment.ModeAutomatic {
		// An automatic rule applies Dify's fixed rules, which Dify stores with it and shows.
		rules = difyAutomaticRules()
		out.Rules = &rules
	} else if len(r.Rules) > 0 && json.Unmarshal(r.Rules, &rules) == nil && rules != nil {
		out.Rules = &rules
	} else {
		out.AdditionalProperties["rules"] = nil
	}
	return out
}

// docRawJSON re-encodes a decoded body member for the domain, which reads it itself; nil stays nil.
func docRawJSON[T any](v *T) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func docUnix(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	u := t.Unix()
	return &u
}

func docNullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// difyAutomaticRules are the rules of an automatic process rule as Dify stores and shows them
// (its AUTOMATIC_RULES, whose separator member is called `delimiter`).
func difyAutomaticRules() map[string]any {
	a := segment.AutomaticRules()
	pre := make([]any, len(a.PreProcessingRules))
	for i, r := range a.PreProcessingRules {
		pre[i] = map[string]any{"id": r.ID, "enabled": r.Enabled}
	}
	return map[string]any{
		"pre_processing_rules": pre,
		"segmentation": map[string]any{
			"delimiter": a.Segmentation.Separator, "max_tokens": a.Segmentation.MaxTokens,
			"chunk_overlap": a.Segmentation.ChunkOverlap,
		},
	}
}
