package server

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime/debug"

	"github.com/parleyhq/parley/gen"
)

// GetServiceInfo answers GET /: a greeting with the API's and the server's versions, as Dify
// answers at the root of its Service API.
func (s *Server) GetServiceInfo(context.Context, gen.GetServiceInfoRequestObject) (gen.GetServiceInfoResponseObject, error) {
	return gen.GetServiceInfo200JSONResponse{
		Welcome:       "Parley Service API",
		ApiVersion:    gen.V1,
		ServerVersion: serverVersion(),
	}, nil
}

// serverVersion is the main module's version as the Go toolchain recorded it in the binary, or
// "dev" for a build from a work tree.
func serverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// GetDocumentUploadFile answers GET /datasets/{dataset_id}/documents/{document_id}/upload-file
// (older Dify): the document's original file with a link to view it and one to download it.
func (s *Server) GetDocumentUploadFile(ctx context.Context, req gen.GetDocumentUploadFileRequestObject) (gen.GetDocumentUploadFileResponseObject, error) {
	up, err := s.knowledge.DocumentFile(ctx, req.DatasetId, req.DocumentId)
	if err != nil {
		return nil, err
	}
	return uploadFileResponse{
		GetDocumentUploadFile200JSONResponse: gen.GetDocumentUploadFile200JSONResponse{
			Id: up.ID, Name: up.Name, Size: up.Size, Extension: up.Extension, MimeType: up.MimeType,
			Url: s.files.UploadFileURL(up.ID, false), DownloadUrl: s.files.UploadFileURL(up.ID, true),
			CreatedBy: up.CreatedBy,
		},
		createdAt: epochFloat(up.CreatedAt),
	}, nil
}

// uploadFileResponse sends created_at as Dify does here, seconds that always have a fraction
// (a whole second would otherwise be encoded as an integer).
type uploadFileResponse struct {
	gen.GetDocumentUploadFile200JSONResponse
	createdAt json.RawMessage
}

func (r uploadFileResponse) VisitGetDocumentUploadFileResponse(w http.ResponseWriter) error {
	type plain gen.GetDocumentUploadFile200JSONResponse
	body, err := json.Marshal(struct {
		plain
		CreatedAt json.RawMessage `json:"created_at"`
	}{plain(r.GetDocumentUploadFile200JSONResponse), r.createdAt})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return err
}
