// Package blob keeps the bytes of uploaded files, addressed by key. The
// database (internal/store upload_files) keeps what is known about a file;
// this package keeps only its content.
//
// [Dir] stores each blob as a plain file under one root directory. Writes
// go to a temporary file that is synced and then renamed into place, so a
// reader sees either the old content or the whole new content, never a
// prefix, and a failed or oversized upload leaves nothing behind.
package blob

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrNotFound is returned (wrapped) by Open for a key with no blob.
var ErrNotFound = errors.New("blob not found")

// ErrTooLarge is returned (wrapped) by Put when the content exceeds
// maxBytes. Nothing is stored.
var ErrTooLarge = errors.New("blob too large")

// ErrInvalidKey is returned (wrapped) for a key that [ValidKey] rejects.
var ErrInvalidKey = errors.New("invalid blob key")

// Store keeps blobs by key. Implementations are safe for concurrent use.
type Store interface {
	// Put stores everything r yields under key, replacing any blob already
	// there, and returns its size and lower-case hex SHA-256. If r yields
	// more than maxBytes (which must be positive) it fails with
	// ErrTooLarge and stores nothing. Readers never see a partial blob.
	Put(ctx context.Context, key string, r io.Reader, maxBytes int64) (size int64, sha256hex string, err error)
	// Open returns the blob's content; the caller closes it. A missing
	// blob gives an error wrapping ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the blob. Deleting a missing blob is not an error.
	Delete(ctx context.Context, key string) error
}

// SubDir is the directory under the data directory that holds blobs; see
// [DefaultRoot].
const SubDir = "files"

// DefaultRoot returns where Parley keeps blobs for a data directory:
// <dataDir>/files.
func DefaultRoot(dataDir string) string {
	return filepath.Join(dataDir, SubDir)
}

// tmpDir holds files being written. Keys cannot name it (no segment of a
// valid key starts with a dot), and it is on the same file system as every
// blob, so the final rename is atomic.
const tmpDir = ".tmp"

// maxKeyLen bounds a key, well below common PATH_MAX limits.
const maxKeyLen = 512

// ValidKey reports whether key is acceptable to [Dir]: one or more
// '/'-separated segments, each made only of ASCII letters, digits, '-', '_'
// and '.', not starting with '.', and at most 512 bytes in all. That rules
// out absolute paths, "..", ".", empty segments, backslashes and anything a
// file system might interpret, on any OS.
func ValidKey(key string) bool {
	if key == "" || len(key) > maxKeyLen {
		return false
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg[0] == '.' {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
			default:
				return false
			}
		}
	}
	return true
}

func checkKey(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}

// Dir is a [Store] on the local file system. The blob with key "a/b.png"
// is the file <root>/a/b.png. Every access goes through an [os.Root], so
// even a symlink planted under root cannot lead outside it.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir returns a Dir keeping blobs under root, creating root (mode
// 0o750) if needed. cmd/parley passes DefaultRoot(dataDir).
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("blob: empty root directory")
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("blob: create root: %w", err)
	}
	return &Dir{root: root}, nil
}

// Root returns the directory blobs are kept in.
func (d *Dir) Root() string {
	return d.root
}

func (d *Dir) open() (*os.Root, error) {
	r, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, fmt.Errorf("blob: open root: %w", err)
	}
	return r, nil
}

// Put implements [Store]. The content is streamed to a temporary file
// (never buffered in memory), synced, and renamed over key; ctx is checked
// between reads.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, maxBytes int64) (size int64, sha256hex string, err error) {
	if err := checkKey(key); err != nil {
		return 0, "", fmt.Errorf("blob: put: %w", err)
	}
	if maxBytes <= 0 {
		return 0, "", fmt.Errorf("blob: put %s: maxBytes %d must be positive", key, maxBytes)
	}
	if err := ctx.Err(); err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	root, err := d.open()
	if err != nil {
		return 0, "", err
	}
	defer root.Close()

	if err := root.MkdirAll(tmpDir, 0o750); err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	tmpName := path.Join(tmpDir, "put-"+rand.Text())
	tmp, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	// Until the rename succeeds, any failure removes the temporary file.
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close() // may already be closed; the error is moot
			_ = root.Remove(tmpName)
		}
	}()

	h := sha256.New()
	// Read one byte past the limit to tell "exactly maxBytes" from "more".
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(ctxReader{ctx, r}, maxBytes+1))
	if err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	if n > maxBytes {
		return 0, "", fmt.Errorf("blob: put %s: more than %d bytes: %w", key, maxBytes, ErrTooLarge)
	}
	if err := tmp.Sync(); err != nil {
		return 0, "", fmt.Errorf("blob: put %s: sync: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	dir := path.Dir(key)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
		}
	}
	if err := root.Rename(tmpName, key); err != nil {
		return 0, "", fmt.Errorf("blob: put %s: %w", key, err)
	}
	renamed = true
	// Make the rename itself durable: a blob whose record the database has
	// committed must survive a power cut.
	if err := syncDir(root, dir); err != nil {
		return 0, "", fmt.Errorf("blob: put %s: sync directory: %w", key, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func syncDir(root *os.Root, dir string) error {
	f, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Open implements [Store]. The returned value is an *os.File, so it is also
// an io.ReadSeeker (for http.ServeContent) and can be Stat'ed.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("blob: open: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob: open %s: %w", key, err)
	}
	root, err := d.open()
	if err != nil {
		return nil, err
	}
	defer root.Close() // files opened through a Root outlive it
	f, err := root.Open(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob: open %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: open %s: %w", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("blob: open %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		// "a" when only "a/b" exists is a directory, not a blob.
		_ = f.Close()
		return nil, fmt.Errorf("blob: open %s: %w", key, ErrNotFound)
	}
	return f, nil
}

// Delete implements [Store]. Directories left empty are kept.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("blob: delete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	root, err := d.open()
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Lstat(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	if fi.IsDir() {
		// Never remove a directory of other blobs through a blob key.
		return nil
	}
	if err := root.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// ctxReader fails reads once ctx is done, so an upload from a client that
// went away stops at the next chunk.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read reads from the wrapped reader unless ctx is done.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
