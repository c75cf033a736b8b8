package server

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/files"
)

// Multipart bodies are not decoded by the request validator (it would hold the whole form in
// memory); their handlers read them here as a stream: small text fields with a cap, the file part
// spooled to a temporary file with the upload size limit enforced while copying, so an
// oversized upload is cut off rather than read to its end.

// formSpec says what to keep of a multipart form.
type formSpec struct {
	// fields are the text fields to keep (the first of each name), with their size caps.
	fields map[string]int64
	// fileLimit gives the most bytes the `file` part may have, and its category, from its
	// file name.
	fileLimit func(filename string) (int64, string)
	// skipFile, when it returns true for the first file part's name, leaves the part unread
	// (the request fails on it anyway).
	skipFile func(filename string) bool
}

// uploadForm is what readForm kept of a form.
type uploadForm struct {
	fields map[string]string
	// long names the fields that were over their cap (their value is cut to it).
	long map[string]bool
	// file is the first `file` part carrying a file name, or nil; nFiles counts them all.
	file   *spooledPart
	nFiles int
}

// spooledPart is the file part of an upload, kept in a temporary file until the whole form has
// been read. tmp is nil when the part was skipped.
type spooledPart struct {
	filename, contentType string
	tmp                   *os.File
}

func (p *spooledPart) close() {
	if p != nil && p.tmp != nil {
		p.tmp.Close()
		os.Remove(p.tmp.Name())
		p.tmp = nil
	}
}

// rewind returns the spooled bytes from their start.
func (p *spooledPart) rewind() (io.Reader, error) {
	if _, err := p.tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return p.tmp, nil
}

// close removes the spooled file, if any.
func (f *uploadForm) close() {
	if f != nil {
		f.file.close()
	}
}

// has reports whether the form had the field.
func (f *uploadForm) has(name string) bool {
	_, ok := f.fields[name]
	return ok
}

// errMalformedForm answers a body that is not a well-formed multipart form.
var errMalformedForm = apiError(http.StatusBadRequest, "bad_request", "Malformed multipart body.")

// readForm reads a multipart form as a stream. When the file part is larger than its limit,
// reading stops at once and the error is a *files.TooLargeError; the form returned with it
// holds what was read so far (the file cut after limit+1 bytes). The caller closes the form.
// readForm leaves the rest of such a body unread: once the handler is done, net/http reads at
// most 256 KB of what is left to keep the connection, and otherwise answers with
// `Connection: close` and closes it, so the rest is not taken for a next request.
func readForm(r *multipart.Reader, spec formSpec) (*uploadForm, error) {
	f := &uploadForm{fields: map[string]string{}, long: map[string]bool{}}
	for {
		part, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return f, errMalformedForm.withCause(err)
		}
		name := part.FormName()
		if filename, ok := fileName(part); name == "file" && ok {
			// A field named "file" without a file name is no file, as werkzeug sees it.
			f.nFiles++
			if f.nFiles == 1 {
				if err := f.spool(part, filename, spec); err != nil {
					// Not part.Close: it would read the part, and so the body, to its end.
					return f, err
				}
			}
		} else if limit, keep := spec.fields[name]; keep && !f.has(name) {
			b, err := io.ReadAll(io.LimitReader(part, limit+1))
			if err != nil {
				part.Close()
				return f, errMalformedForm.withCause(err)
			}
			if int64(len(b)) > limit {
				b, f.long[name] = b[:limit], true
			}
			if !storable(string(b)) {
				part.Close()
				return f, errNotStorable(name)
			}
			f.fields[name] = string(b)
		}
		part.Close()
	}
}

func (f *uploadForm) spool(part *multipart.Part, filename string, spec formSpec) error {
	f.file = &spooledPart{filename: filename, contentType: part.Header.Get("Content-Type")}
	if !storable(f.file.filename) || !storable(f.file.contentType) {
		return errNotStorable("file")
	}
	if spec.skipFile != nil && spec.skipFile(f.file.filename) {
		return nil
	}
	tmp, err := os.CreateTemp("", "parley-upload-*")
	if err != nil {
		return err
	}
	f.file.tmp = tmp
	limit, category := spec.fileLimit(f.file.filename)
	n, err := io.Copy(tmp, io.LimitReader(part, limit+1))
	if err != nil {
		return errMalformedForm.withCause(err)
	}
	if n > limit {
		return &files.TooLargeError{Limit: limit, Category: category}
	}
	return nil
}

// fileName returns the filename parameter of a part (ok when it has one, possibly empty: that,
// not its name, makes a part a file upload), as the client sent it. Part.FileName is not used:
// it keeps only the last element of a path, and Dify refuses a name with '/' or '\' instead
// (files.CheckName).
func fileName(p *multipart.Part) (name string, ok bool) {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return "", false
	}
	// ParseMediaType also decodes an RFC 2231 filename* into "filename".
	name, ok = params["filename"]
	return name, ok
}

// uploadLimit is the size limit of an upload named filename (by its extension's category) and
// that category, from the configured limits.
func (s *Server) uploadLimit(filename string) (int64, string) {
	category := files.Category(filepath.Ext(filename))
	return files.SizeLimit(config.UploadLimits{
		FileSizeLimitMB: s.limits.File, ImageFileSizeLimitMB: s.limits.Image,
		AudioFileSizeLimitMB: s.limits.Audio, VideoFileSizeLimitMB: s.limits.Video,
	}, category), category
}

// fileTooLargeMessage is Dify's message for an upload over its limit, with the limit in the
// unit the settings use.
func fileTooLargeMessage(e *files.TooLargeError) string {
	if e.Limit >= 1<<20 && e.Limit%(1<<20) == 0 {
		return fmt.Sprintf("File size exceeded. The limit is %d MB.", e.Limit>>20)
	}
	return fmt.Sprintf("File size exceeded. The limit is %d bytes.", e.Limit)
}
