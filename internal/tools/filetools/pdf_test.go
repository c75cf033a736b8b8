package filetools_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/filetools"
)

const pdfProcess = "kalochin/pdf_process/pdf_process"

// makePDF writes a PDF of n pages, w × h points each, page i showing "Page i".
func makePDF(n int, w, h int) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	b.WriteString("%PDF-1.4\n")
	kids := make([]string, n)
	for i := range n {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i := range n {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", w, h, 5+2*i))
		text := fmt.Sprintf("BT /F1 24 Tf 72 %d Td (Page %d) Tj ET", h-100, i+1)
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(text), text))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// pdfCall calls a tool of pdf_process with the PDF and more arguments.
func pdfCall(t *testing.T, s *filetools.Set, name string, pdf []byte, more map[string]any) tools.Result {
	t.Helper()
	return invoke(t, s, pdfProcess, name, nil, fileArgs(t, "pdf_content", tools.FileArg{Filename: "report.pdf", MIMEType: "application/pdf", Data: pdf}, more))
}

// pdfText is the text of a PDF, as poppler's pdftotext reads it.
func pdfText(t *testing.T, data []byte) string {
	t.Helper()
	cmd := exec.Command("pdftotext", "-", "-")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestPDFTools: each tool of pdf_process on a real three-page PDF, through poppler: the page
// count as text and JSON, the pages as PNG images at the zoom's resolution, one page, a list of
// pages in order with repeats, and every page, each as a PDF that holds those pages' text, named
// as the plugin names them.
func TestPDFTools(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	pdf := makePDF(3, 612, 792)

	res := pdfCall(t, s, "pdf_page_counter", pdf, nil)
	if res.IsError || res.Text != "3" || string(res.JSON) != `{"page1":1,"page2":2,"page3":3}` {
		t.Fatalf("counter: %s %s", res.Text, res.JSON)
	}
	if res := pdfCall(t, s, "pdf_page_counter", makePDF(10, 100, 100), nil); !strings.HasPrefix(string(res.JSON), `{"page01":1,"page02":2,`) {
		t.Errorf("counter of 10 pages: %s", res.JSON)
	}

	res = pdfCall(t, s, "pdf_to_png", pdf, map[string]any{"zoom": 1})
	if res.IsError || res.Text != "Successfully converted 3 pages to PNG images." || len(res.Files) != 3 {
		t.Fatalf("png: %s, %d files", res.Text, len(res.Files))
	}
	for i, f := range res.Files {
		img, err := png.Decode(bytes.NewReader(f.Data))
		if err != nil || f.Name != fmt.Sprintf("report_page%d.png", i+1) || f.MIMEType != "image/png" {
			t.Fatalf("file %s %s: %v", f.Name, f.MIMEType, err)
		}
		if b := img.Bounds(); b.Dx() != 612 || b.Dy() != 792 {
			t.Errorf("page %d at zoom 1: %v", i+1, b)
		}
	}
	res = pdfCall(t, s, "pdf_to_png", makePDF(1, 100, 50), nil) // the default zoom, 2
	if img, err := png.Decode(bytes.NewReader(res.Files[0].Data)); err != nil || img.Bounds().Dx() != 200 || img.Bounds().Dy() != 100 {
		t.Errorf("default zoom: %v %v", err, img.Bounds())
	}

	res = pdfCall(t, s, "pdf_single_page_extractor", pdf, map[string]any{"page_number": "2"})
	if res.IsError || res.Text != "Successfully extracted page 2 from PDF" || len(res.Files) != 1 || res.Files[0].Name != "report_page2.pdf" {
		t.Fatalf("single: %s %v", res.Text, res.Files)
	}
	if text := pdfText(t, res.Files[0].Data); !strings.Contains(text, "Page 2") || strings.Contains(text, "Page 1") {
		t.Errorf("page 2 holds %q", text)
	}

	res = pdfCall(t, s, "pdf_multi_pages_extractor", pdf, map[string]any{"fixed_pages": "1", "dynamic_pages": "3,2-3"})
	if res.IsError || res.Text != "Successfully extracted fixed pages '1' followed by dynamic pages '3,2-3'" ||
		len(res.Files) != 1 || res.Files[0].Name != "report_fixed_1_plus_3_2to3.pdf" {
		t.Fatalf("multi: %s %v", res.Text, res.Files)
	}
	text := pdfText(t, res.Files[0].Data)
	var order []string
	for _, f := range strings.Fields(strings.ReplaceAll(text, "Page", " ")) {
		order = append(order, f)
	}
	if strings.Join(order, ",") != "1,3,2,3" {
		t.Errorf("pages in order %v (%q)", order, text)
	}
	if res := pdfCall(t, s, "pdf_multi_pages_extractor", pdf, map[string]any{"dynamic_pages": "-2"}); res.IsError ||
		res.Files[0].Name != "report_pages_to2.pdf" || res.Text != "Successfully extracted pages '-2' from PDF" {
		t.Errorf("open range: %s %v", res.Text, res.Files)
	}

	res = pdfCall(t, s, "pdf_splitter", pdf, nil)
	if res.IsError || res.Text != "Successfully split PDF into 3 pages." || len(res.Files) != 3 {
		t.Fatalf("split: %s, %d files", res.Text, len(res.Files))
	}
	for i, f := range res.Files {
		if f.Name != fmt.Sprintf("report_page%d.pdf", i+1) || !strings.Contains(pdfText(t, f.Data), fmt.Sprintf("Page %d", i+1)) {
			t.Errorf("split file %d: %s", i+1, f.Name)
		}
	}
}

// TestPDFToolsRefuse: bad input is the plugin's refusal, or a bound's, as the tool's answer.
func TestPDFToolsRefuse(t *testing.T) {
	t.Parallel()
	s := filetools.New(filetools.Options{})
	pdf := makePDF(3, 612, 792)
	for _, tc := range []struct {
		name string
		pdf  []byte
		more map[string]any
		want string
	}{
		{"pdf_page_counter", []byte("not a pdf at all"), nil, "Invalid PDF file: "},
		{"pdf_to_png", pdf, map[string]any{"zoom": 0}, `Invalid zoom "0"`},
		{"pdf_to_png", pdf, map[string]any{"zoom": "99"}, `Invalid zoom "99"`},
		{"pdf_single_page_extractor", pdf, map[string]any{"page_number": 4}, "Invalid page number. The PDF has 3 pages (1-3). You entered: 4."},
		{"pdf_single_page_extractor", pdf, map[string]any{"page_number": "two"}, "Invalid page number format: two. Must be an integer."},
		{"pdf_single_page_extractor", pdf, map[string]any{"page_number": 0}, "Page number must be at least 1. You entered: 0"},
		{"pdf_single_page_extractor", pdf, nil, "Missing required parameter: page_number"},
		{"pdf_multi_pages_extractor", pdf, nil, "Missing or invalid required parameter: dynamic_pages"},
		{"pdf_multi_pages_extractor", pdf, map[string]any{"dynamic_pages": "3-1"}, "Start page cannot be greater than end page in range: '3-1'."},
		{"pdf_multi_pages_extractor", pdf, map[string]any{"dynamic_pages": "1,9"}, "Page number 9 out of range. PDF has 3 pages (1 to 3)."},
		{"pdf_multi_pages_extractor", pdf, map[string]any{"dynamic_pages": ",,"}, "No valid page numbers found"},
		{"pdf_multi_pages_extractor", pdf, map[string]any{"dynamic_pages": strings.Repeat("1-3,", 40)}, "names more than 100 pages"},
		// A page of 200 by 200 inches at zoom 5 is 72,000 pixels square: refused before poppler
		// is asked, which would answer a 1×1 image.
		{"pdf_to_png", makePDF(1, 14400, 14400), map[string]any{"zoom": 5}, "page 1 is 14400 × 14400 points, an image of 72000 × 72000 pixels"},
	} {
		res := pdfCall(t, s, tc.name, tc.pdf, tc.more)
		if !res.IsError || !strings.Contains(res.Text, tc.want) || len(res.Files) != 0 {
			t.Errorf("%s %v: %v %q, want %q", tc.name, tc.more, res.IsError, res.Text, tc.want)
		}
	}
	res := invoke(t, s, pdfProcess, "pdf_splitter", nil, `{}`)
	if !res.IsError || res.Text != "Invalid PDF content format. Expected File object." {
		t.Errorf("no file: %q", res.Text)
	}

	// The Set's bounds: pages, time, and programs that are not there.
	few := filetools.New(filetools.Options{MaxPDFPages: 2})
	if res := pdfCall(t, few, "pdf_splitter", pdf, nil); !res.IsError || !strings.Contains(res.Text, "the PDF has 3 pages; this server splits at most 2") {
		t.Errorf("pages: %q", res.Text)
	}
	if res := pdfCall(t, few, "pdf_to_png", pdf, nil); !res.IsError || !strings.Contains(res.Text, "converts at most 2") {
		t.Errorf("pages: %q", res.Text)
	}
	slow := filetools.New(filetools.Options{PDFTimeout: time.Nanosecond})
	if res := pdfCall(t, slow, "pdf_page_counter", pdf, nil); !res.IsError || !strings.Contains(res.Text, "took longer than the 1ns allowed") {
		t.Errorf("timeout: %q", res.Text)
	}
	// Too little memory for a page at zoom 5: poppler is killed, or renders less than the page.
	tight := filetools.New(filetools.Options{PDFMemory: 40 << 20})
	if res := pdfCall(t, tight, "pdf_to_png", pdf, map[string]any{"zoom": 5}); !res.IsError || !strings.Contains(res.Text, "memory") || len(res.Files) != 0 {
		t.Errorf("memory: %q", res.Text)
	}
	none := filetools.New(filetools.Options{PopplerDir: t.TempDir()})
	if res := pdfCall(t, none, "pdf_page_counter", pdf, nil); !res.IsError || !strings.Contains(res.Text, "need poppler-utils") {
		t.Errorf("no poppler: %q", res.Text)
	}
}
