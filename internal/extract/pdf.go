package extract

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/ledongthuc/pdf"
)

// extractPDF mirrors Dify's PdfExtractor (indexing.md §1): one part per page,
// in page order, with Pages carrying the 1-based page numbers. Text is
// joined with "\n\n" between pages. Blank pages are kept in Pages but not in
// Parts. Embedded images are not extracted.
func extractPDF(ctx context.Context, data []byte) (Document, error) {
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Document{}, classifyPDF(err, data)
	}
	n := r.NumPage()
	if n < 0 {
		return Document{}, newError(KindCorrupt, nil, "PDF file is corrupt: invalid page count")
	}
	// The page tree is walked per page; a count far beyond what the bytes can
	// hold is a damaged or hostile file.
	if n > len(data)/16+1 {
		return Document{}, newError(KindCorrupt, nil, "PDF file is corrupt: page count %d does not match the file", n)
	}
	var (
		doc   Document
		limit textLimit
	)
	for i := 1; i <= n && !limit.full(); i++ {
		if err := ctx.Err(); err != nil {
			return Document{}, err
		}
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		// Fonts are per-page resources (the same name can mean different
		// fonts on different pages), so no cross-page font cache.
		text, err := p.GetPlainText(nil)
		if err != nil {
			return Document{}, newError(KindCorrupt, err, "PDF file is corrupt: page %d could not be read", i)
		}
		text = strings.TrimSpace(text)
		doc.Pages = append(doc.Pages, Page{Number: i, Text: text})
		if text != "" {
			doc.Parts = append(doc.Parts, text)
			limit.add(text)
		}
	}
	doc.Text = strings.Join(doc.Parts, "\n\n")
	return doc, nil
}

func classifyPDF(err error, data []byte) error {
	msg := err.Error()
	switch {
	case errors.Is(err, pdf.ErrInvalidPassword), strings.Contains(msg, "encrypt"):
		return newError(KindEncrypted, err, "PDF file is password protected")
	case bytes.Contains(data, []byte("/Encrypt")) && !strings.HasPrefix(msg, "not a PDF"):
		return newError(KindEncrypted, err, "PDF file is encrypted and could not be read")
	case strings.HasPrefix(msg, "not a PDF file: invalid header"):
		if bytes.HasPrefix(data, []byte("%PDF-2")) {
			return newError(KindUnsupported, err, "PDF 2.0 files are not supported")
		}
		return newError(KindCorrupt, err, "file is not a valid PDF")
	}
	return newError(KindCorrupt, err, "PDF file is corrupt or truncated")
}
