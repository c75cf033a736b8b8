package mdexport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/mdexport"
)

// TestPDF: a PDF file whose text Parley's own PDF reader reads back, set in the fonts found on
// this machine and in the Go fonts Parley carries.
func TestPDF(t *testing.T) {
	t.Parallel()
	md := sample + "\nGreek Ελληνικά, Cyrillic Кириллица.\n"
	for _, fonts := range []*mdexport.Fonts{mdexport.FindFonts(""), mdexport.GoFonts()} {
		set := mdexport.New(mdexport.Options{Fonts: fonts})
		f := only(t, invokeSet(t, set, "md_to_pdf", map[string]any{"md_text": md, "output_filename": "report.PDF"}).Files)
		if f.Name != "report.pdf" || f.MIMEType != "application/pdf" || !bytes.HasPrefix(f.Data, []byte("%PDF-")) {
			t.Fatalf("%s: file %s %s %.8q", fonts.Name, f.Name, f.MIMEType, f.Data)
		}
		doc, err := extract.Extract(context.Background(), f.Name, bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			t.Fatalf("%s: %v", fonts.Name, err)
		}
		text := strings.Join(strings.Fields(doc.Text), " ")
		for _, want := range []string{"Quarterly Report", "Sales grew strongly in spring, see the dashboard.", "Highlights",
			"First point", "inline code", "Nested point", "1. Step one", `print("hello")`, "Region", "Revenue", "North", "1200",
			"950.50", "fair", "Ελληνικά", "Кириллица"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the PDF's text lacks %q:\n%s", fonts.Name, want, text)
			}
		}
	}
}

// TestPDFWideText: Chinese text is set in the fallback font when there is one, lines breaking
// between its characters; without one, the characters are replaced, never dropped silently
// into a broken file.
func TestPDFWideText(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("季度报告显示销售增长。", 30)
	fonts := mdexport.FindFonts("")
	f := only(t, invokeSet(t, mdexport.New(mdexport.Options{Fonts: fonts}), "md_to_pdf", map[string]any{"md_text": "# 报告\n\n" + line}).Files)
	doc, err := extract.Extract(context.Background(), f.Name, bytes.NewReader(f.Data), int64(len(f.Data)))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(doc.Text), "")
	if fonts.Fallback == nil {
		t.Logf("no fallback font (Debian's fonts-droid-fallback): Chinese text is replaced")
		if !strings.Contains(text, "??") {
			t.Errorf("text %q", text)
		}
		return
	}
	if !strings.Contains(text, "报告") || !strings.Contains(text, line) {
		t.Errorf("text %q", text)
	}
}

// invokeSet invokes the tool name of set with args.
func invokeSet(t *testing.T, set *mdexport.Set, name string, args map[string]any) tools.Result {
	t.Helper()
	tl, err := set.Find(context.Background(), tools.Ref{ProviderID: "md_exporter", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	r, err := tl.Invoke(context.Background(), raw)
	if err != nil || r.IsError {
		t.Fatalf("%s: %s %v", name, describe(r), err)
	}
	return r
}
