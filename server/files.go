package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/store"
)

// UploadFile answers POST /files/upload: one `file` part, an optional `user` field. The file is
// spooled to disk while the form streams in (the `user` field may come after it), and cut off
// once it is over the largest upload limit: then the files service refuses it with Dify's error
// for its name, type and size.
func (s *Server) UploadFile(ctx context.Context, req gen.UploadFileRequestObject) (gen.UploadFileResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	maxSize := s.maxUploadBytes
	if maxSize <= 0 {
		maxSize = 15 << 20
	}
	form, err := readForm(req.Body, formSpec{
		fields:    map[string]int64{"user": 1 << 10},
		fileLimit: func(string) (int64, string) { return maxSize, "" },
	})
	defer form.close()
	var tooLarge *files.TooLargeError
	if err != nil && !errors.As(err, &tooLarge) {
		return nil, err
	}
	if tooLarge == nil {
		switch {
		case form.nFiles == 0:
			return nil, apiError(http.StatusBadRequest, "no_file_uploaded", "Please upload your file.")
		case form.nFiles > 1:
			return nil, apiError(http.StatusBadRequest, "too_many_files", "Only one file is allowed.")
		}
	}
	eu, err := s.runs.EndUser(ctx, app.ID, s.endUser(ctx, form.fields["user"]))
	if err != nil {
		return nil, err
	}
	body, err := form.file.rewind()
	if err != nil {
		return nil, err
	}
	f, err := s.files.Upload(ctx, files.Upload{
		AppID: app.ID, EndUserID: eu.ID, Filename: form.file.filename, ContentType: form.file.contentType, Body: body,
	})
	if err != nil {
		return nil, err
	}
	return gen.UploadFile201JSONResponse(s.uploadedFile(f)), nil
}

// uploadedFile is an upload as current Dify answers it: its `source_url` a signed link to the
// file, the members a Service API upload does not have null.
func (s *Server) uploadedFile(f store.UploadFile) gen.UploadedFile {
	source := s.files.UploadFileURL(f.ID, false)
	return gen.UploadedFile{
		Id: mustUUID(f.ID), Name: f.Name, Size: f.Size, Extension: f.Extension, MimeType: f.MimeType,
		CreatedBy: f.CreatedBy, CreatedAt: f.CreatedAt.Unix(), SourceUrl: &source, TenantId: s.tenantID,
	}
}
