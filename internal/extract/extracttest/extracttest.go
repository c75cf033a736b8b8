// Package extracttest builds hostile documents for the tests of what runs extraction (the
// extraction sandbox, the indexer, the conformance suite), so that their budgets are proven
// against real files rather than against stand-in extractors.
package extracttest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// SlowPDF is a small, valid PDF whose text extraction takes far longer than any budget: minutes
// of CPU for a few hundred kilobytes.
//
// Its font's ToUnicode map lists entries codes of its own text never match, so decoding each
// byte of text scans the whole map (the PDF library's CMap lookup is a linear search), and the
// page shows a few hundred thousand such bytes. Every structure stays within the extractor's
// caps: this is the amplification that only a CPU or wall-clock budget stops.
func SlowPDF() []byte {
	var cmap strings.Builder
	cmap.WriteString("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n")
	cmap.WriteString("1 begincodespacerange <00> <FF> endcodespacerange\n")
	const entries = 150000
	fmt.Fprintf(&cmap, "%d beginbfchar\n", entries)
	for range entries {
		cmap.WriteString("<FE> <0041>\n")
	}
	cmap.WriteString("endbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end\n")

	var content strings.Builder
	for range 3 {
		content.WriteString("BT /F1 12 Tf 72 700 Td (")
		content.WriteString(strings.Repeat("a", 100000))
		content.WriteString(") Tj ET\n")
	}
	return PDF([]string{
		"<</Type/Catalog/Pages 2 0 R>>",
		"<</Type/Pages/Kids[3 0 R]/Count 1>>",
		"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Resources<</Font<</F1 4 0 R>>>>/Contents 5 0 R>>",
		"<</Type/Font/Subtype/Type0/BaseFont/Slow/Encoding/Identity-H/ToUnicode 6 0 R>>",
		stream(content.String()),
		stream(cmap.String()),
	}, "")
}

// stream is a Flate-compressed stream object holding data.
func stream(data string) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write([]byte(data))
	w.Close()
	return fmt.Sprintf("<</Length %d/Filter/FlateDecode>>stream\n%s\nendstream", z.Len(), z.Bytes())
}

// PDF writes objs as objects 1..n of a PDF 1.4 file with a classic cross-reference table;
// object 1 is the catalog. trailerExtra is added inside the trailer dictionary.
func PDF(objs []string, trailerExtra string) []byte {
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
