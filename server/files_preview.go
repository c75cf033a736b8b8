package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/files"
)

// PreviewFile answers GET /files/{file_id}/preview: a file of the app that belongs to the end
// user `user` names, served as fileContent serves every file. Whose file it is, and whether it
// exists, look the same from outside: both are 404 file_not_found.
func (s *Server) PreviewFile(ctx context.Context, req gen.PreviewFileRequestObject) (gen.PreviewFileResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	notFound := gen.PreviewFile404JSONResponse{NotFoundJSONResponse: fileNotFound("file_not_found")}
	if !validID(req.FileId) {
		return notFound, nil
	}
	eu, err := s.runs.EndUser(ctx, app.ID, str(req.Params.User))
	if err != nil {
		return nil, err
	}
	f, body, err := s.files.OpenOwned(ctx, app.ID, eu.ID, req.FileId)
	switch {
	case errors.Is(err, files.ErrFileNotFound):
		return notFound, nil
	case err != nil:
		return nil, err
	}
	return previewFileResponse{gen.PreviewFile200AsteriskResponse{
		FileContentAsteriskResponse: fileContent(f, body, boolOr(req.Params.AsAttachment, false))}}, nil
}

type previewFileResponse struct {
	gen.PreviewFile200AsteriskResponse
}

func (r previewFileResponse) VisitPreviewFileResponse(w http.ResponseWriter) error {
	safeFileHeaders(w)
	return r.PreviewFile200AsteriskResponse.VisitPreviewFileResponse(w)
}

// GetSignedFile answers GET /files/{file_id}/file-preview: an uploaded file reached through a
// signed link and no API key. The signature is checked before the file is looked up.
func (s *Server) GetSignedFile(ctx context.Context, req gen.GetSignedFileRequestObject) (gen.GetSignedFileResponseObject, error) {
	p := req.Params
	f, body, err := s.files.OpenSignedFile(ctx, req.FileId, p.Timestamp, p.Nonce, p.Sign)
	switch {
	case errors.Is(err, files.ErrFileNotFound):
		return gen.GetSignedFile404JSONResponse{NotFoundJSONResponse: fileNotFound("not_found")}, nil
	case err != nil:
		return nil, err
	}
	return signedFileResponse{gen.GetSignedFile200AsteriskResponse{
		FileContentAsteriskResponse: fileContent(f, body, boolOr(p.AsAttachment, false))}}, nil
}

type signedFileResponse struct {
	gen.GetSignedFile200AsteriskResponse
}

func (r signedFileResponse) VisitGetSignedFileResponse(w http.ResponseWriter) error {
	safeFileHeaders(w)
	return r.GetSignedFile200AsteriskResponse.VisitGetSignedFileResponse(w)
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}
