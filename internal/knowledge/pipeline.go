package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/store"
)

// Dify's knowledge pipeline runs datasource plugins (online documents, drives, website crawls)
// and chunker nodes as a workflow. Parley has one built-in pipeline per knowledge base: the
// local-file datasource (files uploaded for it), then the general chunker (text_model) or the
// parent-child chunker (hierarchical_model), then the knowledge base's indexing, the same as a
// document created by file. What it does not have is refused with a message naming it.

// Names of the built-in pipeline's one datasource, as Dify names its file-upload datasource.
const (
	DatasourceLocalFile = "local_file"
	// PipelineNodeID is the id of the datasource node.
	PipelineNodeID = "local_file"
)

// MaxPipelineFiles is the most files one pipeline run takes.
const MaxPipelineFiles = 100

// UploadPipelineFile stores a file for a pipeline run, with the checks of a document upload.
func (s *Service) UploadPipelineFile(ctx context.Context, filename, contentType string, body io.Reader) (store.UploadFile, error) {
	return s.files.UploadDocument(ctx, files.DocumentUpload{Filename: filename, ContentType: contentType,
		Body: body, CreatedBy: s.account})
}

// PipelineFile is one file of a pipeline run: the id of a pipeline upload and, optionally, the
// name of the document made from it.
type PipelineFile struct {
	Reference, Name string
}

// PipelineRun is what a pipeline run asks for.
type PipelineRun struct {
	// Inputs are read as a document's `data` (process_rule, doc_form, indexing_technique, …).
	Inputs         json.RawMessage
	DatasourceType string
	StartNodeID    string
	ResponseMode   string
	Files          []PipelineFile
}

// PipelineResult is a finished pipeline run: the documents it created, all in one batch.
type PipelineResult struct {
	Batch     string
	Documents []DocumentView
}

// CheckPipelineRun refuses what the built-in pipeline cannot run, naming it.
func CheckPipelineRun(r PipelineRun) error {
	switch {
	case r.DatasourceType != DatasourceLocalFile:
		return invalidParam(fmt.Sprintf("Datasource type %q is not available: Parley's pipeline runs only the %s datasource (files uploaded with /datasets/pipeline/file-upload); datasource plugins are not available.", r.DatasourceType, DatasourceLocalFile))
	case r.StartNodeID != "" && r.StartNodeID != PipelineNodeID:
		return invalidParam(fmt.Sprintf("Start node %q is not available: Parley's pipeline has one datasource node, %q.", r.StartNodeID, PipelineNodeID))
	case r.ResponseMode != "" && r.ResponseMode != "blocking":
		return invalidParam(fmt.Sprintf("Response mode %q is not available for pipeline runs: only blocking is.", r.ResponseMode))
	case len(r.Files) == 0:
		return invalidParam("datasource_info_list is required.")
	case len(r.Files) > MaxPipelineFiles:
		return invalidParam(fmt.Sprintf("A pipeline run takes at most %d files.", MaxPipelineFiles))
	}
	return nil
}

// RunPipeline creates one document per file, as a document created by file is created (same
// configuration rules, same-name rule, indexing queued), and gives them one batch. Every file
// is checked before any document is made: a reference that is not a pipeline upload refuses
// the whole run.
func (s *Service) RunPipeline(ctx context.Context, datasetID string, r PipelineRun) (PipelineResult, error) {
	if err := CheckPipelineRun(r); err != nil {
		return PipelineResult{}, err
	}
	if _, err := s.localDataset(ctx, datasetID); err != nil {
		return PipelineResult{}, err
	}
	var cfg DocumentConfig
	if len(r.Inputs) > 0 && string(r.Inputs) != "null" {
		if err := json.Unmarshal(r.Inputs, &cfg); err != nil {
			return PipelineResult{}, invalidParam("inputs: " + safeJSONError(err))
		}
	}
	ups := make([]store.UploadFile, len(r.Files))
	for i, f := range r.Files {
		up, err := s.pipelineUpload(ctx, f.Reference)
		if err != nil {
			return PipelineResult{}, err
		}
		if f.Name != "" {
			up.Name = f.Name
		}
		if err := checkSource(Source{Filename: up.Name}); err != nil {
			return PipelineResult{}, err
		}
		ups[i] = up
	}
	res := PipelineResult{Batch: s.NewBatch(), Documents: make([]DocumentView, 0, len(ups))}
	for i := range ups {
		v, _, err := s.CreateDocument(ctx, datasetID, cfg, Source{Filename: ups[i].Name, Stored: &ups[i], Batch: res.Batch})
		if err != nil {
			return PipelineResult{}, err
		}
		res.Documents = append(res.Documents, v)
	}
	return res, nil
}

// pipelineUpload is the upload a pipeline file refers to: a workspace upload for documents (no
// app, stored under datasets/). Anything else is the same invalid_param as an unknown id.
func (s *Service) pipelineUpload(ctx context.Context, ref string) (store.UploadFile, error) {
	bad := invalidParam(fmt.Sprintf("File %q is not a file uploaded for the pipeline.", ref))
	if !isUUID(ref) {
		return store.UploadFile{}, bad
	}
	up, err := s.files.Lookup(ctx, strings.ToLower(ref))
	if errors.Is(err, files.ErrFileNotFound) {
		return store.UploadFile{}, bad
	}
	if err != nil {
		return store.UploadFile{}, err
	}
	if up.AppID != "" || up.EndUserID != "" || !strings.HasPrefix(up.StorageKey, "datasets/") {
		return store.UploadFile{}, bad
	}
	return up, nil
}

func safeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be %s", te.Field, te.Type)
	}
	return "invalid JSON"
}

// DatasourceNodeError is why a datasource node cannot run: the built-in pipeline's one
// datasource takes uploaded files and has nothing to run, and there are no datasource plugins.
func DatasourceNodeError(nodeID, datasourceType string) error {
	if nodeID == PipelineNodeID && datasourceType == DatasourceLocalFile {
		return invalidParam("The local_file datasource has nothing to run: upload files with /datasets/pipeline/file-upload and pass them to /datasets/{dataset_id}/pipeline/run.")
	}
	return invalidParam(fmt.Sprintf("Datasource node %q (%s) is not available: Parley has no datasource plugins (online documents, online drives, website crawls); its pipeline's one datasource is %q.", nodeID, datasourceType, PipelineNodeID))
}

// CheckDatasourceNode checks the knowledge base, then answers why the node cannot run.
func (s *Service) CheckDatasourceNode(ctx context.Context, datasetID, nodeID, datasourceType string) error {
	if _, err := s.localDataset(ctx, datasetID); err != nil {
		return err
	}
	return DatasourceNodeError(nodeID, datasourceType)
}

// DocumentFile returns a document and the file it was made from; the caller opens it.
func (s *Service) DocumentFile(ctx context.Context, datasetID, documentID string) (store.UploadFile, error) {
	d, err := s.localDataset(ctx, datasetID)
	if err != nil {
		return store.UploadFile{}, err
	}
	doc, err := s.document(ctx, d.ID, documentID)
	if err != nil {
		return store.UploadFile{}, err
	}
	if doc.UploadFileID == "" {
		return store.UploadFile{}, notFound("Document does not have an uploaded file to download.")
	}
	up, err := s.files.Lookup(ctx, doc.UploadFileID)
	if errors.Is(err, files.ErrFileNotFound) {
		return store.UploadFile{}, notFound("Uploaded file not found.")
	}
	return up, err
}

// DefaultMaxZipBytes bounds the files one ZIP download may hold together.
const DefaultMaxZipBytes = 1 << 30

// DocumentFiles returns the files of the given documents for one ZIP download, in the order
// asked, a repeated id once. An unknown document refuses the whole download, and so do files
// that add up to more than Options.MaxZipBytes.
func (s *Service) DocumentFiles(ctx context.Context, datasetID string, ids []string) ([]store.UploadFile, error) {
	seen := make(map[string]bool, len(ids))
	var (
		out   []store.UploadFile
		total int64
	)
	for _, id := range ids {
		key := strings.ToLower(id)
		if seen[key] {
			continue
		}
		seen[key] = true
		up, err := s.DocumentFile(ctx, datasetID, id)
		if err != nil {
			return nil, err
		}
		total += up.Size
		if total > s.maxZip {
			return nil, invalidParam(fmt.Sprintf("The documents' files add up to more than %s; download fewer at a time.", byteSize(s.maxZip)))
		}
		out = append(out, up)
	}
	return out, nil
}

// OpenFile opens a document's file; the caller closes it.
func (s *Service) OpenFile(ctx context.Context, f store.UploadFile) (io.ReadCloser, error) {
	return s.files.Open(ctx, f)
}

// byteSize is n bytes in the largest whole unit that fits.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
