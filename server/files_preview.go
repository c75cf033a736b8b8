package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/sse"
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
	eu, err := s.runs.EndUser(ctx, app.ID, str(s.endUserPtr(ctx, req.Params.User)))
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
		FileContentAsteriskResponse: fileContent(f, body, boolOr(req.Params.AsAttachment, false))}, s.streamStall}, nil
}

type previewFileResponse struct {
	gen.PreviewFile200AsteriskResponse
	stall time.Duration
}

func (r previewFileResponse) VisitPreviewFileResponse(w http.ResponseWriter) error {
	return serveFile(w, r.stall, r.PreviewFile200AsteriskResponse.VisitPreviewFileResponse)
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
		FileContentAsteriskResponse: fileContent(f, body, boolOr(p.AsAttachment, false))}, s.streamStall}, nil
}

type signedFileResponse struct {
	gen.GetSignedFile200AsteriskResponse
	stall time.Duration
}

func (r signedFileResponse) VisitGetSignedFileResponse(w http.ResponseWriter) error {
	return serveFile(w, r.stall, r.GetSignedFile200AsteriskResponse.VisitGetSignedFileResponse)
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// stallGuard bounds each write of a file or archive body to a client that stopped reading, as
// event streams are bounded: once the socket buffers are full, a write that cannot finish
// within the stall timeout fails, the copy ends and the connection is closed, instead of
// holding the handler (and an open file) for ever. done clears the deadline, so that it cannot
// reach the next response on the same connection.
func stallGuard(w http.ResponseWriter, stall time.Duration) (guarded http.ResponseWriter, done func()) {
	if stall == 0 {
		stall = sse.DefaultStallTimeout
	}
	if stall < 0 {
		return w, func() {}
	}
	g := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}
	return g, func() {
		if g.armed {
			_ = g.rc.SetWriteDeadline(time.Time{})
		}
	}
}

type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	armed bool
}

func (s *stallWriter) Write(p []byte) (int, error) {
	if s.rc.SetWriteDeadline(time.Now().Add(s.stall)) == nil {
		s.armed = true
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *stallWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
