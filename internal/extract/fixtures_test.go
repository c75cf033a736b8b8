package extract

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/extract/extracttest"
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
	return extracttest.PDF(objs, trailerExtra)
}

// buildXrefStreamPDF writes objs as objects 1..n of a PDF 1.5 file indexed by
// a cross-reference stream (object n+1, uncompressed, W [1 4 2]). Objects
// listed in compressed are declared to be stored in an object stream instead:
// compressed[id] = {stream object number, index in that stream}.
func buildXrefStreamPDF(objs []string, compressed map[int][2]int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	offsets := make([]int, len(objs)+2)
	for i, o := range objs {
		offsets[i+1] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	self := len(objs) + 1
	offsets[self] = b.Len()
	var rows bytes.Buffer
	row := func(typ, f2, f3 int) {
		rows.Write([]byte{byte(typ), byte(f2 >> 24), byte(f2 >> 16), byte(f2 >> 8), byte(f2), byte(f3 >> 8), byte(f3)})
	}
	row(0, 0, 65535)
	for id := 1; id <= self; id++ {
		if c, ok := compressed[id]; ok {
			row(2, c[0], c[1])
		} else {
			row(1, offsets[id], 0)
		}
	}
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n", self, self+1, rows.Len())
	b.Write(rows.Bytes())
	fmt.Fprintf(&b, "\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", offsets[self])
	return b.Bytes()
}

// objectStreamData returns the data of an object stream holding the given
// objects, in order, and the offset of the first object (its /First).
func objectStreamData(ids []int, bodies []string) (first int, data string) {
	var index, objs strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&index, "%d %d ", id, objs.Len())
		objs.WriteString(bodies[i])
		objs.WriteString("\n")
	}
	return index.Len(), index.String() + objs.String()
}

// zlibBytes compresses s.
func zlibBytes(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// zlibRepeat returns zlib data that inflates to unit repeated to about n
// bytes. One sync-flushed deflate segment (which refers to nothing before
// itself) is repeated, so ~1 GB of output costs ~1 MB of compression work.
// Unless complete, the data stops before the end of the deflate stream (and
// its checksum is not computed): reading it to the end fails.
func zlibRepeat(t *testing.T, unit string, n int64, complete bool) []byte {
	t.Helper()
	block := []byte(strings.Repeat(unit, max(1, (1<<20)/len(unit))))
	var seg bytes.Buffer
	fw, err := flate.NewWriter(&seg, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(block); err != nil {
		t.Fatal(err)
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	reps := max(1, n/int64(len(block)))
	out := bytes.NewBuffer([]byte{0x78, 0xda})
	for range reps {
		out.Write(seg.Bytes())
	}
	if !complete {
		return out.Bytes()
	}
	sum := adler32.New()
	for range reps {
		sum.Write(block)
	}
	out.Write([]byte{0x03, 0x00}) // an empty final block
	return binary.BigEndian.AppendUint32(out.Bytes(), sum.Sum32())
}

// pdfWithStreams builds a PDF with one page per content stream (raw zlib
// data), all using font /F1; fontExtra is added to the font dictionary and
// extraObjs are appended as objects 4+2n onwards.
func pdfWithStreams(contents [][]byte, fontExtra string, extraObjs ...string) []byte {
	kids := make([]string, len(contents))
	for i := range contents {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(contents)),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica " + fontExtra + ">>",
	}
	for i, c := range contents {
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", len(c), c),
		)
	}
	return extracttest.PDF(append(objs, extraObjs...), "")
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

// buildXLSXSharedString returns a workbook whose single shared string is
// strLen bytes long, with a header row and a data row of cells cells, every
// cell referring to that string.
func buildXLSXSharedString(t *testing.T, strLen, cells int) []byte {
	t.Helper()
	row := func(r int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `<row r="%d">`, r)
		for i := range cells {
			col := ""
			for n := i + 1; n > 0; n = (n - 1) / 26 {
				col = string(rune('A'+(n-1)%26)) + col
			}
			fmt.Fprintf(&b, `<c r="%s%d" t="s"><v>0</v></c>`, col, r)
		}
		return b.String() + "</row>"
	}
	const main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
	const rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
	return buildZip(t, []zipFile{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="` + rel + `/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="` + main + `" xmlns:r="` + rel + `"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="` + rel + `/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="` + rel + `/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		{"xl/sharedStrings.xml", `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="` + main + `" count="1" uniqueCount="1"><si><t>` + strings.Repeat("a", strLen) + `</t></si></sst>`},
		{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="` + main + `"><sheetData>` + row(1) + row(2) + `</sheetData></worksheet>`},
	})
}
