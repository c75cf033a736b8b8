package files

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/store"
)

// Tool files are the files an agent's tools return (an image an API answered with, a document
// an MCP server produced). Each is kept like an upload, as a blob and an upload_files row with no
// end user owning it, and attached to the answer as an assistant message file. Clients reach it
// through a signed link that expires, so that a browser can load it without the API key, as
// Dify serves its tool files (see docs/tool-files.md).

// ToolFilePath is where tool files are served, under the API's base path; a link is
// ToolFilePath + "/<file id>.<extension>?timestamp=…&nonce=…&sign=…".
const ToolFilePath = "/v1/files/tools"

// DefaultAccessTimeout is how long a signed link stays valid when Options set no other
// (Dify's FILES_ACCESS_TIMEOUT default).
const DefaultAccessTimeout = 300 * time.Second

// ErrBadSignature: a tool file link whose signature is missing, malformed, forged or expired
// (forbidden, 403).
var ErrBadSignature = errors.New("files: invalid or expired file signature")

// ToolFile is a file a tool returned, to be stored for the message being answered.
type ToolFile struct {
	// AppID is the app answering; MessageID the message being answered; CreatedBy the end
	// user who asked.
	AppID, MessageID, CreatedBy string
	// Name is the tool's name for the file ("" when it gave none); MIMEType its type as the tool
	// declared it ("" or application/octet-stream: guessed from the name, then the content).
	Name, MIMEType string
	Data           []byte
}

// SavedToolFile is a stored tool file: its message file (belonging to the assistant), its
// upload row, and a signed link to it.
type SavedToolFile struct {
	Message store.MessageFile
	Upload  store.UploadFile
	URL     string
}

// SaveToolFile stores f and attaches it to its message. The MIME type is the declared one when
// it is a valid media type, else guessed; the extension is the name's when it names that type,
// else the usual one of the type ("bin" when there is none); a blacklisted extension is refused
// ([*ExtensionNotAllowedError]), and so is a file over its category's upload limit
// ([*TooLargeError]). A refused file leaves nothing behind; should the message file row fail
// after the upload row was written, the upload stays, linked from nothing.
func (s *Service) SaveToolFile(ctx context.Context, f ToolFile) (SavedToolFile, error) {
	if f.AppID == "" || f.MessageID == "" || f.CreatedBy == "" {
		return SavedToolFile{}, errors.New("files: save tool file: app, message and creator are required")
	}
	name := toolFileName(f.Name)
	mimeType := toolMIMEType(f.MIMEType, name, f.Data)
	ext := toolExtension(name, mimeType)
	// Both the extension kept and the one the tool named the file with are checked: a tool
	// cannot pass a refused file off under another type.
	for _, e := range []string{ext, strings.ToLower(rawExtension(name))} {
		if s.blacklist[e] {
			return SavedToolFile{}, &ExtensionNotAllowedError{Extension: e}
		}
	}
	category := Category(ext)
	limit := SizeLimit(s.limits, category)
	if int64(len(f.Data)) > limit {
		return SavedToolFile{}, &TooLargeError{Limit: limit, Category: category}
	}
	id := store.NewID()
	if name == "" {
		name = id + "." + ext
	}
	key := "tools/" + f.AppID + "/" + id
	if !blob.ValidKey(key) {
		return SavedToolFile{}, fmt.Errorf("files: save tool file: app id %q does not make a valid blob key", f.AppID)
	}
	size, hash, err := s.blobs.Put(ctx, key, bytes.NewReader(f.Data), limit)
	if errors.Is(err, blob.ErrTooLarge) {
		return SavedToolFile{}, &TooLargeError{Limit: limit, Category: category}
	}
	if err != nil {
		return SavedToolFile{}, fmt.Errorf("files: save tool file: %w", err)
	}
	up, err := s.store.CreateUploadFile(ctx, store.UploadFile{
		ID: id, AppID: f.AppID, Name: trimName(name, rawExtension(name)), Size: size, Extension: ext,
		MimeType: mimeType, StorageKey: key, Hash: hash, CreatedBy: f.CreatedBy,
	})
	if err != nil {
		s.removeBlob(ctx, key)
		return SavedToolFile{}, fmt.Errorf("files: save tool file: %w", err)
	}
	// As Dify, the message file keeps the unsigned path of the file; links are signed when
	// they are handed out.
	mfs, err := s.store.AddMessageFiles(ctx, []store.MessageFile{{
		MessageID: f.MessageID, Type: FileType(mimeType), TransferMethod: store.TransferToolFile,
		URL: ToolFilePath + "/" + id + "." + ext, UploadFileID: id, BelongsTo: store.BelongsToAssistant,
	}})
	if err != nil {
		// The upload row stays (rows are never deleted); without a message file nothing links to it.
		return SavedToolFile{}, fmt.Errorf("files: save tool file: %w", err)
	}
	return SavedToolFile{Message: mfs[0], Upload: up, URL: s.ToolFileURL(id, ext)}, nil
}

// FileType is Dify's file type for a MIME type: image, video, audio, document (text and PDF)
// or custom.
func FileType(mimeType string) string {
	major, _, _ := strings.Cut(mimeType, "/")
	switch {
	case major == "image":
		return CategoryImage
	case major == "video":
		return CategoryVideo
	case major == "audio":
		return CategoryAudio
	case major == "text" || mimeType == "application/pdf":
		return CategoryDocument
	}
	return "custom"
}

// toolFileName is a tool's file name reduced to its last path element, without control
// characters, valid UTF-8; "" when nothing is left.
func toolFileName(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	return strings.TrimSpace(name)
}

// toolMIMEType is the declared media type when it parses, else a guess from the name's
// extension, then from the content.
func toolMIMEType(declared, name string, data []byte) string {
	if mt, _, err := mime.ParseMediaType(declared); err == nil && mt != octetStream {
		return strings.ToLower(mt)
	}
	head := data
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	return detectType(strings.ToLower(rawExtension(name)), head)
}

// preferredExtensions are the extensions of common types, where mime.ExtensionsByType has
// several or depends on the system's tables.
var preferredExtensions = map[string]string{
	"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "image/svg+xml": "svg",
	"audio/mpeg": "mp3", "audio/wav": "wav", "video/mp4": "mp4", "video/webm": "webm",
	"application/pdf": "pdf", "application/json": "json", "text/plain": "txt", "text/markdown": "md",
	"text/csv": "csv", "text/html": "html", "application/xml": "xml", "text/xml": "xml",
}

// toolExtension is the extension of name when it names mimeType, else the usual extension of
// mimeType, else "bin"; lower case, without the dot.
func toolExtension(name, mimeType string) string {
	ext := strings.ToLower(rawExtension(name))
	if ext != "" && len(ext) <= 10 && blob.ValidKey(ext) {
		if mt, _, _ := strings.Cut(mime.TypeByExtension("."+ext), ";"); strings.EqualFold(strings.TrimSpace(mt), mimeType) {
			return ext
		}
	}
	if e, ok := preferredExtensions[mimeType]; ok {
		return e
	}
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		return strings.TrimPrefix(exts[0], ".")
	}
	return "bin"
}

// ActiveContent reports whether a browser could run content of this type as a page or script
// (HTML, SVG, XML, JavaScript): such files are only ever served as attachments.
func ActiveContent(mimeType string) bool {
	mt := strings.ToLower(mimeType)
	return strings.Contains(mt, "html") || strings.Contains(mt, "xml") || strings.Contains(mt, "javascript") ||
		strings.Contains(mt, "ecmascript") || mt == "text/css"
}

// signData is what a tool file link's signature covers.
func signData(fileID, timestamp, nonce string) []byte {
	return []byte("file-preview|" + fileID + "|" + timestamp + "|" + nonce)
}

func (s *Service) sign(fileID, timestamp, nonce string) string {
	m := hmac.New(sha256.New, s.signingKey)
	m.Write(signData(fileID, timestamp, nonce))
	return base64.URLEncoding.EncodeToString(m.Sum(nil))
}

// ToolFileURL is a signed link to the tool file with this id and extension: under the
// configured public base URL when there is one, else a path from the server's root.
func (s *Service) ToolFileURL(fileID, ext string) string {
	ts := strconv.FormatInt(s.now().Unix(), 10)
	var n [16]byte
	_, _ = rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	q := url.Values{"timestamp": {ts}, "nonce": {nonce}, "sign": {s.sign(fileID, ts, nonce)}}
	return s.publicURL + ToolFilePath + "/" + fileID + "." + ext + "?" + q.Encode()
}

// SignedURL is the link a client is given to a message file: a fresh signed link for a tool
// file or an uploaded one, the file's own URL for a remote one.
func (s *Service) SignedURL(f store.MessageFile) string {
	if f.TransferMethod == store.TransferLocalFile && f.UploadFileID != "" {
		return s.UploadFileURL(f.UploadFileID, false)
	}
	if f.TransferMethod != store.TransferToolFile {
		return f.URL
	}
	ext := "bin"
	if i := strings.LastIndexByte(f.URL, '.'); i >= 0 && !strings.Contains(f.URL[i:], "/") {
		ext = f.URL[i+1:]
	}
	return s.ToolFileURL(f.UploadFileID, ext)
}

// OpenToolFile checks a tool file link and returns the file and its content; the caller closes
// it. file is the link's last path element (id, optionally "." and the extension). A bad or
// expired signature gives [ErrBadSignature], checked before anything is looked up; a file that
// is not a tool file, or whose extension differs, [ErrFileNotFound].
func (s *Service) OpenToolFile(ctx context.Context, file, timestamp, nonce, sign string) (store.UploadFile, io.ReadCloser, error) {
	id, ext, hasExt := strings.Cut(file, ".")
	if err := s.verify(id, timestamp, nonce, sign); err != nil {
		return store.UploadFile{}, nil, err
	}
	notFound := fmt.Errorf("files: tool file %s: %w", id, ErrFileNotFound)
	f, err := s.store.UploadFile(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.UploadFile{}, nil, notFound
	}
	if err != nil {
		return store.UploadFile{}, nil, fmt.Errorf("files: tool file %s: %w", id, err)
	}
	if f.EndUserID != "" || !strings.HasPrefix(f.StorageKey, "tools/") || (hasExt && !strings.EqualFold(ext, f.Extension)) {
		return store.UploadFile{}, nil, notFound
	}
	rc, err := s.Open(ctx, f)
	if err != nil {
		return store.UploadFile{}, nil, err
	}
	return f, rc, nil
}

// verify checks a link's signature (in constant time) and age: a timestamp more than the
// access timeout in the past, or in the future beyond that, is expired.
func (s *Service) verify(fileID, timestamp, nonce, sign string) error {
	if fileID == "" || timestamp == "" || nonce == "" || sign == "" {
		return ErrBadSignature
	}
	want := s.sign(fileID, timestamp, nonce)
	if subtle.ConstantTimeCompare([]byte(want), []byte(sign)) != 1 {
		return ErrBadSignature
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	age := s.now().Sub(time.Unix(ts, 0))
	if age > s.accessTimeout || age < -s.accessTimeout {
		return fmt.Errorf("%w: signed %v ago", ErrBadSignature, age.Round(time.Second))
	}
	return nil
}

// SigningKeyFile is the file, in the data directory, that held the key signing file links
// before the key moved into the database; [SharedSigningKey] adopts it.
const SigningKeyFile = "files-signing.key"

// SigningKeyName names the key that signs file links among the database's shared secrets.
const SigningKeyName = "files-signing-key"

// Secrets keeps the secrets every server on one database shares; *store.Store implements it.
type Secrets interface {
	// SharedSecret returns the secret called name, storing candidate if there is none yet.
	SharedSecret(ctx context.Context, name string, candidate []byte) ([]byte, error)
}

// SharedSigningKey returns the key that signs links to files, kept in the database so that a
// link one server hands out verifies on every other. The first server to ask proposes the key
// of dataDir/SigningKeyFile when there is one (links signed before the upgrade stay valid),
// else 32 random bytes; every later call, on any server, gets what the first stored.
func SharedSigningKey(ctx context.Context, secrets Secrets, dataDir string) ([]byte, error) {
	candidate, err := legacySigningKey(dataDir)
	if err != nil {
		return nil, err
	}
	if candidate == nil {
		candidate = make([]byte, 32)
		if _, err := rand.Read(candidate); err != nil {
			return nil, err
		}
	}
	key, err := secrets.SharedSecret(ctx, SigningKeyName, candidate)
	if err != nil {
		return nil, fmt.Errorf("files: signing key: %w", err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("files: the signing key in the database is shorter than 32 bytes")
	}
	return key, nil
}

// legacySigningKey returns the key of dataDir/SigningKeyFile, or nil when there is none.
func legacySigningKey(dataDir string) ([]byte, error) {
	if dataDir == "" {
		return nil, nil
	}
	path := filepath.Join(dataDir, SigningKeyFile)
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("files: signing key: %w", err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("files: signing key %s is shorter than 32 bytes", path)
	}
	return key, nil
}
