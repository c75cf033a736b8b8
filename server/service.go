package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/version"
)

// GetServiceInfo answers GET /: a greeting with the API's and the server's versions, as Dify
// answers at the root of its Service API.
func (s *Server) GetServiceInfo(context.Context, gen.GetServiceInfoRequestObject) (gen.GetServiceInfoResponseObject, error) {
	return gen.GetServiceInfo200JSONResponse{
		Welcome:       "Parley Service API",
		ApiVersion:    gen.V1,
		ServerVersion: version.String(),
	}, nil
}

// Identify sets X-Version (this binary's version, as GET / reports it) and X-Env (the
// deployment's name, DEPLOY_ENV) on every response, as Dify does; Dify's SDKs read X-Version
// into the errors they return.
func Identify(next http.Handler, env string) http.Handler {
	v := []string{version.String()}
	e := []string{env}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Version"] = v
		h["X-Env"] = e
		next.ServeHTTP(w, r)
	})
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
