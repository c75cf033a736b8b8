package filetools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/tools"
)

// The tools of kalochin/pdf_process (provider pdf_process, read at its version 0.0.4): a PDF's
// pages as PNG images, its page count, one page or a list of pages as a new PDF, and every page
// as a PDF of its own. The plugin works with PyMuPDF in its Python process; here the work is
// done by poppler's programs (pdfinfo, pdftoppm, pdfseparate, pdfunite, Debian's poppler-utils),
// each run as a child process held to CPU, memory and file-size limits, in a directory of its
// own that is removed afterwards (poppler.go). Names, texts and refusals are the plugin's.
const (
	pdfPlugin   = "kalochin/pdf_process/pdf_process"
	pdfProvider = "pdf_process"
)

// pdfParam is the file parameter of every tool of the plugin.
const pdfParam = "pdf_content"

var pdfSpecs = []spec{
	pdfSpec("pdf_to_png", "PDF to PNG Converter",
		"A tool that converts each page of a PDF document into a separate PNG image with configurable quality", pdfToPNG,
		param{name: "zoom", description: "Zoom factor to control the quality of output PNG images (default 2)"}),
	pdfSpec("pdf_page_counter", "PDF Page Counter",
		"A tool for counting the total number of pages in a PDF document and returns both text and JSON formats", pdfPageCount),
	pdfSpec("pdf_single_page_extractor", "PDF Single Page Extractor",
		"A tool for extracting text from a specific page of a PDF document", pdfSinglePage,
		param{name: "page_number", required: true, description: "Specific page number to extract from the PDF."}),
	pdfSpec("pdf_multi_pages_extractor", "PDF Multi Pages Extractor",
		`A tool for extracting specified pages from a PDF document. Supports ranges ("1-3"), individual pages ("1,3,5"), `+
			`or combinations ("1-3,5"). Can optionally include a set of fixed pages before the dynamic pages.`, pdfMultiPages,
		param{name: "fixed_pages", description: `A string specifying the fixed page numbers or ranges (1-indexed). Examples: "1-3", "5", "1,3,5-7". Optional.`},
		param{name: "dynamic_pages", required: true, description: `A string specifying the dynamic page numbers or ranges to extract (1-indexed). Examples: "1-3", "5", "1,3,5-7". Required.`}),
	pdfSpec("pdf_splitter", "PDF Splitter",
		"A tool for splitting a PDF document into individual pages, returning each page as a separate PDF file", pdfSplit),
}

// pdfSpec is a tool of pdf_process: its PDF file parameter, and params.
func pdfSpec(name, label, description string, run func(context.Context, *Set, args) tools.Result, params ...param) spec {
	return spec{plugin: pdfPlugin, provider: pdfProvider, name: name, label: label, description: description,
		params: params, files: []string{pdfParam}, run: run}
}

// pdfDoc is a PDF given to a tool, written to a work directory, with its page count.
type pdfDoc struct {
	*popplerJob
	pages int
	// base is the file's name without a ".pdf" ending, as the plugin names what it makes.
	base string
}

// withPDF reads the call's PDF, writes it to a work directory, counts its pages and runs work
// on it; the directory is removed afterwards. The refusals are the plugin's.
func withPDF(ctx context.Context, s *Set, a args, work func(d *pdfDoc) tools.Result) tools.Result {
	f, err := a.file(pdfParam)
	if err != nil {
		return failed("Invalid PDF content format. Expected File object.")
	}
	if len(f.Data) > s.o.MaxFileBytes {
		return failed("Invalid PDF file: the file is %d bytes; this server reads at most %d", len(f.Data), s.o.MaxFileBytes)
	}
	job, err := s.newPopplerJob(f.Data)
	if err != nil {
		return failed("Error processing PDF: %v", err)
	}
	defer job.close()
	pages, err := job.pageCount(ctx)
	if err != nil {
		return failed("Invalid PDF file: %v", err)
	}
	if pages == 0 {
		return failed("The PDF file contains no pages.")
	}
	base := f.Filename
	if base == "" {
		base = "document"
	}
	if strings.HasSuffix(strings.ToLower(base), ".pdf") {
		base = base[:len(base)-len(".pdf")]
	}
	return work(&pdfDoc{popplerJob: job, pages: pages, base: base})
}

// MaxPagePixels bounds the pixels of one page's image: an A4 page at zoom 5 (about 15 million)
// fits with room to spare; a page of poster size at a high zoom does not.
const MaxPagePixels = 40_000_000

// pdfToPNG is pdf_to_png: every page as a PNG image, zoom times 72 dots per inch, named
// <name>_page<n>.png.
func pdfToPNG(ctx context.Context, s *Set, a args) tools.Result {
	zoom := 2
	if z := a.text("zoom"); z != "" {
		f, err := strconv.ParseFloat(z, 64)
		// The plugin takes int(zoom); beyond MaxZoom a page's image outgrows any use.
		if err != nil || math.IsNaN(f) || f < 1 || f >= MaxZoom+1 {
			return failed("Invalid zoom %q: the zoom factor is a number from 1 to %d", z, MaxZoom)
		}
		zoom = int(f)
	}
	return withPDF(ctx, s, a, func(d *pdfDoc) tools.Result {
		if d.pages > s.o.MaxPDFPages {
			return failed("Error converting PDF to PNG: the PDF has %d pages; this server converts at most %d", d.pages, s.o.MaxPDFPages)
		}
		sizes, err := d.pageSizes(ctx, d.pages)
		if err != nil {
			return failed("Error converting PDF to PNG: %v", err)
		}
		for i, sz := range sizes {
			// Rotated or not, a page's image has as many pixels.
			w, h := math.Ceil(sz[0]*float64(zoom)), math.Ceil(sz[1]*float64(zoom))
			if w*h > MaxPagePixels {
				return failed("Error converting PDF to PNG: page %d is %g × %g points, an image of %.0f × %.0f pixels at zoom %d; "+
					"this server renders at most %d pixels a page", i+1, sz[0], sz[1], w, h, zoom, MaxPagePixels)
			}
		}
		images, err := d.render(ctx, zoom*72)
		if err != nil {
			return failed("Error converting PDF to PNG: %v", err)
		}
		for i, img := range images {
			// poppler answers a bitmap it could not allocate with a smaller image, not a failure.
			if !renderedWhole(img, sizes[i], zoom) {
				return failed("Error converting PDF to PNG: page %d could not be rendered whole within the memory this server allows", i+1)
			}
		}
		res := tools.Result{Text: fmt.Sprintf("Successfully converted %d pages to PNG images.", d.pages)}
		for i, img := range images {
			res.Files = append(res.Files, tools.File{Name: fmt.Sprintf("%s_page%d.png", d.base, i+1), MIMEType: "image/png", Data: img})
		}
		return res
	})
}

// renderedWhole says whether img is a PNG image of a page of size points at zoom, upright or
// rotated, to within the pixels rounding makes.
func renderedWhole(img []byte, size [2]float64, zoom int) bool {
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		return false
	}
	near := func(px int, pt float64) bool { return math.Abs(float64(px)-pt*float64(zoom)) <= 2 }
	return near(cfg.Width, size[0]) && near(cfg.Height, size[1]) || near(cfg.Width, size[1]) && near(cfg.Height, size[0])
}

// pdfPageCount is pdf_page_counter: the count as text, and as JSON an object of page1…pageN
// (numbers padded to the same width) to each page's number.
func pdfPageCount(ctx context.Context, s *Set, a args) tools.Result {
	return withPDF(ctx, s, a, func(d *pdfDoc) tools.Result {
		width := len(strconv.Itoa(d.pages))
		var b strings.Builder
		b.WriteByte('{')
		for i := 1; i <= d.pages; i++ {
			if i > 1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"page%0*d":%d`, width, i, i)
		}
		b.WriteByte('}')
		return tools.Result{Text: strconv.Itoa(d.pages), JSON: json.RawMessage(b.String())}
	})
}

// pdfSinglePage is pdf_single_page_extractor: one page as a PDF, <name>_page<n>.pdf.
func pdfSinglePage(ctx context.Context, s *Set, a args) tools.Result {
	given := a.text("page_number")
	if given == "" {
		return failed("Missing required parameter: page_number")
	}
	n, err := pageNumber(given)
	if err != nil {
		return failed("Invalid page number format: %s. Must be an integer.", given)
	}
	if n < 1 {
		return failed("Page number must be at least 1. You entered: %d", n)
	}
	return withPDF(ctx, s, a, func(d *pdfDoc) tools.Result {
		if n > d.pages {
			return failed("Invalid page number. The PDF has %d pages (1-%d). You entered: %d.", d.pages, d.pages, n)
		}
		data, err := d.extract(ctx, []int{n})
		if err != nil {
			return failed("Error extracting page from PDF: %v", err)
		}
		return tools.Result{Text: fmt.Sprintf("Successfully extracted page %d from PDF", n),
			Files: []tools.File{{Name: fmt.Sprintf("%s_page%d.pdf", d.base, n), MIMEType: "application/pdf", Data: data}}}
	})
}

// pdfMultiPages is pdf_multi_pages_extractor: the fixed pages, then the dynamic ones, in the
// order and with the repeats the page lists give, as one PDF.
func pdfMultiPages(ctx context.Context, s *Set, a args) tools.Result {
	dynamic, fixed := a.text("dynamic_pages"), a.text("fixed_pages")
	if strings.TrimSpace(dynamic) == "" {
		return failed("Missing or invalid required parameter: dynamic_pages (must be a non-empty string)")
	}
	return withPDF(ctx, s, a, func(d *pdfDoc) tools.Result {
		fixedPages, err := parsePages(fixed, d.pages, s.o.MaxPDFPages)
		if err != nil {
			return failed("Invalid page specification: %v", err)
		}
		dynamicPages, err := parsePages(dynamic, d.pages, s.o.MaxPDFPages-len(fixedPages))
		if err != nil {
			return failed("Invalid page specification: %v", err)
		}
		data, err := d.extract(ctx, append(fixedPages, dynamicPages...))
		if err != nil {
			return failed("An unexpected error occurred during PDF processing: %v", err)
		}
		desc := func(spec string) string {
			return strings.ReplaceAll(strings.ReplaceAll(spec, ",", "_"), "-", "to")
		}
		name := fmt.Sprintf("%s_pages_%s.pdf", d.base, desc(dynamic))
		text := fmt.Sprintf("Successfully extracted pages '%s' from PDF", dynamic)
		if len(fixedPages) > 0 {
			name = fmt.Sprintf("%s_fixed_%s_plus_%s.pdf", d.base, desc(fixed), desc(dynamic))
			text = fmt.Sprintf("Successfully extracted fixed pages '%s' followed by dynamic pages '%s'", fixed, dynamic)
		}
		return tools.Result{Text: text, Files: []tools.File{{Name: name, MIMEType: "application/pdf", Data: data}}}
	})
}

// pdfSplit is pdf_splitter: every page as a PDF of its own, <name>_page<n>.pdf.
func pdfSplit(ctx context.Context, s *Set, a args) tools.Result {
	return withPDF(ctx, s, a, func(d *pdfDoc) tools.Result {
		if d.pages > s.o.MaxPDFPages {
			return failed("Error splitting PDF into pages: the PDF has %d pages; this server splits at most %d", d.pages, s.o.MaxPDFPages)
		}
		pages, err := d.separate(ctx, 1, d.pages)
		if err != nil {
			return failed("Error splitting PDF into pages: %v", err)
		}
		res := tools.Result{Text: fmt.Sprintf("Successfully split PDF into %d pages.", d.pages)}
		for i, p := range pages {
			res.Files = append(res.Files, tools.File{Name: fmt.Sprintf("%s_page%d.pdf", d.base, i+1), MIMEType: "application/pdf", Data: p})
		}
		return res
	})
}

// pageNumber reads a page number as the plugin's int() does: an integer, or a number the
// model wrote with a fraction of zero ("3.0").
func pageNumber(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, fmt.Errorf("not an integer: %q", s)
	}
	return int(f), nil
}

// parsePages reads a page list as the plugin does — "1-3,5,1-2": pages and ranges, in order,
// repeats kept, a range's missing start 1 and missing end the last page — into page numbers
// within 1..total; at most limit of them. An empty list is no pages.
func parsePages(spec string, total, limit int) ([]int, error) {
	spec = strings.ReplaceAll(spec, " ", "")
	if spec == "" {
		return nil, nil
	}
	var out []int
	add := func(from, to int) error {
		if len(out)+to-from+1 > limit {
			return fmt.Errorf("'%s' names more than %d pages, the most one call extracts", spec, limit)
		}
		for p := from; p <= to; p++ {
			out = append(out, p)
		}
		return nil
	}
	for part := range strings.SplitSeq(spec, ",") {
		if part == "" {
			continue
		}
		if from, to, isRange := strings.Cut(part, "-"); isRange {
			start, end := 1, total
			var err error
			if from != "" {
				start, err = strconv.Atoi(from)
			}
			if err == nil && to != "" {
				end, err = strconv.Atoi(to)
			}
			switch {
			case err != nil:
				return nil, fmt.Errorf("Invalid page number in range: '%s'. Pages must be integers.", part)
			case start < 1 || end < 1:
				return nil, fmt.Errorf("Page numbers must be positive: '%s'.", part)
			case start > end:
				return nil, fmt.Errorf("Start page cannot be greater than end page in range: '%s'.", part)
			case end > total:
				return nil, fmt.Errorf("Page number out of range in '%s'. PDF has %d pages (1 to %d).", part, total, total)
			}
			if err := add(start, end); err != nil {
				return nil, err
			}
			continue
		}
		n, err := strconv.Atoi(part)
		switch {
		case err != nil:
			return nil, fmt.Errorf("Invalid page number: '%s'. Pages must be integers.", part)
		case n < 1:
			return nil, fmt.Errorf("Page number must be positive: '%s'.", part)
		case n > total:
			return nil, fmt.Errorf("Page number %d out of range. PDF has %d pages (1 to %d).", n, total, total)
		}
		if err := add(n, n); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("No valid page numbers found in specification: '%s'.", spec)
	}
	return out, nil
}

// extract is the pages, in order and with repeats, as one PDF: the pages between the first and
// the last named are separated, then the named ones united.
func (d *pdfDoc) extract(ctx context.Context, pages []int) ([]byte, error) {
	first, last := slices.Min(pages), slices.Max(pages)
	if last-first+1 > d.s.o.MaxPDFPages {
		return nil, fmt.Errorf("the pages span %d pages; this server reads at most %d of a PDF at once", last-first+1, d.s.o.MaxPDFPages)
	}
	if err := d.run(ctx, "pdfseparate", "-f", strconv.Itoa(first), "-l", strconv.Itoa(last), "in.pdf", "page-%d.pdf"); err != nil {
		return nil, err
	}
	if len(pages) == 1 {
		return d.read([]string{pageFile(pages[0])})
	}
	args := make([]string, 0, len(pages)+1)
	for _, p := range pages {
		args = append(args, pageFile(p))
	}
	if err := d.run(ctx, "pdfunite", append(args, "out.pdf")...); err != nil {
		return nil, err
	}
	return d.read([]string{"out.pdf"})
}

// separate is the pages from first to last, each as a PDF of its own.
func (d *pdfDoc) separate(ctx context.Context, first, last int) ([][]byte, error) {
	if err := d.run(ctx, "pdfseparate", "-f", strconv.Itoa(first), "-l", strconv.Itoa(last), "in.pdf", "page-%d.pdf"); err != nil {
		return nil, err
	}
	names := make([]string, 0, last-first+1)
	for p := first; p <= last; p++ {
		names = append(names, pageFile(p))
	}
	return d.readAll(names)
}

// render is every page as a PNG image at dpi dots per inch.
func (d *pdfDoc) render(ctx context.Context, dpi int) ([][]byte, error) {
	if err := d.run(ctx, "pdftoppm", "-png", "-r", strconv.Itoa(dpi), "-f", "1", "-l", strconv.Itoa(d.pages), "in.pdf", "image"); err != nil {
		return nil, err
	}
	// pdftoppm pads the page numbers of its files to the width of the last one's.
	width := len(strconv.Itoa(d.pages))
	names := make([]string, 0, d.pages)
	for p := 1; p <= d.pages; p++ {
		names = append(names, fmt.Sprintf("image-%0*d.png", width, p))
	}
	return d.readAll(names)
}

// pageFile is the name pdfseparate gives page p.
func pageFile(p int) string { return "page-" + strconv.Itoa(p) + ".pdf" }

// read is the one file name of the work directory.
func (d *pdfDoc) read(names []string) ([]byte, error) {
	all, err := d.readAll(names)
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// readAll reads files of the work directory, within MaxDecodedBytes together.
func (d *pdfDoc) readAll(names []string) ([][]byte, error) {
	total := int64(0)
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(d.dir, n))
		if err != nil {
			return nil, fmt.Errorf("poppler made no %s", n)
		}
		total += fi.Size()
	}
	if total > int64(d.s.o.MaxDecodedBytes) {
		return nil, fmt.Errorf("the files would be %d bytes; this server returns at most %d from one call", total, d.s.o.MaxDecodedBytes)
	}
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(d.dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
