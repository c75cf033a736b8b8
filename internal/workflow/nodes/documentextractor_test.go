package nodes_test

import (
	"archive/zip"
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/extract/extracttest"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// docxOf is a minimal real Word document holding paragraphs.
func docxOf(t *testing.T, paras ...string) []byte {
	t.Helper()
	var body strings.Builder
	for _, p := range paras {
		body.WriteString(`<w:p><w:r><w:t xml:space="preserve">` + p + `</w:t></w:r></w:p>`)
	}
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `<w:sectPr/></w:body></w:document>`},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range parts {
		w, err := zw.Create(p[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(p[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pdfOf is a one-page PDF showing a line of text.
func pdfOf(text string) []byte {
	content := "BT /F1 12 Tf 72 720 Td (" + text + ") Tj ET\n"
	return extracttest.PDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		"<< /Length " + strconv.Itoa(len(content)) + " >>\nstream\n" + content + "endstream",
	}, "")
}

func extractorGraph(sel ...any) []any {
	return []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("doc", "document-extractor", map[string]any{"variable_selector": sel, "is_array_file": false}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#doc.text#}}"}),
	}
}

var extractorEdges = []any{edgeOf("start", "source", "doc"), edgeOf("doc", "source", "a")}

// TestDocumentExtractor: the text of an uploaded txt, pdf and docx file, read through the files
// service and extracted as knowledge documents are; a list of files gives a list of texts.
func TestDocumentExtractor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	utf16, err := os.ReadFile(filepath.Join("..", "..", "extract", "testdata", "utf16le.txt"))
	if err != nil {
		t.Fatal(err)
	}
	txt := f.upload(t, "notes.txt", "text/plain", utf16)
	pdf := f.upload(t, "report.pdf", "application/pdf", pdfOf("Quarterly revenue grew"))
	docx := f.upload(t, "memo.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", docxOf(t, "First paragraph.", "Second one."))
	d := nodes.Deps{Files: f.files, Extract: extractor(t).Extract}
	for name, tc := range map[string]struct {
		file any
		want string
	}{"txt": {txt, "Ümlaut ünd 中文"}, "pdf": {pdf, "Quarterly revenue grew"}, "docx": {docx, "First paragraph.\nSecond one."}} {
		pool := workflow.NewPool()
		pool.Set("start", "file", tc.file)
		rep, ev := execute(t, d, f.env, pool, extractorGraph("start", "file"), extractorEdges)
		if rep.Status != workflow.StatusSucceeded || !strings.Contains(ev.answer.String(), tc.want) {
			t.Fatalf("%s: %+v text %q", name, rep, ev.answer.String())
		}
	}
	// A remote file is fetched through the files service (loopback allowed in this fixture).
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/markdown")
		_, _ = w.Write([]byte("# Remote\n\nFetched text."))
	}))
	t.Cleanup(remote.Close)
	pool := workflow.NewPool()
	pool.Set("start", "file", &value.File{Type: "document", TransferMethod: value.TransferRemoteURL, RemoteURL: remote.URL + "/notes.md"})
	rep, ev := execute(t, d, f.env, pool, extractorGraph("start", "file"), extractorEdges)
	if rep.Status != workflow.StatusSucceeded || !strings.Contains(ev.answer.String(), "Fetched text.") {
		t.Fatalf("remote: %+v text %q", rep, ev.answer.String())
	}
	pool = workflow.NewPool()
	pool.Set("start", "files", []any{pdf, docx})
	rep, _ = execute(t, d, f.env, pool, extractorGraph("start", "files"), extractorEdges)
	v, _ := pool.Get([]string{"doc", "text"})
	texts, _ := v.([]any)
	if rep.Status != workflow.StatusSucceeded || len(texts) != 2 || !strings.Contains(texts[0].(string), "Quarterly") || !strings.Contains(texts[1].(string), "Second one.") {
		t.Fatalf("%+v texts %#v", rep, v)
	}
}

// TestDocumentExtractorErrors: a file of a type no extractor reads fails with Dify's
// UnsupportedFileTypeError; a variable holding no file fails the node.
func TestDocumentExtractorErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	png := f.upload(t, "chart.png", "image/png", []byte("\x89PNG\r\n\x1a\n"))
	d := nodes.Deps{Files: f.files}
	pool := workflow.NewPool()
	pool.Set("start", "file", png)
	pool.Set("start", "word", "not a file")
	rep, _ := execute(t, d, f.env, pool, extractorGraph("start", "file"), extractorEdges)
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "Unsupported Extension Type: .png") {
		t.Fatalf("%+v", rep)
	}
	// A file of another app is not read, whatever its id.
	txt := f.upload(t, "notes.txt", "text/plain", []byte("private"))
	pool.Set("start", "txt", txt)
	other := *f.env
	other.AppID = "another-app"
	rep, _ = execute(t, d, &other, pool, extractorGraph("start", "txt"), extractorEdges)
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "Failed to download file") {
		t.Fatalf("%+v", rep)
	}
	ns := extractorGraph("start", "word")
	ns[1].(map[string]any)["data"].(map[string]any)["error_strategy"] = "default-value"
	ns[1].(map[string]any)["data"].(map[string]any)["default_value"] = []any{map[string]any{"key": "text", "type": "string", "value": ""}}
	ns[2].(map[string]any)["data"].(map[string]any)["answer"] = "{{#doc.error_type#}}"
	rep, ev := execute(t, d, f.env, pool, ns, extractorEdges)
	if rep.Status != workflow.StatusPartialSucceeded || ev.answer.String() != "DocumentExtractorError" {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
}
