package server

import (
	"context"
	"errors"
	"mime"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/files"
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
		return gen.GetToolFile404JSONResponse{NotFoundJSONResponse: gen.NotFoundJSONResponse{
			Code: "not_found", Message: "file is not found", Status: http.StatusNotFound}}, nil
	case err != nil:
		return nil, err
	}
	contentType := f.MimeType
	if _, _, perr := mime.ParseMediaType(contentType); perr != nil || contentType == "" {
		contentType = "application/octet-stream"
	}
	disposition := "inline"
	if files.ActiveContent(contentType) {
		// A page or an SVG served from the API's origin could run script there: such files are
		// downloads, never rendered.
		disposition = "attachment"
	}
	disposition = mime.FormatMediaType(disposition, map[string]string{"filename": f.Name})
	nosniff := "nosniff"
	return toolFileResponse{gen.GetToolFile200AsteriskResponse{
		Body: body, ContentType: contentType, ContentLength: f.Size,
		Headers: gen.GetToolFile200ResponseHeaders{ContentDisposition: &disposition, XContentTypeOptions: &nosniff},
	}}, nil
}

// toolFileResponse is the generated response with the headers that keep a browser from
// treating the file as part of the API's origin: a sandboxing Content-Security-Policy and no
// caching beyond the link's life.
type toolFileResponse struct {
	gen.GetToolFile200AsteriskResponse
}

func (r toolFileResponse) VisitGetToolFileResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	w.Header().Set("Cache-Control", "private, max-age=300")
	return r.GetToolFile200AsteriskResponse.VisitGetToolFileResponse(w)
}
