package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

func newDir(t *testing.T) *Dir {
	t.Helper()
	d, err := NewDir(DefaultRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readAll(t *testing.T, d *Dir, key string) []byte {
	t.Helper()
	rc, err := d.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// files lists every regular file under root, relative, with '/' separators.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestValidKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"a":                       true,
		"a.png":                   true,
		"upload_files/app-1/x.js": true,
		"A/B_c-d/e.tar.gz":        true,
		"":                        false,
		"/etc/passwd":             false,
		"../x":                    false,
		"a/../../x":               false,
		"a/..":                    false,
		"..":                      false,
		".":                       false,
		"./a":                     false,
		"a/./b":                   false,
		"a//b":                    false,
		"a/":                      false,
		`a\b`:                     false,
		`..\x`:                    false,
		"C:/x":                    false,
		".tmp/put-x":              false, // the temp area is not addressable
		".hidden":                 false,
		"a b":                     false,
		"a\x00b":                  false,
		"é":                       false,
		strings.Repeat("a", 512):  true,
		strings.Repeat("a", 513):  false,
	} {
		if got := ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestPutOpenDelete(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := newDir(t)
	content := []byte("hello, parley\n")

	size, hash, err := d.Put(ctx, "upload_files/app/a.txt", bytes.NewReader(content), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(content)) || hash != sum(content) {
		t.Errorf("Put = %d, %s; want %d, %s", size, hash, len(content), sum(content))
	}
	if got := readAll(t, d, "upload_files/app/a.txt"); !bytes.Equal(got, content) {
		t.Errorf("content = %q", got)
	}
	// It is a plain file under the root, and nothing else is left there.
	if got := files(t, d.Root()); len(got) != 1 || got[0] != "upload_files/app/a.txt" {
		t.Errorf("files under root = %v", got)
	}
	if want := filepath.Join("upload_files", "app", "a.txt"); !fileExists(filepath.Join(d.Root(), want)) {
		t.Errorf("%s missing under root", want)
	}

	// Open returns something seekable, for http.ServeContent.
	rc, err := d.Open(ctx, "upload_files/app/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.(io.ReadSeeker); !ok {
		t.Errorf("Open returned %T, not an io.ReadSeeker", rc)
	}
	rc.Close()

	// Overwrite replaces the whole content.
	if _, _, err := d.Put(ctx, "upload_files/app/a.txt", strings.NewReader("v2"), 10); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d, "upload_files/app/a.txt"); string(got) != "v2" {
		t.Errorf("after overwrite = %q", got)
	}

	// Empty content is a valid blob.
	size, hash, err = d.Put(ctx, "empty", strings.NewReader(""), 1)
	if err != nil || size != 0 || hash != sum(nil) {
		t.Errorf("empty Put = %d, %s, %v", size, hash, err)
	}

	if err := d.Delete(ctx, "upload_files/app/a.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Open(ctx, "upload_files/app/a.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open after Delete: err = %v, want ErrNotFound", err)
	}
	if err := d.Delete(ctx, "upload_files/app/a.txt"); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if _, err := d.Open(ctx, "never"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open(never): err = %v, want ErrNotFound", err)
	}
	// A directory is not a blob, and Delete does not remove it.
	if _, _, err := d.Put(ctx, "dir/child", strings.NewReader("x"), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Open(ctx, "dir"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open(dir): err = %v, want ErrNotFound", err)
	}
	if err := d.Delete(ctx, "dir"); err != nil {
		t.Errorf("Delete(dir): %v", err)
	}
	if got := readAll(t, d, "dir/child"); string(got) != "x" {
		t.Errorf("dir/child after Delete(dir) = %q", got)
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func TestPutLimit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := newDir(t)

	// Exactly at the limit is fine; one byte more is not.
	if size, _, err := d.Put(ctx, "exact", strings.NewReader("12345"), 5); err != nil || size != 5 {
		t.Fatalf("Put at the limit = %d, %v", size, err)
	}
	_, _, err := d.Put(ctx, "big", strings.NewReader("123456"), 5)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put over the limit: err = %v, want ErrTooLarge", err)
	}
	if _, err := d.Open(ctx, "big"); !errors.Is(err, ErrNotFound) {
		t.Errorf("oversized blob is visible: %v", err)
	}
	// An oversized overwrite keeps the old content.
	if _, _, err := d.Put(ctx, "exact", strings.NewReader("123456789"), 5); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized overwrite: err = %v", err)
	}
	if got := readAll(t, d, "exact"); string(got) != "12345" {
		t.Errorf("after failed overwrite = %q, want the old content", got)
	}
	// A large stream is cut off without reading it all.
	endless := &countingReader{r: zeroReader{}}
	if _, _, err := d.Put(ctx, "endless", endless, 1<<16); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless: err = %v", err)
	}
	if endless.n > 1<<17 {
		t.Errorf("read %d bytes of an endless stream with a 64 KiB limit", endless.n)
	}
	if got := files(t, d.Root()); len(got) != 1 || got[0] != "exact" {
		t.Errorf("files left behind: %v", got)
	}
	if _, _, err := d.Put(ctx, "zero", strings.NewReader(""), 0); err == nil {
		t.Error("Put with maxBytes 0: want error")
	}
}

func TestPutFailuresLeaveNothing(t *testing.T) {
	t.Parallel()
	d := newDir(t)
	boom := errors.New("connection reset")

	// The reader fails half way.
	r := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(boom))
	if _, _, err := d.Put(t.Context(), "broken", r, 100); !errors.Is(err, boom) {
		t.Fatalf("failing reader: err = %v, want %v", err, boom)
	}

	// The client goes away mid-upload.
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte("first chunk"))
		cancel()
		_ = pw.CloseWithError(errors.New("hung up"))
	}()
	if _, _, err := d.Put(ctx, "cancelled", pr, 100); err == nil {
		t.Fatal("Put with a cancelled upload: want error")
	}
	if _, _, err := d.Put(ctx, "late", strings.NewReader("x"), 100); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a done context: err = %v, want context.Canceled", err)
	}

	for _, key := range []string{"broken", "cancelled", "late"} {
		if _, err := d.Open(t.Context(), key); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s is visible after a failed Put: %v", key, err)
		}
	}
	if got := files(t, d.Root()); len(got) != 0 {
		t.Errorf("files left behind: %v", got)
	}
}

func TestInvalidKeysAreRejected(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	parent := t.TempDir()
	d, err := NewDir(filepath.Join(parent, "files"))
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(parent, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, key := range []string{"../secret", "/etc/passwd", `..\secret`, "a/../../secret", "", ".tmp/x", secret} {
		if _, _, err := d.Put(ctx, key, strings.NewReader("x"), 10); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put(%q): err = %v, want ErrInvalidKey", key, err)
		}
		if _, err := d.Open(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Open(%q): err = %v, want ErrInvalidKey", key, err)
		}
		if err := d.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Delete(%q): err = %v, want ErrInvalidKey", key, err)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "s3cret" {
		t.Errorf("file outside the root was touched: %q, %v", b, err)
	}
	if got := files(t, d.Root()); len(got) != 0 {
		t.Errorf("files under root: %v", got)
	}
}

// TestSymlinkEscape plants a symlink under the root pointing outside it: a
// valid key through it must not reach the outside file.
func TestSymlinkEscape(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	parent := t.TempDir()
	d, err := NewDir(filepath.Join(parent, "files"))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(parent, "outside")
	if err := os.Mkdir(outside, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(d.Root(), "link")); err != nil {
		t.Skipf("cannot create symlinks here: %v", err)
	}
	if _, err := d.Open(ctx, "link/secret"); err == nil {
		t.Error("Open through a symlink escaped the root")
	}
	if _, _, err := d.Put(ctx, "link/new", strings.NewReader("x"), 10); err == nil {
		t.Error("Put through a symlink escaped the root")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file created outside the root: %v", err)
	}
}

// TestConcurrentPuts writes the same key from many goroutines: every reader
// sees one complete version, never a mix or a prefix.
func TestConcurrentPuts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := newDir(t)
	versions := make(map[string]bool)
	var payloads [][]byte
	for i := range 8 {
		p := bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
		payloads = append(payloads, p)
		versions[string(p)] = true
	}
	if _, _, err := d.Put(ctx, "shared", bytes.NewReader(payloads[0]), 1<<20); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for _, p := range payloads {
		wg.Go(func() {
			if _, _, err := d.Put(ctx, "shared", bytes.NewReader(p), 1<<20); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			rc, err := d.Open(ctx, "shared")
			if err != nil {
				errs <- err
				return
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err != nil {
				errs <- err
				return
			}
			if !versions[string(b)] {
				errs <- errors.New("reader saw a torn blob")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := files(t, d.Root()); len(got) != 1 {
		t.Errorf("files left behind: %v", got)
	}
}

func TestNewDir(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "data", SubDir)
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Fatalf("root = %v, %v; want a 0750 directory", fi, err)
	}
	if d.Root() != root {
		t.Errorf("Root() = %q", d.Root())
	}
	if _, err := NewDir(""); err == nil {
		t.Error("NewDir(\"\"): want error")
	}
	if got := DefaultRoot("/var/lib/parley"); got != filepath.Join("/var/lib/parley", "files") {
		t.Errorf("DefaultRoot = %q", got)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
