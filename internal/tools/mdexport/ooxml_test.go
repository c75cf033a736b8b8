package mdexport_test

import (
	"bytes"
	"context"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/extract"
)

// wellFormed parses every XML part of a package and returns them by name.
func wellFormed(t *testing.T, parts map[string][]byte) map[string]*element {
	t.Helper()
	out := map[string]*element{}
	for name, data := range parts {
		if strings.HasSuffix(name, ".xml") || strings.HasSuffix(name, ".rels") {
			out[name] = parseXML(t, name, data)
		}
	}
	return out
}

// checkPackage checks what makes an OOXML package open: every part has a content type, every
// override names a part, and every internal relationship points at a part.
func checkPackage(t *testing.T, parts map[string][]byte, xmls map[string]*element) {
	t.Helper()
	types := xmls["[Content_Types].xml"]
	if types == nil {
		t.Fatal("no [Content_Types].xml")
	}
	overridden := map[string]bool{}
	for _, o := range types.all("Override") {
		name := strings.TrimPrefix(o.attrs["PartName"], "/")
		if parts[name] == nil {
			t.Errorf("content type of a missing part %s", name)
		}
		overridden[name] = true
	}
	for name := range parts {
		if !overridden[name] && !strings.HasSuffix(name, ".rels") && !strings.HasSuffix(name, ".xml") {
			t.Errorf("part %s has no content type", name)
		}
	}
	for name, e := range xmls {
		if !strings.HasSuffix(name, ".rels") {
			continue
		}
		base := path.Dir(path.Dir(name)) // the folder of the part the relationships belong to
		for _, r := range e.all("Relationship") {
			if r.attrs["TargetMode"] == "External" {
				continue
			}
			target := path.Clean(path.Join(base, r.attrs["Target"]))
			if parts[target] == nil {
				t.Errorf("%s: relationship %s points at missing %s", name, r.attrs["Id"], target)
			}
		}
	}
}

// TestDOCX: the document's parts are well-formed and complete; headings have their styles,
// emphasis its run properties, the link a hyperlink, list items numbering, the code its style,
// the table its cells; and Parley's own DOCX reader reads the text back.
func TestDOCX(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_docx", sample, map[string]any{"output_filename": "report"}))
	if f.Name != "report.docx" || f.MIMEType != "application/vnd.openxmlformats-officedocument.wordprocessingml.document" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	parts := unzip(t, f.Data)
	xmls := wellFormed(t, parts)
	checkPackage(t, parts, xmls)
	body := xmls["word/document.xml"]
	styleOf := map[string]string{}
	numbered := map[string]bool{}
	for _, p := range body.all("p") {
		text := p.textOf()
		for _, s := range p.all("pStyle") {
			styleOf[text] = s.attrs["val"]
		}
		numbered[text] = len(p.all("numPr")) > 0
	}
	for text, style := range map[string]string{
		"Quarterly Report": "Heading1", "Highlights": "Heading2", `print("hello")`: "SourceCode",
	} {
		if styleOf[text] != style {
			t.Errorf("%q: style %q, want %q", text, styleOf[text], style)
		}
	}
	for _, item := range []string{"First point", "Second point with inline code", "Nested point", "Step one", "Step two"} {
		if !numbered[item] {
			t.Errorf("%q is not a list item", item)
		}
	}
	if !numbered["Step one"] || styleOf["Sales grew strongly in spring, see the dashboard."] != "" {
		t.Errorf("paragraph: %v", styleOf)
	}
	var bold []string
	for _, r := range body.all("r") {
		if len(r.all("b")) > 0 {
			bold = append(bold, r.textOf())
		}
	}
	if !slices.Contains(bold, "strongly") || !slices.Contains(bold, "Region") {
		t.Errorf("bold runs %q", bold)
	}
	links := body.all("hyperlink")
	if len(links) != 1 || links[0].textOf() != "the dashboard" {
		t.Fatalf("hyperlinks %d", len(links))
	}
	target := ""
	for _, r := range xmls["word/_rels/document.xml.rels"].all("Relationship") {
		if r.attrs["Id"] == links[0].attrs["id"] {
			target = r.attrs["Target"]
		}
	}
	if target != "https://example.com/dash?a=1&b=2" {
		t.Errorf("link target %q", target)
	}
	var cells []string
	for _, c := range body.all("tc") {
		cells = append(cells, c.textOf())
	}
	if want := []string{"Region", "Revenue", "Note", "North", "1200", "good", "South", "950.50", "fair"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells %q", cells)
	}
	if len(xmls["word/numbering.xml"].all("num")) != 3 {
		t.Errorf("numbering instances: %d, want one per list", len(xmls["word/numbering.xml"].all("num")))
	}
	doc, err := extract.Extract(context.Background(), f.Name, bytes.NewReader(f.Data), int64(len(f.Data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Quarterly Report", "Sales grew strongly in spring", "Nested point", `print("hello")`, "North", "950.50"} {
		if !strings.Contains(doc.Text, want) {
			t.Errorf("extracted text lacks %q:\n%s", want, doc.Text)
		}
	}
}

// TestPPTX: the presentation's parts are well-formed and complete, one slide per slide-level
// heading (the table on its own slide), titles in title placeholders, the list in the body,
// the table a DrawingML table, the link a hyperlink.
func TestPPTX(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_pptx", sample+"\n## Outlook\n\nMore to come.\n", nil))
	if f.Name != "output.pptx" || f.MIMEType != "application/vnd.openxmlformats-officedocument.presentationml.presentation" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	parts := unzip(t, f.Data)
	xmls := wellFormed(t, parts)
	checkPackage(t, parts, xmls)
	slideIDs := xmls["ppt/presentation.xml"].all("sldId")
	var slides []*element
	for i := 1; xmls["ppt/slides/slide"+strconv.Itoa(i)+".xml"] != nil; i++ {
		slides = append(slides, xmls["ppt/slides/slide"+strconv.Itoa(i)+".xml"])
	}
	if len(slides) != len(slideIDs) {
		t.Fatalf("%d slides, %d listed", len(slides), len(slideIDs))
	}
	// "# Quarterly Report" is followed by a paragraph: the slide level is 1, and the level-2
	// headings are bold lines. The table has a slide of its own, and what follows it another.
	var titles, texts []string
	tables := 0
	for _, s := range slides {
		titles = append(titles, slideTitle(s))
		texts = append(texts, s.textOf())
		tables += len(s.all("tbl"))
	}
	if want := []string{"Quarterly Report", "Quarterly Report", "Quarterly Report"}; !reflect.DeepEqual(titles, want) || tables != 1 {
		t.Fatalf("titles %q, %d tables", titles, tables)
	}
	for i, wants := range [][]string{
		{"Sales grew ", "the dashboard", "Highlights", "First point", "Nested point", "Step two", `print("hello")`},
		{"Region", "North", "950.50"},
		{"Outlook", "More to come."},
	} {
		for _, want := range wants {
			if !strings.Contains(texts[i], want) {
				t.Errorf("slide %d lacks %q: %q", i+1, want, texts[i])
			}
		}
	}
	var cells []string
	for _, c := range slides[1].all("tc") {
		cells = append(cells, c.textOf())
	}
	if want := []string{"Region", "Revenue", "Note", "North", "1200", "good", "South", "950.50", "fair"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells %q", cells)
	}
	found := false
	for name, rels := range xmls {
		if strings.HasPrefix(name, "ppt/slides/_rels/") {
			for _, r := range rels.all("Relationship") {
				found = found || r.attrs["Target"] == "https://example.com/dash?a=1&b=2"
			}
		}
	}
	if !found {
		t.Error("no hyperlink relationship")
	}

	// Level-2 slides under a level-1 section: the section's slide has its title alone.
	parts = unzip(t, only(t, convert(t, "md_to_pptx", "# Part one\n\n## A\n\nText a.\n\n## B\n\n- b\n\n---\n\nUntitled.", nil)).Data)
	xmls = wellFormed(t, parts)
	titles = nil
	for i := 1; xmls["ppt/slides/slide"+strconv.Itoa(i)+".xml"] != nil; i++ {
		titles = append(titles, slideTitle(xmls["ppt/slides/slide"+strconv.Itoa(i)+".xml"]))
	}
	if want := []string{"Part one", "A", "B", ""}; !reflect.DeepEqual(titles, want) {
		t.Errorf("titles %q", titles)
	}
}

// slideTitle is the text of a slide's title placeholder.
func slideTitle(s *element) string {
	for _, sp := range s.all("sp") {
		for _, ph := range sp.all("ph") {
			if ph.attrs["type"] == "title" {
				return sp.textOf()
			}
		}
	}
	return ""
}

// TestTemplateNote: a template file, which the plugin styles its file with, is not read; the
// model is told.
func TestTemplateNote(t *testing.T) {
	t.Parallel()
	res := call(t, "md_to_pptx", nil, map[string]any{"md_text": sample, "pptx_template_file": map[string]any{"url": "x"}})
	if res.IsError || !strings.Contains(res.Text, "pptx_template_file is not supported") {
		t.Errorf("%s", describe(res))
	}
}
