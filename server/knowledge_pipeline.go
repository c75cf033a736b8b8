package server

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/store"
)

// GetDocumentDownload answers GET /datasets/{dataset_id}/documents/{document_id}/download: a
// signed link to the document's original file, as a download.
func (s *Server) GetDocumentDownload(ctx context.Context, req gen.GetDocumentDownloadRequestObject) (gen.GetDocumentDownloadResponseObject, error) {
	up, err := s.knowledge.DocumentFile(ctx, req.DatasetId, req.DocumentId)
	if err != nil {
		return nil, err
	}
	return gen.GetDocumentDownload200JSONResponse{Url: s.files.UploadFileURL(up.ID, true)}, nil
}

// DownloadDocumentsZip answers POST /datasets/{dataset_id}/documents/download-zip: every file is
// found (and the total checked) before the first byte is sent, then the archive is streamed,
// one file at a time, without being held in memory or on disk.
func (s *Server) DownloadDocumentsZip(ctx context.Context, req gen.DownloadDocumentsZipRequestObject) (gen.DownloadDocumentsZipResponseObject, error) {
	ups, err := s.knowledge.DocumentFiles(ctx, req.DatasetId, req.Body.DocumentIds)
	if err != nil {
		return nil, err
	}
	return zipResponse{ctx: ctx, files: ups, open: s.knowledge.OpenFile, log: s.log, stall: s.streamStall}, nil
}

// zipResponse streams the files as a ZIP archive. The files are stored, not compressed: most
// documents (PDF, DOCX, XLSX) are compressed already, and storing keeps the server's CPU out of
// a large download.
type zipResponse struct {
	ctx   context.Context
	files []store.UploadFile
	open  func(context.Context, store.UploadFile) (io.ReadCloser, error)
	log   interface {
		Warn(msg string, args ...any)
	}
	stall time.Duration
}

func (r zipResponse) VisitDownloadDocumentsZipResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "documents.zip"}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w, done := stallGuard(w, r.stall)
	defer done()
	zw := zip.NewWriter(w)
	names := map[string]int{}
	for _, f := range r.files {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		name := zipEntryName(f.Name, names)
		hdr := &zip.FileHeader{Name: name, Method: zip.Store, Modified: f.CreatedAt}
		hdr.SetMode(0o644)
		entry, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		body, err := r.open(r.ctx, f)
		if err != nil {
			// The status is sent: the archive can only end broken, which a client notices.
			r.log.Warn("zip download: open file", "file_id", f.ID, "error", err)
			return err
		}
		_, err = io.Copy(entry, body)
		body.Close()
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// zipEntryName is a file's name inside the archive: its base name, with " (2)", " (3)"… before
// the extension when an earlier file had the same name.
func zipEntryName(name string, seen map[string]int) string {
	name = strings.ReplaceAll(name, "\\", "_")
	name = path.Base("/" + name)
	if name == "/" || name == "." {
		name = "file"
	}
	key := strings.ToLower(name)
	seen[key]++
	if n := seen[key]; n > 1 {
		ext := path.Ext(name)
		candidate := fmt.Sprintf("%s (%d)%s", strings.TrimSuffix(name, ext), n, ext)
		// A file really called "a (2).txt" may come later; the suffix keeps counting.
		for seen[strings.ToLower(candidate)] > 0 {
			seen[key]++
			candidate = fmt.Sprintf("%s (%d)%s", strings.TrimSuffix(name, ext), seen[key], ext)
		}
		seen[strings.ToLower(candidate)]++
		return candidate
	}
	return name
}

// UploadPipelineFile answers POST /datasets/pipeline/file-upload: one `file` part, stored with
// the checks of a document upload.
func (s *Server) UploadPipelineFile(ctx context.Context, req gen.UploadPipelineFileRequestObject) (gen.UploadPipelineFileResponseObject, error) {
	form, err := readForm(req.Body, formSpec{
		fileLimit: s.uploadLimit,
		skipFile:  func(name string) bool { return files.CheckName(name) != nil || !extract.Supported(name) },
	})
	defer form.close()
	if err != nil {
		return nil, err
	}
	switch {
	case form.nFiles == 0:
		return nil, apiError(http.StatusBadRequest, "no_file_uploaded", "Please upload your file.")
	case form.nFiles > 1:
		return nil, apiError(http.StatusBadRequest, "too_many_files", "Only one file is allowed.")
	}
	f := form.file
	if err := files.CheckName(f.filename); err != nil {
		return nil, err
	}
	if f.tmp == nil {
		return nil, fmt.Errorf("pipeline file %q: %w", f.filename, files.ErrUnsupportedType)
	}
	body, err := f.rewind()
	if err != nil {
		return nil, err
	}
	up, err := s.knowledge.UploadPipelineFile(ctx, f.filename, f.contentType, body)
	if err != nil {
		return nil, err
	}
	return gen.UploadPipelineFile201JSONResponse{
		Id: mustUUID(up.ID), Name: up.Name, Size: up.Size, Extension: up.Extension, MimeType: up.MimeType,
		CreatedBy: up.CreatedBy, CreatedAt: up.CreatedAt.UTC(),
	}, nil
}

// ListPipelineDatasources answers GET /datasets/{dataset_id}/pipeline/datasource-plugins: the
// built-in pipeline's one datasource.
func (s *Server) ListPipelineDatasources(ctx context.Context, req gen.ListPipelineDatasourcesRequestObject) (gen.ListPipelineDatasourcesResponseObject, error) {
	if _, err := s.knowledge.CheckLocalDataset(ctx, req.DatasetId); err != nil {
		return nil, err
	}
	return gen.ListPipelineDatasources200JSONResponse{{
		NodeId: knowledge.PipelineNodeID, PluginId: "langgenius/file", ProviderName: "file",
		DatasourceType: gen.PipelineDatasourceDatasourceType(knowledge.DatasourceLocalFile), Title: "File Upload",
		UserInputVariables: []map[string]any{}, Credentials: []map[string]any{},
	}}, nil
}

// RunPipelineDatasourceNode answers POST /datasets/{dataset_id}/pipeline/datasource/nodes/{node_id}/run:
// always a 400 naming what is not available, once the knowledge base is found.
func (s *Server) RunPipelineDatasourceNode(ctx context.Context, req gen.RunPipelineDatasourceNodeRequestObject) (gen.RunPipelineDatasourceNodeResponseObject, error) {
	return nil, s.knowledge.CheckDatasourceNode(ctx, req.DatasetId, req.NodeId, req.Body.DatasourceType)
}

// RunPipeline answers POST /datasets/{dataset_id}/pipeline/run: the built-in pipeline over
// uploaded files, blocking.
func (s *Server) RunPipeline(ctx context.Context, req gen.RunPipelineRequestObject) (gen.RunPipelineResponseObject, error) {
	b := req.Body
	started := s.knowledgeNow()
	run := knowledge.PipelineRun{DatasourceType: b.DatasourceType, StartNodeID: b.StartNodeId, ResponseMode: b.ResponseMode}
	if b.Inputs != nil {
		raw, err := json.Marshal(b.Inputs)
		if err != nil {
			return nil, err
		}
		run.Inputs = raw
	}
	for _, f := range b.DatasourceInfoList {
		run.Files = append(run.Files, knowledge.PipelineFile{Reference: f.Reference, Name: str(f.Name)})
	}
	res, err := s.knowledge.RunPipeline(ctx, req.DatasetId, run)
	if err != nil {
		return nil, err
	}
	out := gen.RunPipeline200JSONResponse{TaskId: uuid.New(), WorkflowRunId: uuid.New()}
	out.Data.Id = out.WorkflowRunId
	out.Data.Status = gen.PipelineRunResultDataStatusSucceeded
	out.Data.CreatedAt, out.Data.FinishedAt = started, s.knowledgeNow()
	out.Data.Outputs = gen.PipelineRunOutputs{Batch: res.Batch, Documents: make([]gen.KnowledgeDocument, 0, len(res.Documents))}
	for _, v := range res.Documents {
		out.Data.Outputs.Documents = append(out.Data.Outputs.Documents, s.knowledgeDocument(v))
	}
	return out, nil
}

func (s *Server) knowledgeNow() int64 { return time.Now().Unix() }
