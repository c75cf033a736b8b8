package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
)

const mb = 1 << 20

// testLimits are small, distinct per category, so that a body just over
// one limit is under another.
var testLimits = config.UploadLimits{
	FileSizeLimitMB:      1,
	ImageFileSizeLimitMB: 1,
	AudioFileSizeLimitMB: 2,
	VideoFileSizeLimitMB: 3,
	ExtensionBlacklist:   []string{"exe", "sh"},
}

// pngHead is the start of a PNG file, enough for http.DetectContentType.
var pngHead = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")

// env is a Service on a fresh database and blob directory, with two apps
// and three end users.
type env struct {
	svc      *Service
	st       *store.Store
	blobRoot string
	app      string
	otherApp string
	alice    string // of app
	bob      string // of app
	carol    string // of otherApp
}

func newEnv(t *testing.T, e storetest.Engine) *env {
	t.Helper()
	ctx := t.Context()
	st := testdb.Open(t, e)
	apps, err := st.SyncApps(ctx, []store.AppSpec{{Name: "a", Mode: "chat"}, {Name: "b", Mode: "chat"}})
	if err != nil {
		t.Fatal(err)
	}
	endUser := func(app, session string) string {
		u, err := st.EndUser(ctx, app, session)
		if err != nil {
			t.Fatal(err)
		}
		return u.ID
	}
	blobs, err := blob.NewDir(filepath.Join(t.TempDir(), "files"))
	if err != nil {
		t.Fatal(err)
	}
	return &env{
		svc:      New(Options{Store: st, Blobs: blobs, Limits: testLimits}),
		st:       st,
		blobRoot: blobs.Root(),
		app:      apps["a"].ID,
		otherApp: apps["b"].ID,
		alice:    endUser(apps["a"].ID, "alice"),
		bob:      endUser(apps["a"].ID, "bob"),
		carol:    endUser(apps["b"].ID, "carol"),
	}
}

// blobFiles lists every regular file under the blob root, temporary files
// included.
func (e *env) blobFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(e.blobRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(e.blobRoot, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) rowCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.st.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM upload_files").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) read(t *testing.T, f store.UploadFile) []byte {
	t.Helper()
	rc, err := e.svc.Open(t.Context(), f)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// endless yields 'x' forever: an upload that only a streaming size check
// can stop.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestUpload(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, se storetest.Engine) {
		e := newEnv(t, se)
		longName := strings.Repeat("é", 300) + ".Txt"
		pngBody := append(append([]byte{}, pngHead...), "rest of the image"...)

		type upload struct {
			filename, contentType string
			body                  []byte
			reader                io.Reader // overrides body
			endUser               string    // default alice
		}
		for _, tc := range []struct {
			name string
			up   upload
			// Success: the expected stored fields.
			wantName, wantExt, wantMime string
			// Failure: the error, and for typed errors a check of it.
			wantErr error
			check   func(t *testing.T, err error)
		}{
			{name: "image", up: upload{filename: "cat.PNG", contentType: "image/png", body: pngBody},
				wantName: "cat.PNG", wantExt: "png", wantMime: "image/png"},
			{name: "content type parameters dropped", up: upload{filename: "a.txt", contentType: " Text/Plain; charset=UTF-8", body: []byte("hi")},
				wantName: "a.txt", wantExt: "txt", wantMime: "text/plain"},
			{name: "octet-stream guessed from extension", up: upload{filename: "doc.pdf", contentType: "application/octet-stream", body: []byte("%PDF-1.7\n")},
				wantName: "doc.pdf", wantExt: "pdf", wantMime: "application/pdf"},
			{name: "octet-stream sniffed", up: upload{filename: "photo.unknownext", contentType: "application/octet-stream", body: pngBody},
				wantName: "photo.unknownext", wantExt: "unknownext", wantMime: "image/png"},
			{name: "octet-stream empty body", up: upload{filename: "empty", contentType: "application/octet-stream", body: nil},
				wantName: "empty", wantExt: "", wantMime: "text/plain"},
			{name: "other declared type kept", up: upload{filename: "x.png", contentType: "application/x-custom", body: pngBody},
				wantName: "x.png", wantExt: "png", wantMime: "application/x-custom"},
			{name: "no extension", up: upload{filename: "README", contentType: "text/plain", body: []byte("read me")},
				wantName: "README", wantExt: "", wantMime: "text/plain"},
			{name: "dot file has no extension", up: upload{filename: ".sh", contentType: "text/plain", body: []byte("x")},
				wantName: ".sh", wantExt: "", wantMime: "text/plain"},
			{name: "long name trimmed keeping extension", up: upload{filename: longName, contentType: "text/plain", body: []byte("x")},
				wantName: strings.Repeat("é", 251) + ".Txt", wantExt: "txt", wantMime: "text/plain"},
			{name: "invalid UTF-8 replaced", up: upload{filename: "a\xffb.txt", contentType: "text/plain", body: []byte("x")},
				wantName: "a\uFFFDb.txt", wantExt: "txt", wantMime: "text/plain"},
			{name: "image exactly at limit", up: upload{filename: "big.jpg", contentType: "image/jpeg", body: make([]byte, 1*mb)},
				wantName: "big.jpg", wantExt: "jpg", wantMime: "image/jpeg"},
			{name: "audio over image limit but within its own", up: upload{filename: "a.mp3", contentType: "audio/mpeg", body: make([]byte, 1*mb+1)},
				wantName: "a.mp3", wantExt: "mp3", wantMime: "audio/mpeg"},

			// Dify checks the content type first, then the name.
			{name: "no content type", up: upload{filename: "", contentType: "", body: []byte("x")}, wantErr: ErrUnsupportedType},
			{name: "blank content type", up: upload{filename: "a.txt", contentType: " ; charset=utf-8", body: []byte("x")}, wantErr: ErrUnsupportedType},
			{name: "no file name", up: upload{filename: "", contentType: "text/plain", body: []byte("x")}, wantErr: ErrFilenameMissing},
			{name: "slash in name", up: upload{filename: "a/b.txt", contentType: "text/plain", body: []byte("x")}, wantErr: ErrInvalidFilename},
			{name: "backslash in name", up: upload{filename: `..\b.txt`, contentType: "text/plain", body: []byte("x")}, wantErr: ErrInvalidFilename},
			{name: "NUL in name", up: upload{filename: "a\x00.txt", contentType: "text/plain", body: []byte("x")}, wantErr: ErrInvalidFilename},
			{name: "invalid name before blacklist", up: upload{filename: "../run.exe", contentType: "text/plain", body: []byte("x")}, wantErr: ErrInvalidFilename},
			{name: "blacklisted extension", up: upload{filename: "run.EXE", contentType: "application/x-msdownload", body: []byte("MZ")},
				wantErr: ErrExtensionNotAllowed, check: func(t *testing.T, err error) {
					var xe *ExtensionNotAllowedError
					if !errors.As(err, &xe) || xe.Extension != "exe" {
						t.Fatalf("err = %#v, want *ExtensionNotAllowedError for exe", err)
					}
					if want := "File extension '.exe' is not allowed for security reasons"; err.Error() != want {
						t.Errorf("message = %q, want %q", err.Error(), want)
					}
				}},
			{name: "blacklist before size", up: upload{filename: "x.sh", contentType: "text/plain", reader: endless{}}, wantErr: ErrExtensionNotAllowed},
			{name: "image over limit", up: upload{filename: "big.png", contentType: "image/png", body: make([]byte, 1*mb+1)},
				wantErr: ErrTooLarge, check: wantTooLarge(1*mb, CategoryImage)},
			{name: "audio over limit", up: upload{filename: "a.wav", contentType: "audio/wav", body: make([]byte, 2*mb+1)},
				wantErr: ErrTooLarge, check: wantTooLarge(2*mb, CategoryAudio)},
			{name: "video over limit", up: upload{filename: "v.webm", contentType: "video/webm", body: make([]byte, 3*mb+1)},
				wantErr: ErrTooLarge, check: wantTooLarge(3*mb, CategoryVideo)},
			{name: "document over limit", up: upload{filename: "d.pdf", contentType: "application/pdf", body: make([]byte, 1*mb+1)},
				wantErr: ErrTooLarge, check: wantTooLarge(1*mb, CategoryDocument)},
			{name: "octet-stream over limit", up: upload{filename: "d.bin", contentType: "application/octet-stream", body: make([]byte, 1*mb+1)},
				wantErr: ErrTooLarge, check: wantTooLarge(1*mb, CategoryDocument)},
			// Only a streaming check ends this one.
			{name: "endless body", up: upload{filename: "v.mp4", contentType: "video/mp4", reader: endless{}},
				wantErr: ErrTooLarge, check: wantTooLarge(3*mb, CategoryVideo)},
			{name: "body read error", up: upload{filename: "a.txt", contentType: "text/plain",
				reader: io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(errBoom))}, wantErr: errBoom},
			{name: "body read error while sniffing", up: upload{filename: "a.bin", contentType: "application/octet-stream",
				reader: io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(errBoom))}, wantErr: errBoom},
			// The blob is written before the row is refused: it must go.
			{name: "end user of another app", up: upload{filename: "a.txt", contentType: "text/plain", body: []byte("x"), endUser: "carol"},
				wantErr: store.ErrNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := t.Context()
				u := Upload{AppID: e.app, EndUserID: e.alice, Filename: tc.up.filename, ContentType: tc.up.contentType, Body: bytes.NewReader(tc.up.body)}
				if tc.up.reader != nil {
					u.Body = tc.up.reader
				}
				if tc.up.endUser == "carol" {
					u.EndUserID = e.carol
				}
				filesBefore, rowsBefore := e.blobFiles(t), e.rowCount(t)

				f, err := e.svc.Upload(ctx, u)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("Upload err = %v, want %v", err, tc.wantErr)
					}
					if tc.check != nil {
						tc.check(t, err)
					}
					if got := e.blobFiles(t); len(got) != len(filesBefore) {
						t.Errorf("blob files after failure = %q, before %q", got, filesBefore)
					}
					if got := e.rowCount(t); got != rowsBefore {
						t.Errorf("upload_files rows after failure = %d, before %d", got, rowsBefore)
					}
					return
				}
				if err != nil {
					t.Fatalf("Upload: %v", err)
				}
				if f.ID == "" || f.AppID != e.app || f.EndUserID != e.alice || f.CreatedBy != e.alice || f.CreatedAt.IsZero() || f.SourceURL != "" {
					t.Errorf("owner fields = %+v", f)
				}
				if f.Name != tc.wantName || f.Extension != tc.wantExt || f.MimeType != tc.wantMime {
					t.Errorf("name, extension, mime = %q, %q, %q; want %q, %q, %q", f.Name, f.Extension, f.MimeType, tc.wantName, tc.wantExt, tc.wantMime)
				}
				if utf8.RuneCountInString(f.Name) > MaxNameLen {
					t.Errorf("name has %d runes", utf8.RuneCountInString(f.Name))
				}
				if want := "uploads/" + e.app + "/" + f.ID; f.StorageKey != want || !blob.ValidKey(f.StorageKey) {
					t.Errorf("StorageKey = %q, want %q", f.StorageKey, want)
				}
				if f.Size != int64(len(tc.up.body)) || f.Hash != sha256Hex(tc.up.body) {
					t.Errorf("size, hash = %d, %s; want %d, %s", f.Size, f.Hash, len(tc.up.body), sha256Hex(tc.up.body))
				}
				if got := e.read(t, f); !bytes.Equal(got, tc.up.body) {
					t.Errorf("content differs: %d bytes, want %d", len(got), len(tc.up.body))
				}
				if stored, err := e.svc.Get(ctx, e.app, e.alice, f.ID); err != nil || stored != f {
					t.Errorf("Get = %+v, %v; want %+v", stored, err, f)
				}
			})
		}

		t.Run("cancelled context", func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			filesBefore, rowsBefore := e.blobFiles(t), e.rowCount(t)
			_, err := e.svc.Upload(ctx, Upload{AppID: e.app, EndUserID: e.alice, Filename: "a.txt", ContentType: "text/plain", Body: strings.NewReader("x")})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if got := e.blobFiles(t); len(got) != len(filesBefore) || e.rowCount(t) != rowsBefore {
				t.Errorf("left behind: files %q (before %q)", got, filesBefore)
			}
		})

		t.Run("missing owner", func(t *testing.T) {
			for _, u := range []Upload{
				{EndUserID: e.alice, Filename: "a.txt", ContentType: "text/plain", Body: strings.NewReader("x")},
				{AppID: e.app, Filename: "a.txt", ContentType: "text/plain", Body: strings.NewReader("x")},
				{AppID: e.app, EndUserID: e.alice, Filename: "a.txt", ContentType: "text/plain"},
			} {
				if _, err := e.svc.Upload(t.Context(), u); err == nil {
					t.Errorf("Upload(%+v) succeeded", u)
				}
			}
		})
	})
}

var errBoom = errors.New("boom")

func wantTooLarge(limit int64, category string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Limit != limit || tl.Category != category {
			t.Errorf("err = %#v, want *TooLargeError{%d, %s}", err, limit, category)
		}
	}
}

func TestGetAndOpen(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, se storetest.Engine) {
		e := newEnv(t, se)
		ctx := t.Context()
		content := []byte("alice's notes")
		f, err := e.svc.Upload(ctx, Upload{AppID: e.app, EndUserID: e.alice, Filename: "notes.txt", ContentType: "text/plain", Body: bytes.NewReader(content)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.svc.Get(ctx, e.app, e.alice, f.ID)
		if err != nil || got != f {
			t.Fatalf("Get = %+v, %v; want %+v", got, err, f)
		}
		if b := e.read(t, got); !bytes.Equal(b, content) {
			t.Fatalf("Open read %q, want %q", b, content)
		}

		// Someone else's file and a missing one look the same.
		unknown := store.NewID()
		for _, tc := range []struct {
			name             string
			app, endUser, id string
		}{
			{"other end user", e.app, e.bob, f.ID},
			{"other app", e.otherApp, e.carol, f.ID},
			{"right user, wrong app", e.otherApp, e.alice, f.ID},
			{"unknown id", e.app, e.alice, unknown},
			{"not a uuid", e.app, e.alice, "nope"},
			{"no app", "", e.alice, f.ID},
			{"no end user", e.app, "", f.ID},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.svc.Get(ctx, tc.app, tc.endUser, tc.id)
				if !errors.Is(err, ErrFileNotFound) {
					t.Fatalf("err = %v, want ErrFileNotFound", err)
				}
				if msg := strings.ReplaceAll(err.Error(), tc.id, "ID"); msg != "files: file ID: file not found" {
					t.Errorf("message %q tells more than not found", err.Error())
				}
			})
		}

		t.Run("blob gone", func(t *testing.T) {
			blobs, err := blob.NewDir(e.blobRoot)
			if err != nil {
				t.Fatal(err)
			}
			if err := blobs.Delete(ctx, f.StorageKey); err != nil {
				t.Fatal(err)
			}
			_, err = e.svc.Open(ctx, f)
			if !errors.Is(err, ErrFileNotFound) || !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("Open err = %v, want ErrFileNotFound and blob.ErrNotFound", err)
			}
		})
	})
}
