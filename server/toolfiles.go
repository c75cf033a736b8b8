package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/store"
)

// GetToolFile answers GET /files/tools/{file}: the bytes of a file a tool returned, reached
// through a signed link and no API key. The signature is checked before the file is looked up,
// so a forged link learns nothing about which files exist.
func (s *Server) GetToolFile(ctx context.Context, req gen.GetToolFileRequestObject) (gen.GetToolFileResponseObject, error) {
	p := req.Params
	f, body, err := s.files.OpenToolFile(ctx, req.File, p.Timestamp, p.Nonce, p.Sign)
	switch {
	case errors.Is(err, files.ErrFileNotFound):
		// Here an unknown file is a 404, not the invalid_param of a bad upload reference.
		return gen.GetToolFile404JSONResponse{NotFoundJSONResponse: fileNotFound("not_found")}, nil
	case err != nil:
		return nil, err
	}
	return toolFileResponse{gen.GetToolFile200AsteriskResponse{FileContentAsteriskResponse: fileContent(f, body, false)}, s.streamStall}, nil
}

// toolFileResponse is the generated response with the headers of safeFileHeaders, its writes
// bounded by stallGuard.
type toolFileResponse struct {
	gen.GetToolFile200AsteriskResponse
	stall time.Duration
}

func (r toolFileResponse) VisitGetToolFileResponse(w http.ResponseWriter) error {
	return serveFile(w, r.stall, r.GetToolFile200AsteriskResponse.VisitGetToolFileResponse)
}

// serveFile is how every file route writes its generated response: visit writes it with the
// headers of safeFileHeaders, each write bounded by stallGuard.
func serveFile(w http.ResponseWriter, stall time.Duration, visit func(http.ResponseWriter) error) error {
	safeFileHeaders(w)
	w, done := stallGuard(w, stall)
	defer done()
	return visit(w)
}

// fileNotFound is the 404 of the file routes, with the code the route gives it.
func fileNotFound(code string) gen.NotFoundJSONResponse {
	msg := "file is not found"
	if code == "file_not_found" {
		msg = "The requested file was not found."
	}
	return gen.NotFoundJSONResponse{Code: code, Message: msg, Status: http.StatusNotFound}
}

// fileContent is how every file route serves a stored file: its stored content type (or
// application/octet-stream when that does not parse), `X-Content-Type-Options: nosniff`, and
// `Content-Disposition: inline` unless the client asked for an attachment or the type is one a
// browser could run as a page or script (HTML, SVG, XML, JavaScript), which is only ever an
// attachment.
func fileContent(f store.UploadFile, body io.ReadCloser, asAttachment bool) gen.FileContentAsteriskResponse {
	contentType := f.MimeType
	if _, _, perr := mime.ParseMediaType(contentType); perr != nil || contentType == "" {
		contentType = "application/octet-stream"
	}
	disposition := "inline"
	if asAttachment || files.ActiveContent(contentType) {
		// A page or an SVG served from the API's origin could run script there: such files are
		// downloads, never rendered.
		disposition = "attachment"
	}
	disposition = mime.FormatMediaType(disposition, map[string]string{"filename": f.Name})
	nosniff := "nosniff"
	return gen.FileContentAsteriskResponse{
		Body: body, ContentType: contentType, ContentLength: f.Size,
		Headers: gen.FileContentResponseHeaders{ContentDisposition: &disposition, XContentTypeOptions: &nosniff},
	}
}

// safeFileHeaders keeps a browser from treating a served file as part of the API's origin: a
// sandboxing Content-Security-Policy, and no caching beyond a signed link's life.
func safeFileHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	w.Header().Set("Cache-Control", "private, max-age=300")
}
