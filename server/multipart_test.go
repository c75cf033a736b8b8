package server

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/textproto"
	"testing"

	"github.com/parleyhq/parley/internal/files"
)

// xReader gives n bytes of 'x' and counts what was read of it.
type xReader struct{ n, read int64 }

func (r *xReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.read += k
	return int(k), nil
}

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

// An oversized file stops the reading at its limit: the rest of the body is left unread (the
// client may still be sending it; net/http then does not keep the connection).
func TestReadFormStopsAtTheFileLimit(t *testing.T) {
	const limit = 1 << 20
	rest := &xReader{n: 32 << 20}
	form, err := readForm(fileForm(t, `form-data; name="file"; filename="big.txt"`, rest, false), formSpec{
		fields:    map[string]int64{"data": 1 << 10},
		fileLimit: func(string) (int64, string) { return limit, files.CategoryDocument },
	})
	defer form.close()
	var tooLarge *files.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != limit {
		t.Fatalf("err = %v, want a *files.TooLargeError with limit %d", err, limit)
	}
	if form.fields["data"] != "{}" || form.nFiles != 1 {
		t.Errorf("form so far: %+v", form)
	}
	// limit+1 bytes, and what the multipart reader buffers ahead of them.
	if rest.read > limit+64<<10 {
		t.Errorf("read %d bytes of the file, limit %d", rest.read, limit)
	}
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
