package files

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
)

// message stores a conversation with one message of alice, for tool files to attach to.
func (e *env) message(t *testing.T) string {
	t.Helper()
	_, m, err := e.st.StartConversation(t.Context(), store.Conversation{AppID: e.app, EndUserID: e.alice},
		store.Message{AppID: e.app, EndUserID: e.alice, Query: "q"})
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// linkParts splits a signed link into its file element and query values.
func linkParts(t *testing.T, link string) (string, url.Values) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return path.Base(u.Path), u.Query()
}

func (e *env) openLink(link string, now time.Time) ([]byte, error) {
	u, _ := url.Parse(link)
	q := u.Query()
	e.svc.now = func() time.Time { return now }
	defer func() { e.svc.now = time.Now }()
	_, rc, err := e.svc.OpenToolFile(context.Background(), path.Base(u.Path), q.Get("timestamp"), q.Get("nonce"), q.Get("sign"))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// TestSaveToolFileTypes: the stored type and extension follow the declared MIME type, the
// name's extension only when it names that type, and the content when nothing is declared.
func TestSaveToolFileTypes(t *testing.T) {
	e := newEnv(t, storetest.NewEngine(t, storetest.SQLite))
	msg := e.message(t)
	for _, tc := range []struct {
		name, mimeType string
		data           []byte
		wantMIME       string
		wantExt        string
		wantType       string
	}{
		{"chart.png", "image/png", pngHead, "image/png", "png", "image"},
		{"", "image/png", pngHead, "image/png", "png", "image"},
		{"report.exe.png", "image/png; charset=binary", pngHead, "image/png", "png", "image"},
		{"chart.txt", "image/png", pngHead, "image/png", "png", "image"},
		{"", "", pngHead, "image/png", "png", "image"},
		{"notes.txt", "application/octet-stream", []byte("hello"), "text/plain", "txt", "document"},
		{"", "application/pdf", []byte("%PDF-1.4"), "application/pdf", "pdf", "document"},
		{"../../etc/passwd", "text/plain", []byte("x"), "text/plain", "txt", "document"},
		{"", "application/x-unknown-thing", []byte{1, 2}, "application/x-unknown-thing", "bin", "custom"},
		{"", "not a type", []byte{0, 1, 2}, "application/octet-stream", "bin", "custom"},
	} {
		saved, err := e.svc.SaveToolFile(t.Context(), ToolFile{AppID: e.app, MessageID: msg, CreatedBy: e.alice,
			Name: tc.name, MIMEType: tc.mimeType, Data: tc.data})
		if err != nil {
			t.Fatalf("%q %q: %v", tc.name, tc.mimeType, err)
		}
		up, mf := saved.Upload, saved.Message
		if up.MimeType != tc.wantMIME || up.Extension != tc.wantExt || mf.Type != tc.wantType ||
			strings.ContainsAny(up.Name, `/\`) || up.EndUserID != "" || up.CreatedBy != e.alice {
			t.Errorf("%q %q: stored %+v, message file %+v", tc.name, tc.mimeType, up, mf)
		}
		if mf.BelongsTo != store.BelongsToAssistant || mf.TransferMethod != store.TransferToolFile || mf.UploadFileID != up.ID {
			t.Errorf("message file %+v", mf)
		}
		if file, _ := linkParts(t, saved.URL); file != up.ID+"."+tc.wantExt {
			t.Errorf("link %s", saved.URL)
		}
		if got, err := e.openLink(saved.URL, time.Now()); err != nil || !bytes.Equal(got, tc.data) {
			t.Errorf("%q: open %v", tc.name, err)
		}
	}
}

// TestSaveToolFileRefusals: a blacklisted extension and a file over its category's limit are
// refused, leaving no blob and no row.
func TestSaveToolFileRefusals(t *testing.T) {
	e := newEnv(t, storetest.NewEngine(t, storetest.SQLite))
	msg := e.message(t)
	tf := ToolFile{AppID: e.app, MessageID: msg, CreatedBy: e.alice}
	sh := tf
	sh.Name, sh.MIMEType, sh.Data = "run.sh", "application/x-sh", []byte("rm -rf /")
	var ext *ExtensionNotAllowedError
	if _, err := e.svc.SaveToolFile(t.Context(), sh); !errors.As(err, &ext) || ext.Extension != "sh" {
		t.Fatalf("blacklisted: %v", err)
	}
	big := tf
	big.MIMEType, big.Data = "image/png", append(append([]byte{}, pngHead...), make([]byte, mb)...)
	var tooLarge *TooLargeError
	if _, err := e.svc.SaveToolFile(t.Context(), big); !errors.As(err, &tooLarge) || tooLarge.Limit != mb {
		t.Fatalf("too large: %v", err)
	}
	if n := e.rowCount(t); n != 0 || len(e.blobFiles(t)) != 0 {
		t.Fatalf("%d rows, blobs %v left behind", n, e.blobFiles(t))
	}
}

// TestToolFileLinks: a link works until the access timeout and not after (nor when dated
// ahead); any change to it, a link to another file, or a link to an end user's upload fails.
func TestToolFileLinks(t *testing.T) {
	e := newEnv(t, storetest.NewEngine(t, storetest.SQLite))
	msg := e.message(t)
	saved, err := e.svc.SaveToolFile(t.Context(), ToolFile{AppID: e.app, MessageID: msg, CreatedBy: e.alice,
		MIMEType: "image/png", Data: pngHead})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := e.openLink(saved.URL, now.Add(DefaultAccessTimeout-time.Second)); err != nil {
		t.Fatalf("within the timeout: %v", err)
	}
	for name, at := range map[string]time.Time{
		"expired": now.Add(DefaultAccessTimeout + 2*time.Second), "dated ahead": now.Add(-DefaultAccessTimeout - 2*time.Second),
	} {
		if _, err := e.openLink(saved.URL, at); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
	file, q := linkParts(t, saved.URL)
	ts, _ := strconv.ParseInt(q.Get("timestamp"), 10, 64)
	other := store.NewID()
	for name, tamper := range map[string]func(url.Values) string{
		"sign":      func(v url.Values) string { v.Set("sign", strings.Repeat("A", len(v.Get("sign")))); return file },
		"nonce":     func(v url.Values) string { v.Set("nonce", v.Get("nonce")+"1"); return file },
		"timestamp": func(v url.Values) string { v.Set("timestamp", strconv.FormatInt(ts+1, 10)); return file },
		"no sign":   func(v url.Values) string { v.Del("sign"); return file },
		"other id":  func(url.Values) string { return other + ".png" },
	} {
		v := url.Values{}
		for k, vs := range q {
			v[k] = append([]string(nil), vs...)
		}
		f := tamper(v)
		if _, _, err := e.svc.OpenToolFile(t.Context(), f, v.Get("timestamp"), v.Get("nonce"), v.Get("sign")); !errors.Is(err, ErrBadSignature) {
			t.Errorf("tampered %s: %v", name, err)
		}
	}
	// A correctly signed link with another extension, or to a file that is not a tool's.
	if _, _, err := e.svc.OpenToolFile(t.Context(), saved.Upload.ID+".html", q.Get("timestamp"), q.Get("nonce"), q.Get("sign")); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("other extension: %v", err)
	}
	up, err := e.svc.Upload(t.Context(), Upload{AppID: e.app, EndUserID: e.alice, Filename: "a.png", ContentType: "image/png", Body: bytes.NewReader(pngHead)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.openLink(e.svc.ToolFileURL(up.ID, "png"), time.Now()); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("an end user's upload through a tool file link: %v", err)
	}
	if _, err := e.openLink(e.svc.ToolFileURL(store.NewID(), "png"), time.Now()); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("unknown file: %v", err)
	}
	// Another key does not accept the link.
	e.svc.signingKey = bytes.Repeat([]byte{7}, 32)
	if _, err := e.openLink(saved.URL, now); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another key: %v", err)
	}
}

// TestToolFileURLBase: with a public URL links are absolute under it; without, paths.
func TestToolFileURLBase(t *testing.T) {
	s := New(Options{PublicURL: "https://files.example.com/parley/"})
	if u := s.ToolFileURL("abc", "png"); !strings.HasPrefix(u, "https://files.example.com/parley/v1/files/tools/abc.png?") {
		t.Fatalf("link %s", u)
	}
	if u := New(Options{}).ToolFileURL("abc", "png"); !strings.HasPrefix(u, "/v1/files/tools/abc.png?nonce=") {
		t.Fatalf("link %s", u)
	}
}

// TestSharedSigningKey: every server on one database gets the same key, the first to ask adopts
// the key file of its data directory, and a short file is refused.
func TestSharedSigningKey(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		a, b := testdb.Open(t, e), testdb.Open(t, e) // two servers on one database
		legacy := bytes.Repeat([]byte{7}, 32)
		dirA, dirB := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(dirA, SigningKeyFile), legacy, 0o600); err != nil {
			t.Fatal(err)
		}
		kA, err := SharedSigningKey(ctx, a, dirA)
		if err != nil || !bytes.Equal(kA, legacy) {
			t.Fatalf("the first server's key = %x, %v; want its key file's", kA, err)
		}
		kB, err := SharedSigningKey(ctx, b, dirB)
		if err != nil || !bytes.Equal(kB, kA) {
			t.Fatalf("the second server's key = %x, %v; want the first one's", kB, err)
		}
		if entries, _ := os.ReadDir(dirB); len(entries) != 0 {
			t.Fatalf("the second server wrote to its data directory: %v", entries)
		}
		// A link signed by one server verifies on the other.
		sa := New(Options{SigningKey: kA})
		sb := New(Options{SigningKey: kB})
		u, err := url.Parse(sa.UploadFileURL("file-1", false))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if err := sb.verify("file-1", q.Get("timestamp"), q.Get("nonce"), q.Get("sign")); err != nil {
			t.Fatalf("a link signed on A does not verify on B: %v", err)
		}
		short := t.TempDir()
		if err := os.WriteFile(filepath.Join(short, SigningKeyFile), []byte("short"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := SharedSigningKey(ctx, a, short); err == nil {
			t.Fatal("a short key file was accepted")
		}
	})
	// On a fresh database without a key file, a random key is made.
	st := testdb.Open(t, storetest.NewEngine(t, storetest.SQLite))
	k, err := SharedSigningKey(t.Context(), st, t.TempDir())
	if err != nil || len(k) != 32 || bytes.Equal(k, make([]byte, 32)) {
		t.Fatalf("fresh key = %x, %v", k, err)
	}
}
