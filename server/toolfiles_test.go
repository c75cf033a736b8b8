package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// toolFileFixture is the server fixture with a files service whose signing key the test knows,
// and a message with the given tool files.
type toolFileFixture struct {
	*fixture
	key  []byte
	conv string
	// saved are the tool files, in the order given.
	saved []files.SavedToolFile
}

func newToolFileFixture(t *testing.T, produced ...files.ToolFile) *toolFileFixture {
	t.Helper()
	f := newFixture(t, ValidationEnforce)
	blobs, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte{42}, 32)
	f.srv.files = files.New(files.Options{Store: f.st, Blobs: blobs, SigningKey: key,
		Limits: config.UploadLimits{FileSizeLimitMB: 1, ImageFileSizeLimitMB: 1, AudioFileSizeLimitMB: 1, VideoFileSizeLimitMB: 1}})
	f.srv.conversations = conversations.New(f.st, nil, f.st)
	ctx := t.Context()
	u, err := f.st.EndUser(ctx, f.appID, "u1")
	if err != nil {
		t.Fatal(err)
	}
	c, m, err := f.st.StartConversation(ctx, store.Conversation{AppID: f.appID, EndUserID: u.ID},
		store.Message{AppID: f.appID, EndUserID: u.ID, Query: "draw"})
	if err != nil {
		t.Fatal(err)
	}
	tf := &toolFileFixture{fixture: f, key: key, conv: c.ID}
	for _, p := range produced {
		p.AppID, p.MessageID, p.CreatedBy = f.appID, m.ID, u.ID
		s, err := f.srv.files.SaveToolFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		tf.saved = append(tf.saved, s)
	}
	return tf
}

// sign signs a link the way a client would check it: HMAC-SHA256 over
// "file-preview|<id>|<timestamp>|<nonce>", URL-safe base64.
func (f *toolFileFixture) sign(id string, ts int64, nonce string) string {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte("file-preview|" + id + "|" + strconv.FormatInt(ts, 10) + "|" + nonce))
	return base64.URLEncoding.EncodeToString(m.Sum(nil))
}

func (f *toolFileFixture) link(file string, ts int64, nonce, sign string) string {
	return "/v1/files/tools/" + file + "?" + url.Values{"timestamp": {strconv.FormatInt(ts, 10)}, "nonce": {nonce}, "sign": {sign}}.Encode()
}

// TestToolFileLink: the link a tool file is given loads its bytes with no API key, with its
// type, nosniff and an inline disposition; HTML is only ever an attachment. Forged, tampered
// and expired links are 403, an unknown file 404, each with the Error body, and every
// response matches the contract.
func TestToolFileLink(t *testing.T) {
	pic := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	page := []byte("<html><script>alert(1)</script></html>")
	f := newToolFileFixture(t,
		files.ToolFile{Name: "chart.png", MIMEType: "image/png", Data: pic},
		files.ToolFile{Name: "page.html", MIMEType: "text/html", Data: page})
	img := f.saved[0]

	rec := f.do("GET", img.URL, "", "", "")
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), pic) {
		t.Fatalf("GET %s: %d %q", img.URL, rec.Code, rec.Body)
	}
	h := rec.Header()
	if h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.HasPrefix(h.Get("Content-Disposition"), "inline") || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("headers %v", h)
	}
	rec = f.do("GET", f.saved[1].URL, "", "", "")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Disposition"), "attachment") ||
		rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("HTML tool file: %d %v", rec.Code, rec.Header())
	}

	id := img.Upload.ID
	now := time.Now().Unix()
	// A link signed here with the server's key, by the documented recipe, works.
	if rec := f.do("GET", f.link(id+".png", now, "n1", f.sign(id, now, "n1")), "", "", ""); rec.Code != http.StatusOK {
		t.Fatalf("own signature: %d %s", rec.Code, rec.Body)
	}
	expired := now - int64(files.DefaultAccessTimeout/time.Second) - 5
	other := store.NewID()
	for _, tc := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"expired", f.link(id+".png", expired, "n1", f.sign(id, expired, "n1")), 403, "forbidden"},
		{"dated ahead", f.link(id+".png", now+3600, "n1", f.sign(id, now+3600, "n1")), 403, "forbidden"},
		{"tampered nonce", f.link(id+".png", now, "n2", f.sign(id, now, "n1")), 403, "forbidden"},
		{"signed with another key", f.link(id+".png", now, "n1", base64.URLEncoding.EncodeToString(make([]byte, 32))), 403, "forbidden"},
		{"another file's signature", f.link(id+".png", now, "n1", f.sign(other, now, "n1")), 403, "forbidden"},
		{"empty signature", "/v1/files/tools/" + id + ".png?timestamp=1&nonce=x&sign=", 400, "invalid_param"},
		{"short signature", "/v1/files/tools/" + id + ".png?timestamp=1&nonce=x&sign=abc", 403, "forbidden"},
		{"signature missing", "/v1/files/tools/" + id + ".png?timestamp=1&nonce=x", 400, "invalid_param"},
		{"unknown file", f.link(other+".png", now, "n1", f.sign(other, now, "n1")), 404, "not_found"},
		{"wrong extension", f.link(id+".svg", now, "n1", f.sign(id, now, "n1")), 404, "not_found"},
		{"timestamp not a number", "/v1/files/tools/" + id + ".png?timestamp=soon&nonce=n1&sign=" + url.QueryEscape(f.sign(id, now, "n1")), 403, "forbidden"},
	} {
		rec := f.do("GET", tc.path, "", "", "")
		if rec.Code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.status)
			continue
		}
		if code, _ := decodeErr(t, rec); code != tc.code {
			t.Errorf("%s: code %s, want %s", tc.name, code, tc.code)
		}
	}
	// The API key is not what opens the file: with a valid key and a bad signature it stays 403.
	if rec := f.do("GET", f.link(id+".png", now, "n2", f.sign(id, now, "n1")), f.appKey, "", ""); rec.Code != http.StatusForbidden {
		t.Fatalf("with an app key: %d", rec.Code)
	}
	if n := f.srv.Violations(); n != 0 {
		t.Fatalf("%d contract violations", n)
	}
}

// TestHistoryListsToolFiles: GET /messages lists a message's tool files as assistant files with
// a freshly signed link that loads them.
func TestHistoryListsToolFiles(t *testing.T) {
	pic := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	f := newToolFileFixture(t, files.ToolFile{MIMEType: "image/png", Data: pic})
	rec := f.do("GET", "/v1/messages?user=u1&conversation_id="+f.conv, f.appKey, "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /messages: %d %s", rec.Code, rec.Body)
	}
	var page struct {
		Data []struct {
			MessageFiles []struct {
				ID             string  `json:"id"`
				Type           string  `json:"type"`
				URL            *string `json:"url"`
				TransferMethod string  `json:"transfer_method"`
				BelongsTo      string  `json:"belongs_to"`
				UploadFileID   *string `json:"upload_file_id"`
			} `json:"message_files"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || len(page.Data[0].MessageFiles) != 1 {
		t.Fatalf("history %s", rec.Body)
	}
	mf := page.Data[0].MessageFiles[0]
	s := f.saved[0]
	if mf.ID != s.Message.ID || mf.Type != "image" || mf.TransferMethod != "tool_file" || mf.BelongsTo != "assistant" ||
		mf.UploadFileID == nil || *mf.UploadFileID != s.Upload.ID || mf.URL == nil || !strings.Contains(*mf.URL, "sign=") {
		t.Fatalf("message file %s", rec.Body)
	}
	if got := f.do("GET", *mf.URL, "", "", ""); got.Code != http.StatusOK || !bytes.Equal(got.Body.Bytes(), pic) {
		t.Fatalf("history link: %d", got.Code)
	}
	if n := f.srv.Violations(); n != 0 {
		t.Fatalf("%d contract violations", n)
	}
}

// TestEncodeToolFileEvents: message_end listing a tool file, shaped as the agent lists it,
// matches the contract; a file missing its url does not.
func TestEncodeToolFileEvents(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	enc := newEventEncoder(&run.Run{TaskID: testTask, MessageID: testMessage, ConversationID: testConversation,
		CreatedAt: time.Unix(1705398420, 0), Mode: config.AppModeAgentChat})
	file := map[string]any{"related_id": "mf-1", "extension": ".png", "filename": "chart.png", "size": int64(12),
		"mime_type": "image/png", "transfer_method": "tool_file", "type": "image",
		"url": "/v1/files/tools/f.png?nonce=n&sign=s&timestamp=1", "upload_file_id": "f", "remote_url": nil}
	end := func(files any) []byte {
		data, err := enc.encode(run.Event{Kind: run.EventMessageEnd, End: &run.End{Usage: models.ComputeUsage(nil, 3, 4, time.Second), Files: files}})
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte("data: "), data...)
	}
	if err := f.srv.validator.CheckEvent("sendChatMessage", end([]map[string]any{file})); err != nil {
		t.Fatal(err)
	}
	delete(file, "url")
	if err := f.srv.validator.CheckEvent("sendChatMessage", end([]map[string]any{file})); err == nil {
		t.Fatal("a file without url passed")
	}
}
