package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/extract/extracttest"
)

// hangWait bounds how long a test waits for an extraction, so that a file
// that makes the extractor spin fails the test instead of hanging it.
const hangWait = 20 * time.Second

// extractWithin runs Extract on a goroutine and fails the test if it has not
// returned within hangWait.
func extractWithin(t *testing.T, name string, data []byte) (Document, error) {
	t.Helper()
	type result struct {
		doc Document
		err error
	}
	ch := make(chan result, 1)
	go func() {
		doc, err := Extract(context.Background(), name, bytes.NewReader(data), int64(len(data)))
		ch <- result{doc, err}
	}()
	select {
	case r := <-ch:
		return r.doc, r.err
	case <-time.After(hangWait):
		t.Fatalf("Extract(%s) has not returned after %s", name, hangWait)
		return Document{}, nil
	}
}

// assertMessage checks that err is an *Error of the kind whose message
// contains want.
func assertMessage(t *testing.T, err error, kind, want string) {
	t.Helper()
	e := assertKind(t, err, kind)
	if !strings.Contains(e.Message, want) {
		t.Fatalf("message = %q, want it to contain %q", e.Message, want)
	}
}

// TestPDFPageTreeCycles: page trees that contain themselves made the PDF
// library's page lookup loop forever. They are now reported as corrupt.
func TestPDFPageTreeCycles(t *testing.T) {
	t.Parallel()
	page := "<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << >> >>"
	content := "<< /Length 19 >>\nstream\nBT (hi) Tj ET     \nendstream"
	tests := map[string][]string{
		// The 587-byte file of the report: the root lists itself.
		"root lists itself": {
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [2 0 R] /Count 30 >>" + strings.Repeat(" ", 348),
		},
		"child lists its parent": {
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 2 >>",
			"<< /Type /Pages /Parent 2 0 R /Kids [5 0 R 2 0 R] /Count 2 >>",
			content,
			page,
		},
		"node lists itself twice": {
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] /Count 9 >>",
			"<< /Type /Pages /Parent 2 0 R /Kids [3 0 R 3 0 R] /Count 9 >>",
		},
	}
	for name, objs := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := extracttest.PDF(objs, "")
			_, err := extractWithin(t, "loop.pdf", data)
			assertMessage(t, err, KindCorrupt, "page tree contains a cycle")
			t.Logf("%d bytes: %v", len(data), err)
		})
	}
}

// TestPDFParentCycle: the library looked a page's resources up through its
// /Parent chain without bound, so a chain that loops made extraction spin.
// Resources are now inherited along the walked tree and /Parent is never
// followed: the page's text comes out.
func TestPDFParentCycle(t *testing.T) {
	t.Parallel()
	data := extracttest.PDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 /Parent 2 0 R >>",
		"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>",
		"<< /Length 24 >>\nstream\nBT (parent loop) Tj ET \nendstream",
	}, "")
	doc, err := extractWithin(t, "parent.pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "parent loop" {
		t.Fatalf("text = %q", doc.Text)
	}
}

// TestPDFResourcesInherited: a page without /Resources uses its nearest
// ancestor's, so its font (here a /Differences encoding) still applies.
func TestPDFResourcesInherited(t *testing.T) {
	t.Parallel()
	data := extracttest.PDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 /Resources << /Font << /F1 5 0 R >> >> >>",
		"<< /Type /Pages /Parent 2 0 R /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 3 0 R /Contents 6 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /Differences [65 /eacute] >> >>",
		"<< /Length 27 >>\nstream\nBT /F1 12 Tf (cAfAs) Tj ET\nendstream",
	}, "")
	doc, err := extractWithin(t, "inherit.pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "céfés" {
		t.Fatalf("text = %q, want the inherited font's encoding applied", doc.Text)
	}
}

// TestPDFCrossReferenceLoops: cross-reference structures the library followed
// without bound (a /Prev chain that loops; an object stream stored in itself,
// which recursed until the stack overflowed and killed the process; object
// streams that /Extends each other; an object stream whose /N is stored in
// itself) are reported as corrupt.
func TestPDFCrossReferenceLoops(t *testing.T) {
	t.Parallel()
	catalog := "<< /Type /Catalog /Pages 2 0 R >>"
	prevLoop := extracttest.PDF([]string{catalog, "<< /Type /Pages /Kids [] /Count 0 >>"}, "/Prev XREFOFFSET ")
	xrefAt := bytes.Index(prevLoop, []byte("xref\n"))
	prevLoop = bytes.Replace(prevLoop, []byte("XREFOFFSET"), fmt.Appendf(nil, "%010d", xrefAt), 1)

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"prev chain loops", prevLoop, "cross-reference sections refer to each other in a loop"},
		{"object stream inside itself", buildXrefStreamPDF([]string{catalog, "null"}, map[int][2]int{2: {2, 0}}),
			"object stream is itself stored in an object stream"},
		{"object streams inside each other", buildXrefStreamPDF([]string{catalog, "null", "null"}, map[int][2]int{2: {3, 0}, 3: {2, 0}}),
			"object stream is itself stored in an object stream"},
		{"extends loop", buildXrefStreamPDF([]string{catalog, "null",
			"<< /Type /ObjStm /N 1 /First 4 /Extends 3 0 R /Length 9 >>\nstream\n9 0 null\nendstream"}, map[int][2]int{2: {3, 0}}),
			"object streams extend each other in a loop"},
		{"object count stored in the stream", buildXrefStreamPDF([]string{catalog, "<< /Type /Pages /Kids [] /Count 0 >>",
			"<< /Type /ObjStm /N 4 0 R /First 4 /Length 9 >>\nstream\n9 0 null\nendstream", "null"}, map[int][2]int{2: {3, 0}, 4: {3, 1}}),
			"refers to an object inside an object stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := extractWithin(t, "xref.pdf", tt.data)
			assertMessage(t, err, KindCorrupt, tt.want)
		})
	}
}

// TestPDFDeclaredObjectCounts: the library allocates a table entry for every
// object number a cross-reference section declares, so a few hundred bytes
// could make it allocate gigabytes. Declarations beyond what the file can
// hold are rejected. (Sizes are kept moderate so that the unfixed code only
// wastes ~200 MB instead of crashing the machine.)
func TestPDFDeclaredObjectCounts(t *testing.T) {
	t.Parallel()
	classic := extracttest.PDF([]string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>"}, "")
	classic = bytes.Replace(classic, []byte("trailer"), []byte("5000000 1\n0000000009 00000 n \ntrailer"), 1)
	stream := buildXrefStreamPDF([]string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>"}, nil)
	stream = bytes.Replace(stream, []byte("/Size 4 "), []byte("/Size 5000000 /Index [0 4] "), 1)
	for name, data := range map[string][]byte{"table": classic, "stream": stream} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := extractWithin(t, "objects.pdf", data)
			assertMessage(t, err, KindCorrupt, "more than such a file can hold")
		})
	}
}

// TestPDFObjectStreams: a file whose page tree and pages live in a
// (compressed) object stream is read normally.
func TestPDFObjectStreams(t *testing.T) {
	t.Parallel()
	first, body := objectStreamData([]int{2, 3}, []string{
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << >> >>",
	})
	z := zlibBytes(t, body)
	objstm := fmt.Sprintf("<< /Type /ObjStm /N 2 /First %d /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", first, len(z), z)
	data := buildXrefStreamPDF([]string{
		"<< /Type /Catalog /Pages 2 0 R >>", "null", "null",
		"<< /Length 28 >>\nstream\nBT (from object streams) Tj ET\nendstream",
		objstm,
	}, map[int][2]int{2: {5, 0}, 3: {5, 1}})
	doc, err := extractWithin(t, "objstm.pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "from object streams" || len(doc.Pages) != 1 {
		t.Fatalf("doc = %+v", doc)
	}
}

// bombOps is the text operator repeated in the decompression bombs.
const bombOps = "BT /F1 12 Tf 72 720 Td (Hello bomb) Tj ET\n"

// pdfBomb is a ~3 MB PDF whose single content stream inflates to ~1 GB of
// text operators. Nothing should read it to the end, so the stream is left
// unterminated (which spares computing its checksum).
func pdfBomb(t *testing.T) []byte {
	return pdfWithStreams([][]byte{zlibRepeat(t, bombOps, 1<<30, false)}, "")
}

// TestPDFContentStreamBomb: the library inflated a content stream however
// large and built the page's whole text in memory (2-4 GB for this file). The
// stream is now cut off at MaxPDFStreamSize.
func TestPDFContentStreamBomb(t *testing.T) {
	t.Parallel()
	data := pdfBomb(t)
	_, err := extractWithin(t, "bomb.pdf", data)
	assertMessage(t, err, KindTooLarge, "PDF content stream exceeds 64 MB when decompressed")
	t.Logf("%d bytes: %v", len(data), err)
}

// TestPDFDocumentDecompressionCap: streams each under the per-stream cap
// still count towards the per-file total. Smaller limits than the package's
// keep the test fast: three pages of 3 MB of white space against an 8 MB total
// (the package's limits are applied the same way, see TestPDFContentStreamBomb).
func TestPDFDocumentDecompressionCap(t *testing.T) {
	t.Parallel()
	page := zlibRepeat(t, " \n", 3<<20, true)
	data := pdfWithStreams([][]byte{page, page, page}, "")
	_, err := extractPDFLimited(context.Background(), data, pdfLimits{stream: 4 << 20, fontMap: 1 << 20, total: 8 << 20})
	assertMessage(t, err, KindTooLarge, "PDF streams exceed 8 MB in total when decompressed")
	if _, err := extractPDFLimited(context.Background(), data, pdfLimits{stream: 4 << 20, fontMap: 1 << 20, total: 10 << 20}); err != nil {
		t.Fatalf("within the total: %v", err)
	}
}

// TestPDFFontMapCap: a font's ToUnicode map is capped at MaxPDFFontMapSize
// before the library parses it.
func TestPDFFontMapCap(t *testing.T) {
	t.Parallel()
	cmap := zlibRepeat(t, "%% padding\n", MaxPDFFontMapSize+1<<20, true)
	content := zlibBytes(t, "BT /F1 12 Tf (x) Tj ET")
	data := pdfWithStreams([][]byte{content}, "/ToUnicode 6 0 R ",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(cmap), cmap))
	_, err := extractWithin(t, "cmap.pdf", data)
	assertMessage(t, err, KindTooLarge, "PDF font map (ToUnicode CMap) exceeds 4 MB when decompressed")
}

// TestPDFTextCapWithinPage: a page producing more than MaxTextSize of text is
// cut while it is read, not after its whole text was built. The stream holds
// 24 MB of text and is damaged after it: the unfixed code read the page to
// the end and failed there; now reading stops at the cap, before the damage.
func TestPDFTextCapWithinPage(t *testing.T) {
	t.Parallel()
	op := "BT /F1 12 Tf (" + strings.Repeat("a", 1<<20) + ") Tj ET\n"
	data := pdfWithStreams([][]byte{zlibRepeat(t, op, 24<<20, false)}, "")
	doc, err := extractWithin(t, "long.pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Truncated || len(doc.Text) > MaxTextSize || len(doc.Pages) != 1 {
		t.Fatalf("truncated=%v len=%d pages=%d", doc.Truncated, len(doc.Text), len(doc.Pages))
	}
}

// countdownCtx reports cancellation from its n-th Err call on, so a test can
// cancel an extraction part-way through deterministically.
type countdownCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestPDFCancelWithinPage: the context is checked while a page is read, not
// only between pages (the unfixed code read a whole page first). The page is
// 16 MB of white space; extractPDF is called directly because Extract would
// return at cancellation anyway, abandoning the parser.
func TestPDFCancelWithinPage(t *testing.T) {
	t.Parallel()
	data := pdfWithStreams([][]byte{zlibRepeat(t, " \n", 16<<20, true)}, "")
	ctx := &countdownCtx{Context: context.Background()}
	ctx.n.Store(20)
	_, err := extractPDF(ctx, data)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestPDFInlineImageSkipped: the binary data of an inline image is skipped,
// not read as operators (bytes such as ")" made the library give up on the
// whole file).
func TestPDFInlineImageSkipped(t *testing.T) {
	t.Parallel()
	content := "BT (before) Tj ET\nBI /W 2 /H 2 /BPC 8 /CS /G ID \x00)(\xff] EI Q\nBT (after) Tj ET"
	data := pdfWithStreams([][]byte{zlibBytes(t, content)}, "")
	doc, err := extractWithin(t, "inline.pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Text != "before\nafter" {
		t.Fatalf("text = %q", doc.Text)
	}
}

// TestXLSXSharedStringExpansion: a shared string is stored once but copied
// out for every cell referring to it, so a tiny workbook could expand to
// gigabytes of row text. A row is now rejected before it is read once its
// cells add up to more than MaxTextSize; rows below that are read as before.
func TestXLSXSharedStringExpansion(t *testing.T) {
	t.Parallel()
	data := buildXLSXSharedString(t, 1<<20, 30)
	_, err := extractWithin(t, "wide.xlsx", data)
	assertMessage(t, err, KindTooLarge, "XLSX row 1 of sheet1.xml expands to more than 20 MB of text")
	t.Logf("%d bytes: %v", len(data), err)

	doc, err := extractWithin(t, "ok.xlsx", buildXLSXSharedString(t, 1000, 30))
	if err != nil || len(doc.Parts) != 1 || len(doc.Parts[0]) != 30*(2*1000+5)+29 {
		t.Fatalf("parts=%d err=%v", len(doc.Parts), err)
	}
}

// TestOOXMLEntryCap: a part declared larger than MaxUncompressedEntrySize is
// rejected before it is read, even when the whole file is under
// MaxUncompressedSize.
func TestOOXMLEntryCap(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"word/document.xml", "xl/worksheets/sheet1.xml"} {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		rawDeflateEntry(t, zw, name, MaxUncompressedEntrySize+1, 1024)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		file := "big.docx"
		if strings.HasPrefix(name, "xl/") {
			file = "big.xlsx"
		}
		_, err := extractWithin(t, file, b.Bytes())
		assertMessage(t, err, KindTooLarge, "expands to more than 64 MB")
	}
}

// TestHTMLDeepNesting: every level of quoting or list nesting prefixes each
// line inside it, so deep nesting multiplied the text (and the conversion
// time, which cancellation does not interrupt). Levels beyond maxHTMLNesting
// are rendered as plain blocks, keeping the text within a small multiple of
// the input.
func TestHTMLDeepNesting(t *testing.T) {
	t.Parallel()
	for _, tag := range []string{"blockquote", "ul><li"} {
		src := strings.Repeat("<"+tag+">", 240) + strings.Repeat("<p>x</p>", 2000)
		doc, err := extractWithin(t, "deep.html", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Text) > 20*len(src) || strings.Count(doc.Text, "x") != 2000 {
			t.Fatalf("%s: %d bytes of HTML gave %d bytes of text with %d x", tag, len(src), len(doc.Text), strings.Count(doc.Text, "x"))
		}
		t.Logf("%s: %d bytes of HTML, %d bytes of text", tag, len(src), len(doc.Text))
	}
}
