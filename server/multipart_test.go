package server

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/textproto"
	"testing"

	"github.com/parleyhq/parley/internal/files"
)

// fileForm is a multipart body: a `data` field, then a `file` part whose content is rest, then
// the end of the form if end.
func fileForm(t *testing.T, disposition string, rest io.Reader, end bool) *multipart.Reader {
	t.Helper()
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	if err := mw.WriteField("data", "{}"); err != nil {
		t.Fatal(err)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Type", "text/plain")
	if _, err := mw.CreatePart(h); err != nil {
		t.Fatal(err)
	}
	tail := ""
	if end {
		tail = "\r\n--" + mw.Boundary() + "--\r\n"
	}
	return multipart.NewReader(io.MultiReader(&head, rest, bytes.NewReader([]byte(tail))), mw.Boundary())
}

// A file name is kept as the client sent it, path and all, so that it can be refused as Dify
// refuses it (multipart.Part.FileName would keep only its last element).
func TestReadFormKeepsTheFileNameAsSent(t *testing.T) {
	for disposition, want := range map[string]string{
		`form-data; name="file"; filename="a/b.txt"`:                          "a/b.txt",
		`form-data; name="file"; filename="/etc/passwd"`:                      "/etc/passwd",
		`form-data; name="file"; filename="..\x.txt"`:                         `..\x.txt`,
		`form-data; name="file"; filename="C:\\dir\\x.txt"`:                   `C:\dir\x.txt`,
		`form-data; name="file"; filename*=UTF-8''dir%2Fr%C3%A9sum%C3%A9.txt`: "dir/résumé.txt",
		`form-data; name="file"; filename="plain.txt"`:                        "plain.txt",
		`form-data; name="file"; filename=""`:                                 "",
	} {
		form, err := readForm(fileForm(t, disposition, bytes.NewReader([]byte("content")), true), formSpec{
			fileLimit: func(string) (int64, string) { return 1 << 10, files.CategoryDocument },
		})
		if err != nil {
			t.Fatalf("%s: %v", disposition, err)
		}
		if form.nFiles != 1 || form.file == nil || form.file.filename != want {
			t.Errorf("%s: file %+v, want the name %q", disposition, form.file, want)
		}
		form.close()
	}
}
