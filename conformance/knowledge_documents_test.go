package conformance

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/blob"
	"github.com/parleyhq/parley/internal/extract/extracttest"
)

const automaticRule = `{"process_rule":{"mode":"automatic"}}`

// kdDataset creates a knowledge base (technique "" leaves it unset).
func kdDataset(t *testing.T, c *client.ClientWithResponses, name, technique string) string {
	t.Helper()
	body := client.CreateDatasetJSONRequestBody{Name: name}
	if technique != "" {
		tq := client.IndexingTechnique(technique)
		body.IndexingTechnique = &tq
		if technique == "high_quality" {
			body.EmbeddingModel, body.EmbeddingModelProvider = ptr("text-embedding-3-small"), ptr("openai")
		}
	}
	r, err := c.CreateDatasetWithResponse(context.Background(), body)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("create dataset %s: %v %d %s", name, err, r.StatusCode(), r.Body)
	}
	return r.JSON200.Id.String()
}

// kdWait polls the batch until every document is completed or failed.
func kdWait(t *testing.T, c *client.ClientWithResponses, ds, batch string) []client.DocumentIndexingStatus {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		r, err := c.GetDocumentIndexingStatusWithResponse(context.Background(), ds, batch)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("indexing status: %v %d %s", err, r.StatusCode(), r.Body)
		}
		done := len(r.JSON200.Data) > 0
		for _, d := range r.JSON200.Data {
			if d.IndexingStatus != client.IndexingStatusCompleted && d.IndexingStatus != client.IndexingStatusError {
				done = false
			}
		}
		if done {
			return r.JSON200.Data
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s not done: %s", batch, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func kdCompleted(t *testing.T, c *client.ClientWithResponses, ds, batch string) {
	t.Helper()
	for _, st := range kdWait(t, c, ds, batch) {
		if st.IndexingStatus != client.IndexingStatusCompleted || st.TotalSegments == 0 || st.CompletedSegments != st.TotalSegments {
			t.Fatalf("batch %s: %+v (error %v)", batch, st, st.Error)
		}
	}
}

// kdIndexing waits (a minute at most) until the batch's first document is being indexed, so that
// a test can interrupt it; a batch that ends first fails t.
func kdIndexing(t *testing.T, c *client.ClientWithResponses, ds, batch string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := c.GetDocumentIndexingStatusWithResponse(context.Background(), ds, batch)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("indexing status: %v %s", err, r.Body)
		}
		st := r.JSON200.Data[0].IndexingStatus
		if st == client.IndexingStatusParsing || st == client.IndexingStatusCleaning ||
			st == client.IndexingStatusSplitting || st == client.IndexingStatusIndexing {
			break
		}
		if st == client.IndexingStatusCompleted || st == client.IndexingStatusError {
			t.Fatalf("indexing ended (%s) before it could be interrupted", st)
		}
		if time.Now().After(deadline) {
			t.Fatal("indexing did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kdForm builds a multipart body with an optional data part and an optional file part.
func kdForm(t *testing.T, data *string, filename string, content []byte) (*bytes.Buffer, string) {
	t.Helper()
	var parts []part
	if data != nil {
		parts = append(parts, part{field: "data", data: []byte(*data)})
	}
	if content != nil {
		parts = append(parts, part{field: "file", filename: filename, contentType: "application/octet-stream", data: content, emptyName: filename == ""})
	}
	r, ct := form(t, parts...)
	var b bytes.Buffer
	b.ReadFrom(r)
	return &b, ct
}

func kdCreateFile(t *testing.T, c *client.ClientWithResponses, ds, name string, content []byte, data string) client.DocumentWithBatch {
	t.Helper()
	body, ct := kdForm(t, &data, name, content)
	r, err := c.CreateDocumentByFileWithBodyWithResponse(context.Background(), ds, nil, ct, body)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("create %s: %v %d %s", name, err, r.StatusCode(), r.Body)
	}
	return *r.JSON200
}

func kdGet(t *testing.T, c *client.ClientWithResponses, ds, doc string) client.DocumentDetail {
	t.Helper()
	r, err := c.GetDocumentWithResponse(context.Background(), ds, doc, nil)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("get document: %v %d %s", err, r.StatusCode(), r.Body)
	}
	return *r.JSON200
}

// kdPDF is a minimal one-page PDF with a text line per line of text.
func kdPDF(text string) []byte {
	var content strings.Builder
	for j, line := range strings.Split(text, "\n") {
		fmt.Fprintf(&content, "BT /F1 12 Tf 72 %d Td (%s) Tj ET\n", 720-14*j, line)
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()),
	}
	return extracttest.PDF(objs, "")
}

// kdDOCX is a minimal Word document with one paragraph.
func kdDOCX(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p><w:sectPr/></w:body></w:document>`},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func kdXLSX(t *testing.T) []byte {
	t.Helper()
	f := excelize.NewFile()
	if err := f.SetSheetRow("Sheet1", "A1", &[]any{"Planet", "Moons"}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetSheetRow("Sheet1", "A2", &[]any{"Jupiter", 95}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestKnowledgeDocuments(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.KnowledgeKey)
		ctx := context.Background()

		// By text, economy: the technique comes with the first document.
		eco := kdDataset(t, c, "docs-eco", "")
		tr, err := c.CreateDocumentByTextWithResponse(ctx, eco, nil, client.CreateDocumentByTextJSONRequestBody{
			Name: "guide", Text: "Parley serves knowledge bases.\n\nIt indexes documents in the background.",
			IndexingTechnique: ptr(client.Economy), ProcessRule: &client.ProcessRule{Mode: "automatic"},
		})
		if err != nil || tr.JSON200 == nil {
			t.Fatalf("create by text: %v %d %s", err, tr.StatusCode(), tr.Body)
		}
		textDoc := tr.JSON200.Document
		if textDoc.DataSourceType != "upload_file" || textDoc.DataSourceInfo.UploadFileId == nil ||
			textDoc.DataSourceDetailDict.UploadFile == nil || textDoc.CreatedFrom != "api" || textDoc.DocForm != "text_model" {
			t.Fatalf("text document: %s", tr.Body)
		}
		kdCompleted(t, c, eco, tr.JSON200.Batch)

		// By text, high quality.
		hq := kdDataset(t, c, "docs-hq", "high_quality")
		hr, err := c.CreateDocumentByTextLegacyWithResponse(ctx, hq, nil, client.CreateDocumentByTextLegacyJSONRequestBody{
			Name: "embedded", Text: "Vectors make semantic search possible.", ProcessRule: &client.ProcessRule{Mode: "automatic"},
		})
		if err != nil || hr.JSON200 == nil {
			t.Fatalf("create by text (legacy path): %v %d %s", err, hr.StatusCode(), hr.Body)
		}
		kdCompleted(t, c, hq, hr.JSON200.Batch)
		if d := kdGet(t, c, hq, hr.JSON200.Document.Id.String()); d.Tokens == nil || *d.Tokens == 0 {
			t.Fatalf("high-quality document has no tokens: %+v", d)
		}

		// By file, one of each kind.
		fixtures := map[string][]byte{
			"report.pdf":   kdPDF("Quarterly report\nRevenue grew"),
			"letter.docx":  kdDOCX(t, "Dear reader, the letter body."),
			"planets.xlsx": kdXLSX(t),
			"page.html":    []byte("<html><body><h1>Title</h1><p>Hypertext paragraph.</p></body></html>"),
			"notes.md":     []byte("# Notes\n\nMarkdown body text."),
			"table.csv":    []byte("name,colour\napple,red\nbanana,yellow\n"),
		}
		ids := map[string]string{}
		for name, content := range fixtures {
			r := kdCreateFile(t, c, eco, name, content, automaticRule)
			if r.Document.Name != name || r.Document.DataSourceDetailDict.UploadFile == nil || r.Document.DataSourceDetailDict.UploadFile.Size != int64(len(content)) {
				t.Fatalf("%s: %+v", name, r.Document)
			}
			kdCompleted(t, c, eco, r.Batch)
			ids[name] = r.Document.Id.String()
		}
		// A corrupt PDF is accepted, then fails indexing with a readable error.
		corrupt, err := os.ReadFile(filepath.Join("testdata", "knowledge", "corrupt.pdf"))
		if err != nil {
			t.Fatal(err)
		}
		cr := kdCreateFile(t, c, eco, "broken.pdf", corrupt, automaticRule)
		st := kdWait(t, c, eco, cr.Batch)
		if st[0].IndexingStatus != client.IndexingStatusError || st[0].Error == nil || *st[0].Error == "" {
			t.Fatalf("corrupt pdf: %+v", st[0])
		}
		if d := kdGet(t, c, eco, cr.Document.Id.String()); d.DisplayStatus == nil || *d.DisplayStatus != client.DisplayStatusError {
			t.Fatalf("corrupt pdf display status: %+v", d.DisplayStatus)
		}

		// Same name: the existing document is re-pointed (same id) and re-indexed.
		again := kdCreateFile(t, c, eco, "notes.md", []byte("# Notes\n\nRewritten markdown."), automaticRule)
		if again.Document.Id.String() != ids["notes.md"] {
			t.Fatalf("same-name create made a new document %s (was %s)", again.Document.Id, ids["notes.md"])
		}
		kdCompleted(t, c, eco, again.Batch)
		// The legacy create_by_file path.
		body, ct := kdForm(t, ptr(automaticRule), "legacy.txt", []byte("legacy path text"))
		lr, err := c.CreateDocumentByFileLegacyWithBodyWithResponse(ctx, eco, nil, ct, body)
		if err != nil || lr.JSON200 == nil {
			t.Fatalf("create_by_file: %v %d %s", err, lr.StatusCode(), lr.Body)
		}
		kdCompleted(t, c, eco, lr.JSON200.Batch)

		// List: 1 text + 6 files + corrupt + legacy = 9 documents.
		l, err := c.ListDocumentsWithResponse(ctx, eco, &client.ListDocumentsParams{Limit: ptr(4)})
		if err != nil || l.JSON200 == nil || l.JSON200.Total != 9 || len(l.JSON200.Data) != 4 || !l.JSON200.HasMore || l.JSON200.Page != 1 {
			t.Fatalf("list: %v %s", err, l.Body)
		}
		l, _ = c.ListDocumentsWithResponse(ctx, eco, &client.ListDocumentsParams{Limit: ptr(4), Page: ptr(3)})
		if l.JSON200 == nil || len(l.JSON200.Data) != 1 || l.JSON200.HasMore {
			t.Fatalf("list page 3: %s", l.Body)
		}
		l, _ = c.ListDocumentsWithResponse(ctx, eco, &client.ListDocumentsParams{Keyword: ptr("planet")})
		if l.JSON200 == nil || l.JSON200.Total != 1 || l.JSON200.Data[0].Name != "planets.xlsx" {
			t.Fatalf("list by keyword: %s", l.Body)
		}

		// Get, in each metadata mode.
		pdfID := ids["report.pdf"]
		raw := func(mode string) (int, map[string]any) {
			r, err := c.GetDocumentWithResponse(ctx, eco, pdfID, &client.GetDocumentParams{Metadata: ptr(mode)})
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			json.Unmarshal(r.Body, &m)
			return r.StatusCode(), m
		}
		if code, m := raw("only"); code != 200 || len(m) != 3 || m["doc_metadata"] == nil {
			t.Fatalf("metadata=only: %d %v", code, m)
		}
		if code, m := raw("without"); code != 200 || m["doc_metadata"] != nil || m["segment_count"] == nil || m["name"] != "report.pdf" {
			t.Fatalf("metadata=without: %d %v", code, m)
		}
		if code, m := raw("all"); code != 200 || m["doc_metadata"] == nil || m["indexing_status"] != "completed" || m["display_status"] != "available" {
			t.Fatalf("metadata=all: %d %v", code, m)
		}
		if code, m := raw("some"); code != 400 || m["code"] != "invalid_metadata" || m["message"] != "Invalid metadata value: some" {
			t.Fatalf("metadata=some: %d %v", code, m)
		}

		// Status actions.
		status := func(action, want string) {
			t.Helper()
			r, err := c.UpdateDocumentStatusWithResponse(ctx, eco, action, client.UpdateDocumentStatusJSONRequestBody{DocumentIds: &[]string{pdfID}})
			if err != nil || r.JSON200 == nil || r.JSON200.Result != "success" {
				t.Fatalf("%s: %v %s", action, err, r.Body)
			}
			if d := kdGet(t, c, eco, pdfID); string(*d.DisplayStatus) != want {
				t.Fatalf("after %s: %s", action, *d.DisplayStatus)
			}
		}
		status("disable", "disabled")
		status("enable", "available")
		status("archive", "archived")
		if r, _ := c.DeleteDocumentWithResponse(ctx, eco, pdfID); r.StatusCode() != 403 {
			t.Fatalf("delete archived: %d %s", r.StatusCode(), r.Body)
		}
		status("un_archive", "available")
		if r, _ := c.UpdateDocumentStatusWithResponse(ctx, eco, "explode", client.UpdateDocumentStatusJSONRequestBody{DocumentIds: &[]string{pdfID}}); r.StatusCode() != 400 {
			t.Fatalf("unknown action: %d %s", r.StatusCode(), r.Body)
		}

		// Update by text (and its legacy path).
		ur, err := c.UpdateDocumentByTextWithResponse(ctx, eco, textDoc.Id.String(), client.UpdateDocumentByTextJSONRequestBody{
			Name: ptr("guide-v2"), Text: ptr("A new text for the guide."),
		})
		if err != nil || ur.JSON200 == nil || ur.JSON200.Batch != tr.JSON200.Batch || ur.JSON200.Document.Id != textDoc.Id {
			t.Fatalf("update by text: %v %s", err, ur.Body)
		}
		kdCompleted(t, c, eco, ur.JSON200.Batch)
		ul, err := c.UpdateDocumentByTextLegacyWithResponse(ctx, eco, textDoc.Id.String(), client.UpdateDocumentByTextLegacyJSONRequestBody{Text: ptr("no name")})
		if err != nil || ul.StatusCode() != 400 {
			t.Fatalf("update_by_text without name: %v %d %s", err, ul.StatusCode(), ul.Body)
		}

		// Delete.
		if r, err := c.DeleteDocumentWithResponse(ctx, eco, ids["table.csv"]); err != nil || r.StatusCode() != 204 {
			t.Fatalf("delete: %v %d %s", err, r.StatusCode(), r.Body)
		}
		if r, _ := c.GetDocumentWithResponse(ctx, eco, ids["table.csv"], nil); r.StatusCode() != 404 {
			t.Fatalf("get deleted: %d", r.StatusCode())
		}
		if r, _ := c.DeleteDocumentWithResponse(ctx, eco, ids["table.csv"]); r.StatusCode() != 404 {
			t.Fatalf("delete again: %d", r.StatusCode())
		}

		// Create-by-file refusals.
		hc := newContractClient(t)
		for _, tc := range []struct {
			name   string
			parts  []part
			status int
			code   string
		}{
			{"no file", []part{{field: "data", data: []byte(automaticRule)}}, 400, "no_file_uploaded"},
			{"two files", []part{{field: "file", filename: "a.txt", data: []byte("a")}, {field: "file", filename: "b.txt", data: []byte("b")}}, 400, "too_many_files"},
			{"empty file name", []part{{field: "file", emptyName: true, data: []byte("a")}}, 400, "filename_not_exists_error"},
			{"type not allowed", []part{{field: "file", filename: "a.zip", data: []byte("a")}}, 400, "invalid_param"},
			{"malformed data", []part{{field: "data", data: []byte("{nope")}, {field: "file", filename: "a.txt", data: []byte("a")}}, 400, "invalid_param"},
		} {
			b, ct := form(t, tc.parts...)
			resp, e := p.do(t, hc, call{method: "POST", path: "/datasets/" + eco + "/document/create-by-file", key: "Bearer " + p.KnowledgeKey, contentType: ct, body: b})
			if resp.StatusCode != tc.status || e.Code != tc.code {
				t.Errorf("create-by-file %s: %d %+v", tc.name, resp.StatusCode, e)
			}
		}
		if l, _ := c.ListDocumentsWithResponse(ctx, eco, nil); l.JSON200 == nil || l.JSON200.Total != 8 {
			t.Fatalf("refused creates changed the list: %s", l.Body)
		}
	})
}

// TestKnowledgeUpdateByFile is the seed operation: POST …/documents/{id}/update-by-file replaces
// a document's content with an uploaded file and re-indexes it; every bad input leaves the
// document as it was.
func TestKnowledgeUpdateByFile(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		if p.engine.DataDir == "" {
			t.Skip("needs a local server")
		}
		// A 1 MB document limit keeps the oversize case light.
		p.Restart(t, "UPLOAD_FILE_SIZE_LIMIT=1")
		c := newClient(t, p, p.KnowledgeKey)
		hc := newContractClient(t)
		ctx := context.Background()
		ds := kdDataset(t, c, "seed-update", "economy")
		created := kdCreateFile(t, c, ds, "handbook.txt", []byte("The original handbook talks about apples."), automaticRule)
		kdCompleted(t, c, ds, created.Batch)
		docID := created.Document.Id.String()
		path := "/datasets/" + ds + "/documents/" + docID + "/update-by-file"
		key := "Bearer " + p.KnowledgeKey
		before := kdGet(t, c, ds, docID)

		blobs := func() int {
			n := 0
			filepath.WalkDir(blob.DefaultRoot(p.engine.DataDir), func(_ string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					n++
				}
				return nil
			})
			return n
		}
		blobsBefore := blobs()
		newText := []byte("The revised handbook talks about pears and plums.")
		data := automaticRule
		for _, tc := range []struct {
			name   string
			path   string
			key    string
			parts  []part
			status int
			code   string
			msg    string
		}{
			{"missing data", path, key, []part{{field: "file", filename: "new.txt", data: newText}}, 400, "invalid_param", "data"},
			{"missing file", path, key, []part{{field: "data", data: []byte(data)}}, 400, "invalid_param", "file"},
			{"malformed data", path, key, []part{{field: "data", data: []byte(`{"process_rule":`)}, {field: "file", filename: "new.txt", data: newText}}, 400, "invalid_param", "data: invalid JSON"},
			{"data not an object", path, key, []part{{field: "data", data: []byte(`[1,2]`)}, {field: "file", filename: "new.txt", data: newText}}, 400, "invalid_param", "data"},
			{"wrong-typed member", path, key, []part{{field: "data", data: []byte(`{"doc_form": 5}`)}, {field: "file", filename: "new.txt", data: newText}}, 400, "invalid_param", "data.doc_form"},
			{"bad process rule", path, key, []part{{field: "data", data: []byte(`{"process_rule":{"mode":"sideways"}}`)}, {field: "file", filename: "new.txt", data: newText}}, 400, "invalid_param", ""},
			{"oversize", path, key, []part{{field: "data", data: []byte(data)}, {field: "file", filename: "new.txt", data: bytes.Repeat([]byte("big "), 300<<10)}}, 413, "file_too_large", "File size exceeded."},
			{"type not allowed", path, key, []part{{field: "data", data: []byte(data)}, {field: "file", filename: "new.zip", data: newText}}, 415, "unsupported_file_type", "File type not allowed."},
			{"two files", path, key, []part{{field: "data", data: []byte(data)}, {field: "file", filename: "a.txt", data: newText}, {field: "file", filename: "b.txt", data: newText}}, 400, "too_many_files", ""},
			{"app key", path, "Bearer " + p.AppKey, []part{{field: "data", data: []byte(data)}, {field: "file", filename: "new.txt", data: newText}}, 401, "unauthorized", ""},
			{"no key", path, "", []part{{field: "data", data: []byte(data)}, {field: "file", filename: "new.txt", data: newText}}, 401, "unauthorized", ""},
			{"unknown dataset", "/datasets/00000000-0000-4000-8000-000000000000/documents/" + docID + "/update-by-file", key, []part{{field: "data", data: []byte(data)}, {field: "file", filename: "new.txt", data: newText}}, 404, "not_found", ""},
			{"unknown document", "/datasets/" + ds + "/documents/00000000-0000-4000-8000-000000000000/update-by-file", key, []part{{field: "data", data: []byte(data)}, {field: "file", filename: "new.txt", data: newText}}, 404, "not_found", ""},
		} {
			b, ct := form(t, tc.parts...)
			resp, e := p.do(t, hc, call{method: "POST", path: tc.path, key: tc.key, contentType: ct, body: b})
			if resp.StatusCode != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("%s: %d %+v, want %d %s %q", tc.name, resp.StatusCode, e, tc.status, tc.code, tc.msg)
			}
		}
		// Oversize on create-by-file is the same 413 (Dify's own create route answers 400
		// invalid_param).
		b, ct := form(t, part{field: "data", data: []byte(data)}, part{field: "file", filename: "big.txt", data: bytes.Repeat([]byte("x"), 1<<20+1)})
		if resp, e := p.do(t, hc, call{method: "POST", path: "/datasets/" + ds + "/document/create-by-file", key: key, contentType: ct, body: b}); resp.StatusCode != 413 || e.Code != "file_too_large" || !strings.HasPrefix(e.Message, "File size exceeded.") {
			t.Errorf("oversize create: %d %+v", resp.StatusCode, e)
		}
		// An archived document is not available.
		if r, _ := c.UpdateDocumentStatusWithResponse(ctx, ds, "archive", client.UpdateDocumentStatusJSONRequestBody{DocumentIds: &[]string{docID}}); r.StatusCode() != 200 {
			t.Fatalf("archive: %s", r.Body)
		}
		b, ct = form(t, part{field: "data", data: []byte(data)}, part{field: "file", filename: "new.txt", data: newText})
		if resp, e := p.do(t, hc, call{method: "POST", path: path, key: key, contentType: ct, body: b}); resp.StatusCode != 400 || e.Code != "invalid_param" || e.Message != "Document is not available" {
			t.Errorf("archived: %d %+v", resp.StatusCode, e)
		}
		if r, _ := c.UpdateDocumentStatusWithResponse(ctx, ds, "un_archive", client.UpdateDocumentStatusJSONRequestBody{DocumentIds: &[]string{docID}}); r.StatusCode() != 200 {
			t.Fatalf("un_archive: %s", r.Body)
		}

		// Nothing changed: the same document, content and upload; no blob left behind.
		after := kdGet(t, c, ds, docID)
		if *after.Name != *before.Name || *after.DataSourceInfo.UploadFile != *before.DataSourceInfo.UploadFile || *after.SegmentCount != *before.SegmentCount || *after.IndexingStatus != "completed" {
			t.Fatalf("refused updates changed the document:\nbefore %+v\nafter  %+v", before, after)
		}
		if n := blobs(); n != blobsBefore {
			t.Fatalf("refused updates left files behind: %d files, was %d", n, blobsBefore)
		}
		if l, _ := c.ListDocumentsWithResponse(ctx, ds, nil); l.JSON200 == nil || l.JSON200.Total != 1 {
			t.Fatalf("documents: %s", l.Body)
		}

		// The seed success: 200 with the original batch, the document re-pointed and re-indexed.
		body, ct2 := kdForm(t, ptr(data), "handbook-v2.txt", newText)
		r, err := c.UpdateDocumentByFileWithBodyWithResponse(ctx, ds, docID, ct2, body)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("update-by-file: %v %d %s", err, r.StatusCode(), r.Body)
		}
		doc := r.JSON200.Document
		if r.JSON200.Batch != created.Batch || doc.Id.String() != docID || doc.Name != "handbook-v2.txt" ||
			doc.DataSourceDetailDict.UploadFile == nil || doc.DataSourceDetailDict.UploadFile.Name != "handbook-v2.txt" ||
			*doc.DataSourceInfo.UploadFileId == *created.Document.DataSourceInfo.UploadFileId {
			t.Fatalf("update-by-file response: %s", r.Body)
		}
		kdCompleted(t, c, ds, r.JSON200.Batch)
		segs, err := c.ListSegmentsWithResponse(ctx, ds, docID, nil)
		if err != nil || segs.JSON200 == nil {
			t.Fatalf("segments: %v %d %s", err, segs.StatusCode(), segs.Body)
		}
		var text strings.Builder
		for _, s := range segs.JSON200.Data {
			text.WriteString(s.Content)
		}
		if !strings.Contains(text.String(), "pears") || strings.Contains(text.String(), "apples") {
			t.Fatalf("content after update: %q", text.String())
		}

		// The legacy update_by_file path and PATCH (file optional) work the same way.
		body, ct2 = kdForm(t, ptr(data), "handbook-v3.txt", []byte("Third edition about cherries."))
		lr, err := c.UpdateDocumentByFileLegacyWithBodyWithResponse(ctx, ds, docID, ct2, body)
		if err != nil || lr.JSON200 == nil || lr.JSON200.Batch != created.Batch {
			t.Fatalf("update_by_file: %v %d %s", err, lr.StatusCode(), lr.Body)
		}
		kdCompleted(t, c, ds, created.Batch)
		body, ct2 = kdForm(t, ptr(`{"doc_language":"French"}`), "", nil)
		pr, err := c.UpdateDocumentWithBodyWithResponse(ctx, ds, docID, ct2, body)
		if err != nil || pr.JSON200 == nil || pr.JSON200.Document.Name != "handbook-v3.txt" {
			t.Fatalf("PATCH without file: %v %d %s", err, pr.StatusCode(), pr.Body)
		}
		kdCompleted(t, c, ds, created.Batch)
		if d := kdGet(t, c, ds, docID); d.DocLanguage == nil || *d.DocLanguage != "French" {
			t.Fatalf("PATCH doc_language: %+v", d.DocLanguage)
		}
	})
}

// TestTextDocumentKeepsItsName: a document made by create-by-text is named as sent, as current
// Dify names it (its upload_text stores the name without adding an extension), whatever the
// name ends in; its text is read as plain text and found by search.
func TestTextDocumentKeepsItsName(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.KnowledgeKey)
		ds := segDataset(t, c, "text names", false)
		for _, name := range []string{"Refund policy", "notes.md", "Q3/Q4 plan"} {
			r, err := c.CreateDocumentByTextWithResponse(context.Background(), ds, nil, client.CreateDocumentByTextJSONRequestBody{
				Name: name, Text: "# Refunds\n\nRefunds take *five* days.", ProcessRule: &client.ProcessRule{Mode: "automatic"}})
			if err != nil || r.JSON200 == nil {
				t.Fatalf("%q: %v %s", name, err, r.Body)
			}
			if r.JSON200.Document.Name != name {
				t.Errorf("created %q as %q", name, r.JSON200.Document.Name)
			}
			if st := waitIndexing(t, c, ds, r.JSON200.Batch); st.IndexingStatus != client.IndexingStatusCompleted {
				t.Fatalf("%q: %s %v", name, st.IndexingStatus, st.Error)
			}
			doc := kdGet(t, c, ds, r.JSON200.Document.Id.String())
			if doc.Name == nil || *doc.Name != name {
				t.Errorf("%q reads as %v", name, doc.Name)
			}
			// Plain text: the markdown marks stay in the chunk.
			segs := listSegments(t, c, ds, doc.Id.String(), nil)
			if len(segs.Data) != 1 || !strings.Contains(segs.Data[0].Content, "*five*") {
				t.Errorf("%q: chunks %+v", name, segs.Data)
			}
		}
		// A document needs a name to be told apart; nothing is stored without one.
		for _, name := range []string{"", "   "} {
			r, err := c.CreateDocumentByTextWithResponse(context.Background(), ds, nil, client.CreateDocumentByTextJSONRequestBody{
				Name: name, Text: "Nameless.", ProcessRule: &client.ProcessRule{Mode: "automatic"}})
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, fmt.Sprintf("name %q", name), r.StatusCode(), r.Body, 400, "invalid_param")
		}
	})
}
