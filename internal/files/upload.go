package files

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/store"
)

// MaxNameLen is the longest stored file name, in characters (runes).
// Longer names lose the end of their stem and keep their extension.
const MaxNameLen = 255

// sniffLen is how much of the body http.DetectContentType looks at.
const sniffLen = 512

// octetStream is the type clients send when they do not know better; it
// triggers detection.
const octetStream = "application/octet-stream"

// Upload is one file part of a POST /files/upload request.
type Upload struct {
	// AppID and EndUserID own the file; both are required.
	AppID     string
	EndUserID string
	// Filename is the part's file name, as the client sent it.
	Filename string
	// ContentType is the part's Content-Type header ("" when absent).
	ContentType string
	// Body is the part's content. It is read once, as a stream.
	Body io.Reader
}

// Upload checks u, streams its body into the blob store and records it,
// returning the stored row. The checks follow Dify's service API
// (controllers/service_api/app/file.py, then services/file_service.py), in
// this order, each with its own error:
//
//  1. no Content-Type: [ErrUnsupportedType];
//  2. no file name: [ErrFilenameMissing];
//  3. '/' or '\' in the name: [ErrInvalidFilename];
//  4. blacklisted extension: [*ExtensionNotAllowedError];
//  5. more bytes than the category's limit: [*TooLargeError], detected
//     while streaming, never by buffering the file.
//
// The stored MimeType is the media type of ContentType, lower case and
// without parameters (as werkzeug's FileStorage.mimetype); when that is
// application/octet-stream it is guessed from the extension, then from the
// first 512 bytes. Extension is lower case without the dot ("" if none);
// Name is the file name as given, cut to [MaxNameLen] characters keeping
// the extension, with invalid UTF-8 replaced. The blob key is
// uploads/<app id>/<file id>.
//
// On any failure nothing is left behind: no blob, no row. An end user who
// is not of AppID gives an error wrapping store.ErrNotFound.
func (s *Service) Upload(ctx context.Context, u Upload) (store.UploadFile, error) {
	if u.AppID == "" || u.EndUserID == "" || u.Body == nil {
		return store.UploadFile{}, errors.New("files: upload: app id, end user id and body are required")
	}
	// Dify checks the MIME type before the file name (file.py).
	mimeType := mediaType(u.ContentType)
	if mimeType == "" {
		return store.UploadFile{}, fmt.Errorf("files: upload: no content type: %w", ErrUnsupportedType)
	}
	if err := CheckName(u.Filename); err != nil {
		return store.UploadFile{}, fmt.Errorf("files: upload: %w", err)
	}
	name := strings.ToValidUTF8(u.Filename, "\uFFFD")
	rawExt := rawExtension(name)
	ext := strings.ToLower(rawExt)
	if ext != "" && s.blacklist[ext] {
		return store.UploadFile{}, &ExtensionNotAllowedError{Extension: ext}
	}
	category := Category(ext)
	limit := SizeLimit(s.limits, category)

	body := u.Body
	if mimeType == octetStream {
		br := bufio.NewReaderSize(body, sniffLen)
		// A short body or a read error leaves a shorter head; a read
		// error is kept by br and reported again by blob.Put.
		head, _ := br.Peek(sniffLen)
		mimeType = detectType(ext, head)
		body = br
	}

	id := store.NewID()
	key := "uploads/" + u.AppID + "/" + id
	if !blob.ValidKey(key) {
		return store.UploadFile{}, fmt.Errorf("files: upload: app id %q does not make a valid blob key", u.AppID)
	}
	size, hash, err := s.blobs.Put(ctx, key, body, limit)
	if errors.Is(err, blob.ErrTooLarge) {
		return store.UploadFile{}, &TooLargeError{Limit: limit, Category: category}
	}
	if err != nil {
		return store.UploadFile{}, fmt.Errorf("files: upload: %w", err)
	}
	f, err := s.store.CreateUploadFile(ctx, store.UploadFile{
		ID:         id,
		AppID:      u.AppID,
		EndUserID:  u.EndUserID,
		Name:       trimName(name, rawExt),
		Size:       size,
		Extension:  ext,
		MimeType:   mimeType,
		StorageKey: key,
		Hash:       hash,
		CreatedBy:  u.EndUserID,
	})
	if err != nil {
		s.removeBlob(ctx, key)
		return store.UploadFile{}, fmt.Errorf("files: upload: %w", err)
	}
	return f, nil
}

// CheckName applies Dify's file name checks (FileService.upload_file):
// the name is required ([ErrFilenameMissing]) and may not contain '/' or
// '\' ([ErrInvalidFilename]), which Dify refuses rather than reduce the
// name to its last element. A NUL cannot be stored in a PostgreSQL TEXT
// column, so it is refused like the separators rather than fail later.
// Callers that see the client's name before reading the file use it to
// refuse the file unread.
func CheckName(name string) error {
	if name == "" {
		return ErrFilenameMissing
	}
	if strings.ContainsAny(name, "/\\\x00") {
		return ErrInvalidFilename
	}
	return nil
}

// removeBlob deletes a blob whose row could not be written. It runs even
// if ctx is done (the client hanging up is a common reason to be here), and
// a failure is logged, not returned: the caller reports the original error.
func (s *Service) removeBlob(ctx context.Context, key string) {
	if err := s.blobs.Delete(context.WithoutCancel(ctx), key); err != nil {
		s.log.ErrorContext(ctx, "files: could not remove blob of failed upload", "storage_key", key, "error", err)
	}
}

// mediaType returns the media type of a Content-Type value, lower case
// and without parameters, or "" if there is none.
func mediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// rawExtension returns name's extension without the dot, as Python's
// os.path.splitext(name)[1].lstrip(".") does in Dify (which then lower-cases
// it): dots leading the name do not start an extension (".bashrc" has
// none), and a trailing dot gives "".
func rawExtension(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || strings.TrimLeft(name[:i], ".") == "" {
		return ""
	}
	return name[i+1:]
}

// detectType guesses a media type for content whose declared type was
// missing or application/octet-stream: by extension first (as Dify's
// mimetypes.guess_type), then by sniffing head. It never returns "".
func detectType(ext string, head []byte) string {
	if ext != "" {
		if mt := mediaType(mime.TypeByExtension("." + ext)); mt != "" {
			return mt
		}
	}
	return mediaType(http.DetectContentType(head))
}

// trimName cuts name to MaxNameLen runes, keeping ".<rawExt>" at the end
// if the name has an extension that leaves room for some of the stem.
func trimName(name, rawExt string) string {
	if utf8.RuneCountInString(name) <= MaxNameLen {
		return name
	}
	suffix := ""
	if rawExt != "" {
		suffix = name[len(name)-len(rawExt)-1:]
	}
	keep := MaxNameLen - utf8.RuneCountInString(suffix)
	if keep < 1 {
		suffix, keep = "", MaxNameLen
	}
	stem := name[:len(name)-len(suffix)]
	n := 0
	for i := range stem {
		if n == keep {
			return stem[:i] + suffix
		}
		n++
	}
	return stem + suffix
}
