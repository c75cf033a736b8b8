package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/store"
)

// DocumentUpload is the source of a knowledge document: an uploaded file, or the text of a
// create-by-text request stored as a text file.
type DocumentUpload struct {
	// Filename is the client's file name, or for text the document's name as sent.
	Filename string
	// Text marks the text of a create-by-text request, stored as Dify's upload_text stores it:
	// under the name as sent (no file-name checks: it is a document name, not a file name),
	// with the extension "txt" and type text/plain whatever the name ends in.
	Text bool
	// ContentType is the part's Content-Type ("" is allowed: knowledge uploads go by extension).
	ContentType string
	// Body is read once, as a stream.
	Body io.Reader
	// CreatedBy is the account the request runs as.
	CreatedBy string
	// NoLimit skips the size check (text routes are not size-checked in Dify).
	NoLimit bool
}

// TextExtension is the extension of a document made from text.
const TextExtension = "txt"

// ExtractName is the name to pick f's text extractor by: its name, with its recorded extension
// added when the name does not end in it (a text document's name is the one its client chose).
func ExtractName(f store.UploadFile) string {
	if f.Extension == "" || strings.EqualFold(rawExtension(f.Name), f.Extension) {
		return f.Name
	}
	return f.Name + "." + f.Extension
}

// UploadDocument stores a knowledge document's source, with Dify's checks for dataset uploads
// (FileService with source "datasets"): a file name is required ([ErrFilenameMissing]; '/' and
// '\' are refused with [ErrInvalidFilename]), the extension must be one the extractor reads
// ([ErrUnsupportedType]), and the size must fit the extension's category limit
// ([*TooLargeError], detected while streaming). The blob key is datasets/<file id>. On failure
// nothing is left behind.
func (s *Service) UploadDocument(ctx context.Context, u DocumentUpload) (store.UploadFile, error) {
	if u.Body == nil || u.CreatedBy == "" {
		return store.UploadFile{}, errors.New("files: upload document: body and created_by are required")
	}
	name := strings.ToValidUTF8(u.Filename, "\uFFFD")
	rawExt := rawExtension(name)
	ext := strings.ToLower(rawExt)
	if u.Text {
		rawExt, ext = "", TextExtension
		u.ContentType = "text/plain"
	} else {
		if err := CheckName(u.Filename); err != nil {
			return store.UploadFile{}, fmt.Errorf("files: upload document: %w", err)
		}
		if !extract.Supported(name) || s.blacklist[ext] {
			return store.UploadFile{}, fmt.Errorf("files: upload document %q: %w", name, ErrUnsupportedType)
		}
	}
	category := Category(ext)
	limit := SizeLimit(s.limits, category)
	if u.NoLimit {
		limit = 1 << 40
	}
	mimeType := mediaType(u.ContentType)
	if mimeType == "" || mimeType == octetStream {
		mimeType = detectType(ext, nil)
	}
	id := store.NewID()
	key := "datasets/" + id
	size, hash, err := s.blobs.Put(ctx, key, u.Body, limit)
	if errors.Is(err, blob.ErrTooLarge) {
		return store.UploadFile{}, &TooLargeError{Limit: limit, Category: category}
	}
	if err != nil {
		return store.UploadFile{}, fmt.Errorf("files: upload document: %w", err)
	}
	f, err := s.store.CreateUploadFile(ctx, store.UploadFile{
		ID: id, Name: trimName(name, rawExt), Size: size, Extension: ext, MimeType: mimeType,
		StorageKey: key, Hash: hash, CreatedBy: u.CreatedBy,
	})
	if err != nil {
		s.removeBlob(ctx, key)
		return store.UploadFile{}, fmt.Errorf("files: upload document: %w", err)
	}
	return f, nil
}

// Lookup returns the upload row with this id without any ownership check, for knowledge
// documents (which belong to the workspace). An unknown id wraps [ErrFileNotFound].
func (s *Service) Lookup(ctx context.Context, id string) (store.UploadFile, error) {
	f, err := s.store.UploadFile(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.UploadFile{}, fmt.Errorf("files: file %s: %w", id, ErrFileNotFound)
	}
	if err != nil {
		return store.UploadFile{}, fmt.Errorf("files: lookup %s: %w", id, err)
	}
	return f, nil
}
