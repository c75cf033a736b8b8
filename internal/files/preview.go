package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/store"
)

// Uploaded files (an end user's uploads, knowledge documents' sources) are reached two ways:
// through the app key, by the end user who owns them (GET /files/{id}/preview), and through a
// signed link that needs no key and expires (GET /files/{id}/file-preview), which is what a
// message's file `url`, an upload's `source_url` and a document download hand out, as Dify
// hands out its signed file-preview links.

// FilePreviewSuffix ends the path of a signed link to an uploaded file:
// FilesPath + "/<file id>" + FilePreviewSuffix + "?timestamp=…&nonce=…&sign=…".
const (
	FilesPath         = "/v1/files"
	FilePreviewSuffix = "/file-preview"
)

// UploadFileURL is a signed link to the uploaded file with this id: under the configured public
// base URL when there is one, else a path from the server's root. With asAttachment the link
// asks for a download.
func (s *Service) UploadFileURL(fileID string, asAttachment bool) string {
	ts := strconv.FormatInt(s.now().Unix(), 10)
	var n [16]byte
	_, _ = rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	q := url.Values{"timestamp": {ts}, "nonce": {nonce}, "sign": {s.sign(fileID, ts, nonce)}}
	if asAttachment {
		q.Set("as_attachment", "true")
	}
	return s.publicURL + FilesPath + "/" + url.PathEscape(fileID) + FilePreviewSuffix + "?" + q.Encode()
}

// OpenSignedFile checks a signed link to an uploaded file and returns the file and its
// content; the caller closes it. A bad or expired signature gives [ErrBadSignature], checked
// before anything is looked up; an unknown file [ErrFileNotFound].
func (s *Service) OpenSignedFile(ctx context.Context, id, timestamp, nonce, sign string) (store.UploadFile, io.ReadCloser, error) {
	if err := s.verify(id, timestamp, nonce, sign); err != nil {
		return store.UploadFile{}, nil, err
	}
	f, err := s.store.UploadFile(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.UploadFile{}, nil, fmt.Errorf("files: signed file %s: %w", id, ErrFileNotFound)
	}
	if err != nil {
		return store.UploadFile{}, nil, fmt.Errorf("files: signed file %s: %w", id, err)
	}
	rc, err := s.Open(ctx, f)
	if err != nil {
		return store.UploadFile{}, nil, err
	}
	return f, rc, nil
}

// OpenOwned returns a file of appID that belongs to the end user endUserID, and its content;
// the caller closes it. The end user owns the files they uploaded and the files an agent's
// tools returned in answer to them. Anything else, an unknown id included, wraps
// [ErrFileNotFound] and says nothing about whose file it is.
func (s *Service) OpenOwned(ctx context.Context, appID, endUserID, id string) (store.UploadFile, io.ReadCloser, error) {
	notFound := fmt.Errorf("files: file %s: %w", id, ErrFileNotFound)
	if appID == "" || endUserID == "" || id == "" {
		return store.UploadFile{}, nil, notFound
	}
	f, err := s.store.UploadFile(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.UploadFile{}, nil, notFound
	}
	if err != nil {
		return store.UploadFile{}, nil, fmt.Errorf("files: preview %s: %w", id, err)
	}
	toolFile := f.EndUserID == "" && strings.HasPrefix(f.StorageKey, "tools/") && f.CreatedBy == endUserID
	if f.AppID != appID || (f.EndUserID != endUserID && !toolFile) {
		return store.UploadFile{}, nil, notFound
	}
	rc, err := s.Open(ctx, f)
	if err != nil {
		return store.UploadFile{}, nil, err
	}
	return f, rc, nil
}
