package files

import (
	"context"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestTextDocumentName: the text of create-by-text is stored as Dify's upload_text stores it,
// under the name as sent (whatever it ends in, slashes included), as a txt file of text/plain,
// and its extractor is the plain-text one.
func TestTextDocumentName(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, se storetest.Engine) {
		e := newEnv(t, se)
		for _, name := range []string{"Refund policy", "notes.md", "Q3/Q4 plan", "report.pdf"} {
			f, err := e.svc.UploadDocument(context.Background(), DocumentUpload{Filename: name, Text: true,
				Body: strings.NewReader("# Not markdown here"), CreatedBy: "account", NoLimit: true})
			if err != nil {
				t.Fatalf("%q: %v", name, err)
			}
			if f.Name != name || f.Extension != TextExtension || f.MimeType != "text/plain" {
				t.Errorf("%q stored as %q, extension %q, type %q", name, f.Name, f.Extension, f.MimeType)
			}
			if got, want := ExtractName(f), name+".txt"; got != want {
				t.Errorf("%q: extracted as %q, want %q", name, got, want)
			}
		}
	})
}

func TestExtractName(t *testing.T) {
	for _, tc := range []struct{ name, ext, want string }{
		{"handbook.pdf", "pdf", "handbook.pdf"},
		{"Handbook.PDF", "pdf", "Handbook.PDF"},
		{"Refunds", "txt", "Refunds.txt"},
		{"notes.md", "txt", "notes.md.txt"},
		{"legacy.txt", "txt", "legacy.txt"},
		{"no extension recorded", "", "no extension recorded"},
	} {
		if got := ExtractName(store.UploadFile{Name: tc.name, Extension: tc.ext}); got != tc.want {
			t.Errorf("%q (%s): %q, want %q", tc.name, tc.ext, got, tc.want)
		}
	}
}
