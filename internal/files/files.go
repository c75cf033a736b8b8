// Package files handles the files end users attach to messages: uploads
// through POST /files/upload (kept as bytes in a [blob.Store] and as an
// upload_files row in the store), and files given by URL, which are fetched
// on demand for vision models.
//
// Uploads follow Dify's rules (docs/dify-compat.md, "File uploads"): the
// checks run in Dify's order and each failure is a distinct error value, so
// that server/ can map it to Dify's code and status. The size limit depends
// on the file's category (image, audio, video, document) and is enforced
// while the body streams into the blob store; a failed upload leaves neither
// a blob nor a row behind.
//
// Remote fetches are bounded in time, size and redirects, and, unless
// [Options.AllowPrivateNetworks] is set, refuse to connect to loopback,
// private, link-local and unspecified addresses. The check runs in the
// dialer on the address actually being connected to, after DNS resolution,
// so a name that resolves (or re-resolves) to an internal address is
// refused too.
package files

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// Errors returned (possibly wrapped) by [Service] methods. The comment on
// each names the Dify error code and HTTP status it corresponds to
// (docs/dify-compat.md); server/ does the mapping.
var (
	// ErrUnsupportedType: the file part has no Content-Type
	// (unsupported_file_type, 415).
	ErrUnsupportedType = errors.New("file type not allowed")
	// ErrFilenameMissing: the file part has no file name
	// (filename_not_exists_error, 400).
	ErrFilenameMissing = errors.New("file name missing")
	// ErrInvalidFilename: the file name contains '/' or '\' (or a NUL
	// byte, which no database can store) (invalid_param, 400; Dify's
	// message is "Filename contains invalid characters").
	ErrInvalidFilename = errors.New("file name contains invalid characters")
	// ErrExtensionNotAllowed: the extension is in
	// UPLOAD_FILE_EXTENSION_BLACKLIST (invalid_param, 400). It is always
	// returned inside an [*ExtensionNotAllowedError], whose Error() is
	// Dify's message.
	ErrExtensionNotAllowed = errors.New("file extension not allowed")
	// ErrTooLarge: the file exceeds its category's size limit, or a remote
	// file exceeds RemoteMaxBytes (file_too_large, 413). It is always
	// returned inside a [*TooLargeError] carrying the limit.
	ErrTooLarge = errors.New("file too large")
	// ErrFileNotFound: no file with that id belongs to this app and end
	// user (file_not_found, 404). A missing id and someone else's file
	// give the same error.
	ErrFileNotFound = errors.New("file not found")
	// ErrInvalidURL: a remote file URL that is not an absolute http or
	// https URL (invalid_param, 400).
	ErrInvalidURL error = &remoteError{"invalid remote file URL", MsgInvalidURL}
	// ErrRemoteForbidden: a remote file URL leads (directly, through DNS
	// or through a redirect) to an address Parley refuses to connect to.
	ErrRemoteForbidden error = &remoteError{"remote file address not allowed", MsgRemoteRefused}
	// ErrRemoteFetch: a remote file could not be fetched (connection
	// failure, timeout, too many redirects, or a non-2xx answer, then
	// inside a [*StatusError]).
	ErrRemoteFetch error = &remoteError{"remote file fetch failed", MsgRemoteNotFetch}
)

// remoteError is a remote-fetch sentinel. The errors that wrap it name addresses and the
// resolver, which belong in the log; its SafeMessage is what a client may see.
type remoteError struct{ text, safe string }

func (e *remoteError) Error() string { return e.text }

// SafeMessage implements safeerr.Error.
func (e *remoteError) SafeMessage() string { return e.safe }

// ExtensionNotAllowedError is returned by [Service.Upload] for a
// blacklisted extension. It matches [ErrExtensionNotAllowed] with
// errors.Is.
type ExtensionNotAllowedError struct {
	// Extension is lower case, without the dot.
	Extension string
}

// Error returns Dify's client-facing message, e.g. "File extension '.exe'
// is not allowed for security reasons" (services/file_service.py), so
// server/ can send it as is.
func (e *ExtensionNotAllowedError) Error() string {
	return fmt.Sprintf("File extension '.%s' is not allowed for security reasons", e.Extension)
}

// SafeMessage implements safeerr.Error.
func (e *ExtensionNotAllowedError) SafeMessage() string { return e.Error() }

// Unwrap returns [ErrExtensionNotAllowed].
func (e *ExtensionNotAllowedError) Unwrap() error { return ErrExtensionNotAllowed }

// TooLargeError reports a file over its size limit. It matches
// [ErrTooLarge] with errors.Is.
type TooLargeError struct {
	// Limit is the largest accepted size in bytes.
	Limit int64
	// Category is the upload's category (see [Category]), or "" for a
	// remote file.
	Category string
}

// Error describes the limit.
func (e *TooLargeError) Error() string {
	if e.Category == "" {
		return fmt.Sprintf("files: remote file larger than %d bytes", e.Limit)
	}
	return fmt.Sprintf("files: %s file larger than %d bytes", e.Category, e.Limit)
}

// Unwrap returns [ErrTooLarge].
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// StatusError reports a remote file server's non-2xx answer. It matches
// [ErrRemoteFetch] with errors.Is.
type StatusError struct {
	// StatusCode is the HTTP status of the last response (after
	// redirects).
	StatusCode int
}

// Error names the status.
func (e *StatusError) Error() string {
	return fmt.Sprintf("files: remote file server answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// Unwrap returns [ErrRemoteFetch].
func (e *StatusError) Unwrap() error { return ErrRemoteFetch }

// File categories returned by [Category]. They are also Dify's file
// "type" values, except that Dify calls an extension outside its document
// list "custom"; for size limits the two are the same.
const (
	CategoryImage    = "image"
	CategoryAudio    = "audio"
	CategoryVideo    = "video"
	CategoryDocument = "document"
)

// Dify's extension lists (api/constants/__init__.py: IMAGE_EXTENSIONS,
// AUDIO_EXTENSIONS, VIDEO_EXTENSIONS).
var categories = map[string]string{
	"jpg": CategoryImage, "jpeg": CategoryImage, "png": CategoryImage, "webp": CategoryImage, "gif": CategoryImage, "svg": CategoryImage,
	"mp3": CategoryAudio, "m4a": CategoryAudio, "wav": CategoryAudio, "amr": CategoryAudio, "mpga": CategoryAudio,
	"mp4": CategoryVideo, "mov": CategoryVideo, "mpeg": CategoryVideo, "webm": CategoryVideo,
}

// Category returns the category of a file extension (with or without the
// leading dot, any case): [CategoryImage], [CategoryAudio],
// [CategoryVideo], or [CategoryDocument] for everything else, including "".
func Category(ext string) string {
	if c, ok := categories[strings.ToLower(strings.TrimPrefix(ext, "."))]; ok {
		return c
	}
	return CategoryDocument
}

// Dify's default limits in megabytes (docs/dify-compat.md), used for
// a limit that is not positive.
const (
	defaultFileMB  = 15
	defaultImageMB = 10
	defaultAudioMB = 50
	defaultVideoMB = 100
)

// SizeLimit returns the size limit in bytes for a category under limits:
// the configured megabytes times 1024×1024, as Dify computes it. A limit
// that is not positive falls back to Dify's default for the category
// (config validation normally rules that out). An unknown category gets
// the document limit.
func SizeLimit(limits config.UploadLimits, category string) int64 {
	mb, def := limits.FileSizeLimitMB, defaultFileMB
	switch category {
	case CategoryImage:
		mb, def = limits.ImageFileSizeLimitMB, defaultImageMB
	case CategoryAudio:
		mb, def = limits.AudioFileSizeLimitMB, defaultAudioMB
	case CategoryVideo:
		mb, def = limits.VideoFileSizeLimitMB, defaultVideoMB
	}
	if mb <= 0 {
		mb = def
	}
	return int64(mb) << 20
}

// DataURL returns data as a base64 "data:" URL (RFC 2397), the form in
// which images are sent inline to vision models. An empty contentType
// becomes application/octet-stream.
func DataURL(contentType string, data []byte) string {
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	var b strings.Builder
	b.Grow(len("data:;base64,") + len(contentType) + base64.StdEncoding.EncodedLen(len(data)))
	b.WriteString("data:")
	b.WriteString(contentType)
	b.WriteString(";base64,")
	b.WriteString(base64.StdEncoding.EncodeToString(data))
	return b.String()
}

// Store is the part of *store.Store this package uses.
type Store interface {
	CreateUploadFile(ctx context.Context, f store.UploadFile) (store.UploadFile, error)
	UploadFile(ctx context.Context, id string) (store.UploadFile, error)
	AddMessageFiles(ctx context.Context, files []store.MessageFile) ([]store.MessageFile, error)
}

var _ Store = (*store.Store)(nil)

// DefaultRemoteTimeout bounds a remote fetch when
// [Options.RemoteTimeout] is not set.
const DefaultRemoteTimeout = 30 * time.Second

// Options configures [New].
type Options struct {
	// Store keeps upload_files rows. Needed by Upload and Get.
	Store Store
	// Blobs keeps file content. Needed by Upload and Open.
	Blobs blob.Store
	// Limits are the upload size limits and extension blacklist.
	Limits config.UploadLimits
	// HTTPClient is the base client for remote fetches (default: a zero
	// http.Client). New copies it and never changes it; the copy's
	// CheckRedirect is replaced, and its Timeout, if any, applies on top
	// of RemoteTimeout. Unless AllowPrivateNetworks is set, its Transport
	// must be nil (http.DefaultTransport) or an *http.Transport: a clone
	// of it gets the guarded dialer and no proxy (through a proxy the
	// dialer would check the proxy's address, not the file server's). New
	// panics otherwise, a wiring mistake.
	HTTPClient *http.Client
	// RemoteTimeout bounds a whole remote fetch, body included
	// (DefaultRemoteTimeout if <= 0).
	RemoteTimeout time.Duration
	// RemoteMaxBytes caps a remote file's size (default: the largest of
	// the configured upload limits).
	RemoteMaxBytes int64
	// AllowPrivateNetworks lets remote fetches reach loopback, private and
	// link-local addresses. For tests and trusted deployments only.
	AllowPrivateNetworks bool
	// SigningKey signs the links to files (at least 32 bytes; SharedSigningKey keeps one in
	// the database). Without one a random key is drawn, and links do not outlive the
	// process.
	SigningKey []byte
	// PublicURL is the scheme and host (and any path prefix) clients reach the server at, as
	// in https://parley.example.com; links to tool files start with it. Empty: links are paths
	// from the server's root (Dify's FILES_URL).
	PublicURL string
	// AccessTimeout is how long a link to a tool file stays valid (DefaultAccessTimeout if <= 0).
	AccessTimeout time.Duration
	// Logger receives failures that are handled here rather than returned,
	// such as a blob that could not be removed after a failed upload
	// (discarded if nil).
	Logger *slog.Logger
}

// Service uploads, looks up, opens and fetches files. It is safe for
// concurrent use.
type Service struct {
	store          Store
	blobs          blob.Store
	limits         config.UploadLimits
	blacklist      map[string]bool
	client         *http.Client
	remoteTimeout  time.Duration
	remoteMaxBytes int64
	log            *slog.Logger
	signingKey     []byte
	publicURL      string
	accessTimeout  time.Duration
	now            func() time.Time
}

// New returns a Service configured by opts. See [Options.HTTPClient] for
// the one case in which it panics.
func New(opts Options) *Service {
	if opts.RemoteTimeout <= 0 {
		opts.RemoteTimeout = DefaultRemoteTimeout
	}
	if opts.RemoteMaxBytes <= 0 {
		for _, c := range []string{CategoryDocument, CategoryImage, CategoryAudio, CategoryVideo} {
			opts.RemoteMaxBytes = max(opts.RemoteMaxBytes, SizeLimit(opts.Limits, c))
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	blacklist := make(map[string]bool, len(opts.Limits.ExtensionBlacklist))
	for _, ext := range opts.Limits.ExtensionBlacklist {
		if ext = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(ext), ".")); ext != "" {
			blacklist[ext] = true
		}
	}
	if len(opts.SigningKey) == 0 {
		opts.SigningKey = make([]byte, 32)
		_, _ = rand.Read(opts.SigningKey)
	}
	if opts.AccessTimeout <= 0 {
		opts.AccessTimeout = DefaultAccessTimeout
	}
	return &Service{
		signingKey:     opts.SigningKey,
		publicURL:      strings.TrimRight(opts.PublicURL, "/"),
		accessTimeout:  opts.AccessTimeout,
		now:            time.Now,
		store:          opts.Store,
		blobs:          opts.Blobs,
		limits:         opts.Limits,
		blacklist:      blacklist,
		client:         newClient(opts.HTTPClient, opts.AllowPrivateNetworks),
		remoteTimeout:  opts.RemoteTimeout,
		remoteMaxBytes: opts.RemoteMaxBytes,
		log:            opts.Logger,
	}
}

// Get returns the upload with the given id if it belongs to appID and
// endUserID, as Dify lets only the uploading end user reference a file.
// Otherwise, including for an unknown id, the error wraps
// [ErrFileNotFound] and says nothing about whose file it is.
func (s *Service) Get(ctx context.Context, appID, endUserID, id string) (store.UploadFile, error) {
	notFound := fmt.Errorf("files: file %s: %w", id, ErrFileNotFound)
	if appID == "" || endUserID == "" || id == "" {
		return store.UploadFile{}, notFound
	}
	f, err := s.store.UploadFile(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.UploadFile{}, notFound
	}
	if err != nil {
		return store.UploadFile{}, fmt.Errorf("files: get %s: %w", id, err)
	}
	if f.AppID != appID || f.EndUserID != endUserID {
		return store.UploadFile{}, notFound
	}
	return f, nil
}

// Open returns the content of f; the caller closes it. It does not check
// ownership: get f from [Service.Get] or [Service.Upload]. A row whose blob
// is missing gives an error wrapping both [ErrFileNotFound] and
// blob.ErrNotFound.
func (s *Service) Open(ctx context.Context, f store.UploadFile) (io.ReadCloser, error) {
	rc, err := s.blobs.Open(ctx, f.StorageKey)
	if errors.Is(err, blob.ErrNotFound) {
		return nil, fmt.Errorf("files: open %s: %w: %w", f.ID, ErrFileNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("files: open %s: %w", f.ID, err)
	}
	return rc, nil
}
