package filetools

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzPyB64Decode: Python's lenient Base64 on any text never panics and never makes more than
// three bytes of four characters; Base64 that Go's encoder wrote reads back, with line breaks
// and junk between its characters.
func FuzzPyB64Decode(f *testing.F) {
	f.Add("aGVsbG8=", []byte("hello"))
	f.Add("YQ==garbage", []byte{0})
	f.Add("-_-_", []byte{0xfb, 0xff})
	f.Add("\xff=\x00=", []byte{})
	f.Fuzz(func(t *testing.T, src string, data []byte) {
		for _, urlSafe := range []bool{false, true} {
			out, err := pyB64Decode(src, urlSafe, false)
			if err == nil && len(out) > len(src)/4*3+3 {
				t.Fatalf("%q: %d bytes", src, len(out))
			}
		}
		enc := base64.StdEncoding.EncodeToString(data)
		var spread strings.Builder
		for i := range len(enc) {
			spread.WriteByte(enc[i])
			if i%3 == 0 {
				spread.WriteString("\n*")
			}
		}
		for _, text := range []string{enc, spread.String()} {
			got, err := pyB64Decode(text, false, true)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%q: %x %v, want %x", text, got, err, data)
			}
		}
		url := base64.URLEncoding.EncodeToString(data)
		if got, err := pyB64Decode(url, true, true); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("URL-safe %q: %x %v", url, got, err)
		}
	})
}

// FuzzSniff: any bytes are recognised as a type with its extension and MIME type, or not at
// all.
func FuzzSniff(f *testing.F) {
	for _, k := range kinds {
		f.Add([]byte(k.ext))
	}
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte("PK\x03\x04\x14\x00\x00\x00xl/"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if k, ok := sniff(b); ok && (k.ext == "" || k.mime == "") {
			t.Fatalf("%q: %+v", b, k)
		}
	})
}

// TestSniff: files are recognised as the Python library filetype recognises them (its answers
// for these samples), and text is not recognised.
func TestSniff(t *testing.T) {
	t.Parallel()
	zipOf := func(names ...string) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, n := range names {
			w, _ := zw.Create(n)
			_, _ = w.Write([]byte("x"))
		}
		_ = zw.Close()
		return buf.Bytes()
	}
	png := func(chunks ...string) []byte {
		out := []byte("\x89PNG\r\n\x1a\n")
		for _, c := range chunks {
			out = append(out, 0, 0, 0, 1)
			out = append(out, c+"x\x00\x00\x00\x00"...)
		}
		return out
	}
	for _, tc := range []struct {
		data []byte
		ext  string
	}{
		{png("IHDR", "IDAT", "acTL"), "png"},
		{png("IHDR", "acTL", "IDAT"), "apng"},
		{[]byte("\xff\xd8\xff\xe0"), "jpg"},
		{[]byte("\xef\xbb\xbf%PDF-1.4"), "pdf"},
		{zipOf("[Content_Types].xml", "_rels/.rels", "word/document.xml"), "docx"},
		{zipOf("xl/workbook.xml"), "xlsx"},
		{zipOf("[Content_Types].xml", "a", "b", "c", "d", "ppt/x.xml"), "zip"}, // past the fourth entry
		{zipOf("notes.txt"), "zip"},
		{[]byte("\x1f\x8b\x08\x00"), "gz"},
		{[]byte("\x00\x00\x00\x1cftypXXXX\x00\x00\x00\x00abcdmp42abcd"), "mp4"},
		{[]byte("\x00\x00\x00\x1cftypmif1\x00\x00\x00\x00abcdheicabcd"), "heic"},
		{[]byte("\x1a\x45\xdf\xa3\x9f\x42\x82\x84webm"), "webm"},
		{[]byte("MThd\x00\x00\x00\x06"), "midi"},
		{[]byte("wOF2true"), "woff2"},
	} {
		if k, ok := sniff(tc.data); !ok || k.ext != tc.ext {
			t.Errorf("%q: %+v %v, want %s", tc.data[:min(len(tc.data), 16)], k, ok, tc.ext)
		}
	}
	for _, text := range []string{"just text", `{"a": 1}`, "", "wOFF\x00\x00\x00\x00", "\x30\x26\xb2\x75\x8e\x66\xcf\x11"} {
		if k, ok := sniff([]byte(text)); ok {
			t.Errorf("%q recognised as %+v", text, k)
		}
	}
}
