package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// pngBytes is a real, small PNG image.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type part struct {
	field, filename, contentType string
	data                         []byte
	emptyName                    bool // send filename="" (a file part with no name)
}

// form builds a multipart body from parts, in order.
func form(t *testing.T, parts ...part) (io.Reader, string) {
	t.Helper()
	b, ct := formBody(parts...)
	return bytes.NewReader(b), ct
}

// formBody is form for callers without a test at hand (writing to memory cannot fail).
func formBody(parts ...part) ([]byte, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.filename != "" || p.emptyName {
			h.Set("Content-Disposition", `form-data; name="`+p.field+`"; filename="`+p.filename+`"`)
		} else {
			h.Set("Content-Disposition", `form-data; name="`+p.field+`"`)
		}
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, _ := mw.CreatePart(h)
		w.Write(p.data)
	}
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// upload posts a form to /files/upload and decodes a 201.
func (p *Parley) upload(t *testing.T, hc *http.Client, parts ...part) (*http.Response, client.UploadedFile, apiErr) {
	t.Helper()
	resp, err := hc.Do(formRequest(t, p.URL+"/files/upload", p.AppKey, parts...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var f client.UploadedFile
	var e apiErr
	if resp.StatusCode == http.StatusCreated {
		if err := jsonUnmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
	} else {
		_ = jsonUnmarshal(raw, &e)
	}
	return resp, f, e
}

func TestFileUploadAndUse(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		img := pngBytes(t)
		// The user field after the file (as browsers and the Node SDK send it).
		resp, f, e := p.upload(t, hc, part{field: "file", filename: "dot.png", contentType: "image/png", data: img}, part{field: "user", data: []byte("ivy")})
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload: %d %+v", resp.StatusCode, e)
		}
		if f.Name != "dot.png" || f.Extension != "png" || f.MimeType != "image/png" || f.Size != int64(len(img)) || f.CreatedBy == "" {
			t.Fatalf("uploaded %+v", f)
		}

		// A remote image, served on loopback.
		remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(img)
		}))
		defer remote.Close()

		c := newClient(t, p, p.AppKey)
		q := marker(t, "what is in these pictures")
		upstream.On(q, openaitest.Reply{Text: "A red dot."})
		body := chatBody(q, "ivy", false)
		upID := f.Id.String()
		body.Files = &[]client.FileReference{
			{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodLocalFile, UploadFileId: &upID},
			{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodRemoteUrl, Url: ptr(remote.URL + "/dot.png")},
		}
		seenBefore := len(upstream.Requests()) // the fake outlives this test (go test -count)
		r, err := c.SendChatMessageWithResponse(context.Background(), nil, body)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("chat with images: %v %s", err, r.Body)
		}
		// The model saw both images as data URLs next to the text.
		want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
		var seen int
		for _, req := range upstream.Requests()[seenBefore:] {
			if req.LastUserMessage() != q {
				continue
			}
			msgs := req.Messages
			for _, part := range msgs[len(msgs)-1].Parts {
				if part.ImageURL == want {
					seen++
				}
			}
		}
		if seen != 2 {
			t.Fatalf("upstream saw %d of the 2 images", seen)
		}
		user, conv := "ivy", r.JSON200.ConversationId.String()
		h, _ := c.ListMessagesWithResponse(context.Background(), &client.ListMessagesParams{ConversationId: conv, User: &user})
		if h.JSON200 == nil || len(h.JSON200.Data) != 1 || len(h.JSON200.Data[0].MessageFiles) != 2 {
			t.Fatalf("history files: %s", h.Body)
		}
		if mf := h.JSON200.Data[0].MessageFiles[0]; mf.UploadFileId == nil || *mf.UploadFileId != upID || mf.BelongsTo != "user" {
			t.Fatalf("message file %+v", mf)
		}

		// Another user cannot use the upload.
		other := chatBody(marker(t, "steal"), "mallory", false)
		other.Files = &[]client.FileReference{{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodLocalFile, UploadFileId: &upID}}
		if r, _ := c.SendChatMessageWithResponse(context.Background(), nil, other); r.StatusCode() != 400 || r.JSON400.Code != "invalid_param" {
			t.Fatalf("someone else's upload: %d %s", r.StatusCode(), r.Body)
		}
		bad := chatBody(marker(t, "ftp"), "ivy", false)
		bad.Files = &[]client.FileReference{{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodRemoteUrl}}
		if r, _ := c.SendChatMessageWithResponse(context.Background(), nil, bad); r.StatusCode() != 400 || r.JSON400.Code != "invalid_param" {
			t.Fatalf("remote file without url: %d %s", r.StatusCode(), r.Body)
		}
	})
}

func TestFileUploadErrors(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		hc := newContractClient(t)
		txt := []byte("hello")
		for _, tc := range []struct {
			name   string
			parts  []part
			status int
			code   string
			msg    string
		}{
			{"no file", []part{{field: "user", data: []byte("u")}}, 400, "no_file_uploaded", "Please upload your file."},
			{"two files", []part{{field: "file", filename: "a.txt", contentType: "text/plain", data: txt}, {field: "file", filename: "b.txt", contentType: "text/plain", data: txt}}, 400, "too_many_files", "Only one file is allowed."},
			{"no content type", []part{{field: "file", filename: "a.txt", data: txt}}, 415, "unsupported_file_type", ""},
			{"file field without filename", []part{{field: "file", contentType: "text/plain", data: txt}}, 400, "no_file_uploaded", ""},
			{"empty file name", []part{{field: "file", emptyName: true, contentType: "text/plain", data: txt}}, 400, "filename_not_exists_error", "The specified filename does not exist."},
			{"blacklisted extension", []part{{field: "file", filename: "setup.EXE", contentType: "application/octet-stream", data: txt}}, 400, "invalid_param", "File extension '.exe' is not allowed for security reasons"},
			{"image over its limit", []part{{field: "file", filename: "big.png", contentType: "image/png", data: bytes.Repeat([]byte{1}, 2<<20+1)}}, 413, "file_too_large", "File size exceeded."},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, _, e := p.upload(t, hc, tc.parts...)
				if resp.StatusCode != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
					t.Fatalf("got %d %+v, want %d %s %q", resp.StatusCode, e, tc.status, tc.code, tc.msg)
				}
			})
		}
		// A document under the document limit is fine even though it is over the image one.
		resp, f, e := p.upload(t, hc, part{field: "file", filename: "notes.txt", contentType: "text/plain", data: bytes.Repeat([]byte("a"), 3<<20)})
		if resp.StatusCode != 201 || f.Extension != "txt" {
			t.Fatalf("3 MB text: %d %+v", resp.StatusCode, e)
		}
	})
}

// TestRemoteFileErrorsRevealNothing: a remote file that cannot be fetched, or whose address is
// not allowed, is refused with a fixed message. The cause (addresses tried, the resolver, the
// transport error) stays in the server's log, so the error cannot be used to map the server's
// network.
func TestRemoteFileErrorsRevealNothing(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		if binary == "" {
			t.Skip("needs to restart the server with its own settings")
		}
		// A loopback port with nothing listening on it.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := ln.Addr().String()
		ln.Close()
		send := func(t *testing.T, url string) (int, apiErr) {
			t.Helper()
			body := chatBody("remote "+url, "remote-user", false)
			body.Files = &[]client.FileReference{{Type: client.Image, TransferMethod: client.FileReferenceTransferMethodRemoteUrl, Url: ptr(url)}}
			r, err := newClient(t, p, p.AppKey).SendChatMessageWithResponse(context.Background(), nil, body)
			if err != nil {
				t.Fatal(err)
			}
			var e apiErr
			_ = json.Unmarshal(r.Body, &e)
			return r.StatusCode(), e
		}
		check := func(t *testing.T, url, want string) {
			t.Helper()
			status, e := send(t, url)
			if status != 400 || e.Code != "invalid_param" || e.Message != want {
				t.Fatalf("%s: got %d %+v, want 400 invalid_param %q", url, status, e, want)
			}
		}
		// Private addresses allowed (the suite's setting): the fetch itself fails.
		check(t, "http://"+closed+"/x.png", "The remote file could not be fetched.")
		if !strings.Contains(p.logs.String(), "connection refused") {
			t.Error("the server did not log why the fetch failed")
		}
		// The default: loopback, private and metadata addresses are refused before connecting.
		p.Restart(t, "PARLEY_REMOTE_FILES_ALLOW_PRIVATE=false")
		// Only loopback forms here: a test never sends traffic off this machine, even if the
		// guard were broken.
		_, port, _ := net.SplitHostPort(closed)
		for _, u := range []string{"http://" + closed + "/x.png", "http://[::1]:" + port + "/x.png", "http://0.0.0.0:" + port + "/x.png"} {
			check(t, u, "The remote file is not allowed.")
		}
		// The failed answers' history says the same, not the cause.
		c := newClient(t, p, p.AppKey)
		user := "remote-user"
		convs, err := c.ListConversationsWithResponse(context.Background(), &client.ListConversationsParams{User: &user})
		if err != nil || convs.JSON200 == nil || len(convs.JSON200.Data) == 0 {
			t.Fatalf("conversations: %v", err)
		}
		for _, conv := range convs.JSON200.Data {
			h, err := c.ListMessagesWithResponse(context.Background(), &client.ListMessagesParams{ConversationId: conv.Id.String(), User: &user})
			if err != nil || h.JSON200 == nil {
				t.Fatalf("messages: %v", err)
			}
			for _, m := range h.JSON200.Data {
				if m.Error == nil || (*m.Error != "The remote file is not allowed." && *m.Error != "The remote file could not be fetched.") {
					t.Errorf("stored error %q, want the message the client was given", ptrText(m.Error))
				}
			}
		}
	})
}

func ptrText(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
