package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/store"
)

// spooledPart is the file part of an upload, kept in a temporary file until the whole form
// (and so the `user` field, which may come after it) has been read.
type spooledPart struct {
	filename, contentType string
	tmp                   *os.File
}

func (p *spooledPart) close() {
	if p.tmp != nil {
		p.tmp.Close()
		os.Remove(p.tmp.Name())
	}
}

// UploadFile answers POST /files/upload: one `file` part, an optional `user` field.
func (s *Server) UploadFile(ctx context.Context, req gen.UploadFileRequestObject) (gen.UploadFileResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	var (
		user    string
		file    *spooledPart
		nFiles  int
		maxSize = s.maxUploadBytes + 1
	)
	defer func() {
		if file != nil {
			file.close()
		}
	}()
	for {
		part, err := req.Body.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, apiError(http.StatusBadRequest, "bad_request", "Malformed multipart body.").withCause(err)
		}
		switch part.FormName() {
		case "user":
			b, err := io.ReadAll(io.LimitReader(part, 1<<10))
			if err != nil {
				return nil, err
			}
			user = string(b)
		case "file":
			if !isFilePart(part) {
				// A plain form field named "file" is no file, as werkzeug sees it.
				break
			}
			nFiles++
			if nFiles > 1 {
				continue
			}
			tmp, err := os.CreateTemp("", "parley-upload-*")
			if err != nil {
				return nil, err
			}
			file = &spooledPart{filename: part.FileName(), contentType: part.Header.Get("Content-Type"), tmp: tmp}
			if _, err := io.Copy(tmp, io.LimitReader(part, maxSize)); err != nil {
				return nil, err
			}
		}
		part.Close()
	}
	switch {
	case nFiles == 0:
		return nil, apiError(http.StatusBadRequest, "no_file_uploaded", "Please upload your file.")
	case nFiles > 1:
		return nil, apiError(http.StatusBadRequest, "too_many_files", "Only one file is allowed.")
	}
	if user == "" {
		user = conversations.AnonymousUser
	}
	eu, err := s.endUsers.EndUser(ctx, app.ID, user)
	if err != nil {
		return nil, err
	}
	if _, err := file.tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	f, err := s.files.Upload(ctx, files.Upload{
		AppID: app.ID, EndUserID: eu.ID, Filename: file.filename, ContentType: file.contentType, Body: file.tmp,
	})
	if err != nil {
		return nil, domainError(err)
	}
	return gen.UploadFile201JSONResponse(uploadedFile(f)), nil
}

// isFilePart reports whether a part carries a filename parameter (possibly empty): that, not
// its name, makes it a file upload.
func isFilePart(p *multipart.Part) bool {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return false
	}
	_, plain := params["filename"]
	_, ext := params["filename*"]
	return plain || ext
}

func uploadedFile(f store.UploadFile) gen.UploadedFile {
	return gen.UploadedFile{
		Id: mustUUID(f.ID), Name: f.Name, Size: f.Size, Extension: f.Extension, MimeType: f.MimeType,
		CreatedBy: f.CreatedBy, CreatedAt: f.CreatedAt.Unix(),
	}
}

// EndUsers finds or creates the end user a `user` value names; *store.Store implements it.
type EndUsers interface {
	EndUser(ctx context.Context, appID, sessionID string) (store.EndUser, error)
}
