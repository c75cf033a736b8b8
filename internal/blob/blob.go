// Package blob keeps the bytes of uploaded files, addressed by key. The
// database (internal/store upload_files) keeps what is known about a file;
// this package keeps only its content.
//
// [Dir] stores each blob as a plain file under one root directory. Writes
// go to a temporary file that is synced and then renamed into place, so a
// reader sees either the old content or the whole new content, never a
// prefix, and a failed or oversized upload leaves nothing behind. It serves SQLite, and
// PARLEY_FILES_DIR: a directory every replica mounts.
//
// On PostgreSQL blobs are kept in the database (store.DBBlobs), so that every replica reads
// them. [Fallback] keeps the blobs an earlier version left in a data directory readable, and
// [Copy] moves them (`parley files migrate`).
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

// Keys calls fn with the key of every blob under the root, in lexical order. Files being
// written (under the temporary directory) and anything whose path is not a valid key are
// skipped.
func (d *Dir) Keys(ctx context.Context, fn func(key string) error) error {
	return filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(e.Name(), ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		key := filepath.ToSlash(rel)
		if !e.Type().IsRegular() || !ValidKey(key) {
			return nil
		}
		return fn(key)
	})
}

// Fallback is a [Store] that writes to Primary and reads from Primary first, then, for a key
// Primary does not have, from Legacy: blobs written before Primary was in use stay readable
// until they are copied over ([Copy]).
type Fallback struct {
	Primary, Legacy Store
}

var _ Store = Fallback{}

// Put implements [Store]; it writes to Primary only.
func (f Fallback) Put(ctx context.Context, key string, r io.Reader, maxBytes int64) (int64, string, error) {
	return f.Primary.Put(ctx, key, r, maxBytes)
}

// Open implements [Store].
func (f Fallback) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := f.Primary.Open(ctx, key)
	if errors.Is(err, ErrNotFound) {
		if lrc, lerr := f.Legacy.Open(ctx, key); lerr == nil {
			return lrc, nil
		}
	}
	return rc, err
}

// Delete implements [Store]; it deletes from both.
func (f Fallback) Delete(ctx context.Context, key string) error {
	return errors.Join(f.Primary.Delete(ctx, key), f.Legacy.Delete(ctx, key))
}

// CopyResult counts what [Copy] did.
type CopyResult struct {
	// Copied blobs were written to the destination; Present ones were there already.
	Copied, Present int
	// Bytes is the size of the blobs copied.
	Bytes int64
}

// Copy writes every blob of src that dst does not have to dst, and leaves src as it is. It can
// be run again (after an interruption, or while servers keep writing to dst): blobs already
// copied are skipped. progress, if not nil, is called after each blob.
func Copy(ctx context.Context, dst Store, src *Dir, progress func(key string, copied bool)) (CopyResult, error) {
	var res CopyResult
	err := src.Keys(ctx, func(key string) error {
		if rc, err := dst.Open(ctx, key); err == nil {
			_ = rc.Close()
			res.Present++
			if progress != nil {
				progress(key, false)
			}
			return nil
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		rc, err := src.Open(ctx, key)
		if err != nil {
			return err
		}
		defer rc.Close()
		n, _, err := dst.Put(ctx, key, rc, 1<<50)
		if err != nil {
			return err
		}
		res.Copied++
		res.Bytes += n
		if progress != nil {
			progress(key, true)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("blob: copy: %w", err)
	}
	return res, nil
}
