package files

import (
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestOpenOwned: an end user reaches their own uploads and the tool files answered to them, in
// their app; everything else is the same not-found.
func TestOpenOwned(t *testing.T) {
	e := newEnv(t, storetest.NewEngine(t, storetest.SQLite))
	ctx := t.Context()
	up, err := e.svc.Upload(ctx, Upload{AppID: e.app, EndUserID: e.alice, Filename: "a.txt", ContentType: "text/plain", Body: strings.NewReader("alice's")})
	if err != nil {
		t.Fatal(err)
	}
	tool, err := e.svc.SaveToolFile(ctx, ToolFile{AppID: e.app, MessageID: e.message(t), CreatedBy: e.alice, Name: "chart.png", MIMEType: "image/png", Data: pngHead})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := e.svc.UploadDocument(ctx, DocumentUpload{Filename: "kb.txt", Body: strings.NewReader("kb"), CreatedBy: "account"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, app, user, id string
		want                string
	}{
		{"own upload", e.app, e.alice, up.ID, "alice's"},
		{"tool file answered to her", e.app, e.alice, tool.Upload.ID, string(pngHead)},
		{"another end user's upload", e.app, e.bob, up.ID, ""},
		{"another end user's tool file", e.app, e.bob, tool.Upload.ID, ""},
		{"another app", e.otherApp, e.carol, up.ID, ""},
		{"a knowledge document's file", e.app, e.alice, doc.ID, ""},
		{"unknown id", e.app, e.alice, store.NewID(), ""},
		{"no end user", e.app, "", up.ID, ""},
	} {
		f, rc, err := e.svc.OpenOwned(ctx, tc.app, tc.user, tc.id)
		if tc.want == "" {
			if !errors.Is(err, ErrFileNotFound) || rc != nil {
				t.Errorf("%s: %v, want not found", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != tc.want || f.ID != tc.id {
			t.Errorf("%s: %q (%s)", tc.name, b, f.ID)
		}
	}
}

// TestSignedUploadLinks: a link made for an uploaded file opens it until it expires, and only
// with its own signature; a message's local file gets such a link, a remote one its address.
func TestSignedUploadLinks(t *testing.T) {
	e := newEnv(t, storetest.NewEngine(t, storetest.SQLite))
	ctx := t.Context()
	up, err := e.svc.Upload(ctx, Upload{AppID: e.app, EndUserID: e.alice, Filename: "a.txt", ContentType: "text/plain", Body: strings.NewReader("hello")})
	if err != nil {
		t.Fatal(err)
	}
	open := func(link string, now time.Time) (string, error) {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(u.Path, FilesPath+"/") || !strings.HasSuffix(u.Path, FilePreviewSuffix) {
			t.Fatalf("link path %q", u.Path)
		}
		id := strings.TrimSuffix(strings.TrimPrefix(u.Path, FilesPath+"/"), FilePreviewSuffix)
		q := u.Query()
		e.svc.now = func() time.Time { return now }
		defer func() { e.svc.now = time.Now }()
		_, rc, err := e.svc.OpenSignedFile(ctx, id, q.Get("timestamp"), q.Get("nonce"), q.Get("sign"))
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	link := e.svc.UploadFileURL(up.ID, false)
	if got, err := open(link, time.Now()); err != nil || got != "hello" {
		t.Fatalf("open: %q %v", got, err)
	}
	if got, err := open(link, time.Now().Add(DefaultAccessTimeout+time.Minute)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("expired link opened: %q %v", got, err)
	}
	if dl := e.svc.UploadFileURL(up.ID, true); !strings.Contains(dl, "as_attachment=true") {
		t.Errorf("download link %q", dl)
	}
	// The signature of one file does not open another.
	other := strings.Replace(link, up.ID, store.NewID(), 1)
	if _, err := open(other, time.Now()); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another file's signature: %v", err)
	}
	// A signed id that is no file.
	id := store.NewID()
	if _, err := open(e.svc.UploadFileURL(id, false), time.Now()); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("unknown file: %v", err)
	}

	local := e.svc.SignedURL(store.MessageFile{TransferMethod: store.TransferLocalFile, UploadFileID: up.ID})
	if got, err := open(local, time.Now()); err != nil || got != "hello" {
		t.Errorf("message file link: %q %v", got, err)
	}
	if r := e.svc.SignedURL(store.MessageFile{TransferMethod: store.TransferRemoteURL, URL: "https://x.test/a.png"}); r != "https://x.test/a.png" {
		t.Errorf("remote file link %q", r)
	}
}
