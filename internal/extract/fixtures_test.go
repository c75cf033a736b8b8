package extract

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"strings"
	"testing"
)

// buildPDF writes a minimal PDF 1.4 file with one Helvetica text line per
// page, computing the cross-reference offsets. trailerExtra is appended inside
// the trailer dictionary (used to mark a file encrypted).
func buildPDF(t *testing.T, pages []string, trailerExtra string) []byte {
	t.Helper()
	var objs []string
	// 1: catalog, 2: pages, 3: font, then page/content pairs.
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs = append(objs,
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	)
	for i, text := range pages {
		var content strings.Builder
		for j, line := range strings.Split(text, "\n") {
			fmt.Fprintf(&content, "BT /F1 12 Tf 72 %d Td (%s) Tj ET\n", 720-14*j, line)
		}
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", content.Len(), content.String()),
		)
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailerExtra, xref)
	return b.Bytes()
}

const encryptTrailer = "/Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -4 " +
	"/O <0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20> " +
	"/U <2102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20> >> " +
	"/ID [<00112233445566778899aabbccddeeff> <00112233445566778899aabbccddeeff>] "

// zipFile is one entry of a test archive.
type zipFile struct {
	name string
	body string
}

func buildZip(t *testing.T, files []zipFile) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rawDeflateEntry adds an entry whose declared uncompressed size is
// declared, while the deflated stream really expands to actual zero bytes:
// a zip bomb that lies about its size when declared < actual.
func rawDeflateEntry(t *testing.T, zw *zip.Writer, name string, declared uint64, actual int) {
	t.Helper()
	var comp bytes.Buffer
	fw, err := flate.NewWriter(&comp, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for left := actual; left > 0; left -= len(zeros) {
		if _, err := fw.Write(zeros[:min(left, len(zeros))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := zw.CreateRaw(&zip.FileHeader{
		Name:               name,
		Method:             zip.Deflate,
		CompressedSize64:   uint64(comp.Len()),
		UncompressedSize64: declared,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(comp.Bytes()); err != nil {
		t.Fatal(err)
	}
}

const docxContentTypes = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`

const docxRootRels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`

const docxDocRels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId5" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/dify" TargetMode="External"/></Relationships>`

// docxBody wraps WordprocessingML body content in a document part.
func docxBody(body string) string {
	return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"><w:body>` +
		body + `<w:sectPr/></w:body></w:document>`
}

func buildDOCX(t *testing.T, body string) []byte {
	t.Helper()
	return buildZip(t, []zipFile{
		{"[Content_Types].xml", docxContentTypes},
		{"_rels/.rels", docxRootRels},
		{"word/_rels/document.xml.rels", docxDocRels},
		{"word/document.xml", docxBody(body)},
	})
}

func para(text string) string {
	return `<w:p><w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

func cell(text string) string {
	return `<w:tc><w:tcPr/>` + para(text) + `</w:tc>`
}

// cfbWith returns a fake compound file: the OLE magic followed by a
// directory-like UTF-16LE stream name.
func cfbWith(stream string) []byte {
	b := append([]byte{}, cfbMagic...)
	b = append(b, make([]byte, 504)...)
	return append(b, utf16Name(stream)...)
}
