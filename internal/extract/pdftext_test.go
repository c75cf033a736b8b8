package extract

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/extract/extracttest"
)

// TestPDFLineBreaksFromProducers (issue 20): lines were joined with nothing
// between them ("Parking policyEach employee"), so a search for "policy"
// missed the document. PDFs of two real producers (testdata/pdf/make.sh) now
// keep a line break between lines, a blank line between paragraphs, a space
// for word gaps made by positioning, a hyphenated word rejoined, and each
// column's lines apart.
func TestPDFLineBreaksFromProducers(t *testing.T) {
	t.Parallel()
	for file, pages := range extracttest.PolicyPages {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "pdf", file))
			if err != nil {
				t.Fatal(err)
			}
			doc := mustExtract(t, file, data)
			if len(doc.Pages) != 2 {
				t.Fatalf("pages = %d, want 2", len(doc.Pages))
			}
			for i, want := range pages {
				if got := doc.Pages[i].Text; got != want {
					t.Errorf("page %d =\n%q\nwant\n%q", i+1, got, want)
				}
			}
			if strings.Contains(doc.Text, "policyEach") {
				t.Errorf("lines glued: %q", doc.Text)
			}
		})
	}
}

// pdfTextOf extracts the single page of content, set in a font whose glyphs
// are all half an em wide (when widths is true) or that has no widths.
func pdfTextOf(t *testing.T, content string, widths bool) string {
	t.Helper()
	font := ""
	if widths {
		font = "/FirstChar 32 /LastChar 126 /Widths [" + strings.Repeat("500 ", 95) + "] "
	}
	doc := mustExtract(t, "t.pdf", pdfWithStreams([][]byte{zlibBytes(t, content)}, font))
	return doc.Text
}

// TestPDFTextLayout covers the separators the text position gives, one
// operator or rule at a time, in a 10-point font.
func TestPDFTextLayout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content string
		widths        bool
		want          string
	}{
		{"T* with leading", "BT /F1 10 Tf 12 TL 72 700 Td (one) Tj T* (two) Tj ET", false, "one\ntwo"},
		{"quote operator", "BT /F1 10 Tf 12 TL 72 700 Td (one) Tj (two) ' ET", false, "one\ntwo"},
		{"double quote operator", `BT /F1 10 Tf 12 TL 72 700 Td (one) Tj 0 0 (two) " ET`, false, "one\ntwo"},
		{"TD sets the leading", "BT /F1 10 Tf 72 700 Td (one) Tj 0 -12 TD (two) Tj (three) ' ET", false, "one\ntwo\nthree"},
		{"paragraph gap", "BT /F1 10 Tf 72 700 Td (one) Tj 0 -12 Td (two) Tj 0 -24 Td (three) Tj ET", false, "one\ntwo\n\nthree"},
		{"text objects a line apart", "BT /F1 10 Tf 72 700 Td (one) Tj ET BT /F1 10 Tf 72 688 Td (two) Tj ET", false, "one\ntwo"},
		{"Tm with a scaled font", "BT /F1 1 Tf 10 0 0 10 72 700 Tm (one) Tj 10 0 0 10 72 688 Tm (two) Tj ET", false, "one\ntwo"},
		{"flipped page as Cairo writes it", "1 0 0 -1 0 792 cm BT /F1 1 Tf 10 0 0 -10 72 92 Tm (one) Tj 0 -1.2 Td (two) Tj ET", false, "one\ntwo"},
		{"cm saved and restored", "q 1 0 0 1 0 -12 cm BT /F1 10 Tf 72 700 Td (one) Tj ET Q BT /F1 10 Tf 72 700 Td (two) Tj ET", false, "one\n\ntwo"},
		{"column back up the page", "BT /F1 10 Tf 72 700 Td (left) Tj 0 -12 Td (end) Tj 200 12 Td (right) Tj ET", false, "left\nend\n\nright"},
		{"TJ word gap", "BT /F1 10 Tf 72 700 Td [(one)-250(two)] TJ ET", false, "one two"},
		{"TJ kerning", "BT /F1 10 Tf 72 700 Td [(W)120(ave)-80(s)] TJ ET", false, "Waves"},
		{"Td word gap with widths", "BT /F1 10 Tf 72 700 Td (one) Tj 18 0 Td (two) Tj ET", true, "one two"},
		{"Td next to the text with widths", "BT /F1 10 Tf 72 700 Td (Park) Tj 20 0 Td (ing) Tj ET", true, "Parking"},
		{"Tj after Tj with widths", "BT /F1 10 Tf 72 700 Td (Park) Tj (ing) Tj ET", true, "Parking"},
		{"space already there", "BT /F1 10 Tf 72 700 Td [(one )-300(two)] TJ 0 -12 Td (three) Tj ET", false, "one two\nthree"},
		{"right to left with widths", "BT /F1 10 Tf 100 700 Td (ab) Tj -10 0 Td (cd) Tj -13 0 Td (ef) Tj ET", true, "abcd ef"},
		{"right to left without widths", "BT /F1 10 Tf 100 700 Td (ab) Tj -10 0 Td (cd) Tj ET", false, "ab\ncd"},
		{"same origin twice with widths", "BT /F1 10 Tf 72 700 Td (one) Tj ET BT /F1 10 Tf 72 700 Td (two) Tj ET", true, "one\ntwo"},
		{"same origin twice", "BT /F1 10 Tf 72 700 Td (one) Tj ET BT /F1 10 Tf 72 700 Td (two) Tj ET", false, "one\ntwo"},
		{"hyphen rejoined", "BT /F1 10 Tf 12 TL 72 700 Td (employ-) Tj (ee) ' ET", false, "employee"},
		{"hyphen before a capital kept", "BT /F1 10 Tf 12 TL 72 700 Td (Anglo-) Tj (Saxon) ' ET", false, "Anglo-\nSaxon"},
		{"dash after a space kept", "BT /F1 10 Tf 12 TL 72 700 Td (one -) Tj (two) ' ET", false, "one -\ntwo"},
		{"hyphen after a digit kept", "BT /F1 10 Tf 12 TL 72 700 Td (1990-) Tj (ninety) ' ET", false, "1990-\nninety"},
		{"hyphen before a paragraph kept", "BT /F1 10 Tf 72 700 Td (employ-) Tj 0 -30 Td (ee) Tj ET", false, "employ-\n\nee"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := pdfTextOf(t, tt.content, tt.widths); got != tt.want {
				t.Fatalf("text = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPDFTextLayoutCompositeFont: the widths of a composite (Type0) font,
// two bytes a code, come from its descendant's /W array and /DW.
func TestPDFTextLayoutCompositeFont(t *testing.T) {
	t.Parallel()
	cmap := "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n" +
		"1 begincodespacerange <0000> <FFFF> endcodespacerange\n" +
		"1 beginbfrange <0020> <007E> <0020> endbfrange\n" +
		"endcmap CMapName currentdict /CMap defineresource pop end end\n"
	hex := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, "%04X", r)
		}
		return "<" + b.String() + ">"
	}
	// Codes 0x61-0x7A (a-z) are 500 wide as a range, P (0x50) is 900 as a
	// list, the rest take the default of 600. At 10 points "one" ends 15
	// after its start, "Park" 24.
	content := "BT /F1 10 Tf 72 700 Td " + hex("one") + " Tj 18 0 Td " + hex("two") + " Tj " +
		"0 -12 Td " + hex("Park") + " Tj 24 0 Td " + hex("ing") + " Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
		"<< /Type /Font /Subtype /Type0 /BaseFont /F /Encoding /Identity-H /DescendantFonts [6 0 R] /ToUnicode 7 0 R >>",
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /F /DW 600 /W [97 122 500 80 [900]] >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(cmap), cmap),
	}
	doc := mustExtract(t, "cid.pdf", extracttest.PDF(objs, ""))
	if want := "one two\nParking"; doc.Text != want {
		t.Fatalf("text = %q, want %q", doc.Text, want)
	}
}
