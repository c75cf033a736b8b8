package mdexport_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
	"golang.org/x/net/html"

	"github.com/parleyhq/parley/internal/tools"
)

// unzip reads a ZIP file's entries.
func unzip(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = b
	}
	return out
}

// element is a parsed XML element: its name (local), attributes (local names), children and
// text.
type element struct {
	name     string
	attrs    map[string]string
	children []*element
	text     strings.Builder
}

// parseXML parses data strictly (a malformed part fails the test) into elements.
func parseXML(t *testing.T, name string, data []byte) *element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := &element{name: "#document"}
	stack := []*element{root}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
		top := stack[len(stack)-1]
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			top.children = append(top.children, e)
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.text.Write(tok)
		}
	}
	if len(stack) != 1 || len(root.children) != 1 {
		t.Fatalf("%s: %d roots", name, len(root.children))
	}
	return root.children[0]
}

// all is every element named name under e, in document order.
func (e *element) all(name string) []*element {
	var out []*element
	for _, c := range e.children {
		if c.name == name {
			out = append(out, c)
		}
		out = append(out, c.all(name)...)
	}
	return out
}

// textOf is the text of e and its descendants.
func (e *element) textOf() string {
	var b strings.Builder
	b.WriteString(e.text.String())
	for _, c := range e.children {
		b.WriteString(c.textOf())
	}
	return b.String()
}

// TestXLSX: a worksheet per table named after the heading before it, the header row and the
// cells as text (force_text_value, the default) or numbers.
func TestXLSX(t *testing.T) {
	t.Parallel()
	md := sample + "\n## Costs\n\n| Item | Cost |\n|---|---|\n| Rent | 1,000.5 |\n| Misc | n/a |\n"
	f := only(t, convert(t, "md_to_xlsx", md, nil))
	if f.Name != "output.xlsx" || f.MIMEType != "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	x, err := excelize.OpenReader(bytes.NewReader(f.Data))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if got := x.GetSheetList(); !reflect.DeepEqual(got, []string{"Highlights", "Costs"}) {
		t.Fatalf("sheets %q", got)
	}
	rows, err := x.GetRows("Highlights")
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"Region", "Revenue", "Note"}, {"North", "1200", "good"}, {"South", "950.50", "fair"}}; !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %q", rows)
	}
	if typ, _ := x.GetCellType("Costs", "B2"); typ != excelize.CellTypeSharedString && typ != excelize.CellTypeInlineString {
		t.Errorf("text cell type %v", typ)
	}

	numbers := call(t, "md_to_xlsx", map[string]any{"force_text_value": "false"}, map[string]any{"md_text": md})
	x2, err := excelize.OpenReader(bytes.NewReader(only(t, numbers.Files).Data))
	if err != nil {
		t.Fatal(err)
	}
	defer x2.Close()
	for cell, want := range map[string]string{"B2": "1000.5", "B3": "n/a"} {
		v, _ := x2.GetCellValue("Costs", cell, excelize.Options{RawCellValue: true})
		if v != want {
			t.Errorf("%s = %q, want %q", cell, v, want)
		}
	}
	if typ, _ := x2.GetCellType("Costs", "B2"); typ != excelize.CellTypeNumber && typ != excelize.CellTypeUnset {
		t.Errorf("number cell type %v", typ)
	}
	res := call(t, "md_to_xlsx", nil, map[string]any{"md_text": "# No tables\n\nJust text."})
	if !res.IsError || !strings.Contains(res.Text, "no Markdown table") {
		t.Errorf("no tables: %s", describe(res))
	}
}

// TestCSV: a CSV file per table, as pandas writes them; several files numbered.
func TestCSV(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_csv", sample, nil))
	if f.Name != "output.csv" || f.MIMEType != "text/csv" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	recs, err := csv.NewReader(bytes.NewReader(f.Data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"Region", "Revenue", "Note"}, {"North", "1200", "good"}, {"South", "950.50", "fair"}}; !reflect.DeepEqual(recs, want) {
		t.Errorf("records %q", recs)
	}
	files := convert(t, "md_to_csv", "| a | a |  |\n|---|---|---|\n| 1, 2 | \"q\" | x |\n\ntext\n\n| b |\n|---|\n| 3 |\n", map[string]any{"output_filename": "data.csv"})
	if len(files) != 2 || files[0].Name != "data_1.csv" || files[1].Name != "data_2.csv" {
		t.Fatalf("files %s", describe(tools.Result{Files: files}))
	}
	recs, err = csv.NewReader(bytes.NewReader(files[0].Data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Column names as pandas makes them: a repeated name numbered, an empty one "Unnamed: i".
	if want := [][]string{{"a", "a.1", "Unnamed: 2"}, {"1, 2", `"q"`, "x"}}; !reflect.DeepEqual(recs, want) {
		t.Errorf("records %q", recs)
	}
}

// TestJSON: rows as objects keyed by column in column order, one per line or in an array.
func TestJSON(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_json", sample, nil))
	if f.Name != "output.json" || f.MIMEType != "application/json" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	lines := strings.Split(strings.TrimSpace(string(f.Data)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"Region":"North","Revenue":"1200","Note":"good"}`) {
		t.Fatalf("jsonl %q", f.Data)
	}
	for _, l := range lines {
		var row map[string]string
		if err := json.Unmarshal([]byte(l), &row); err != nil || len(row) != 3 {
			t.Errorf("line %q: %v", l, err)
		}
	}
	f = only(t, convert(t, "md_to_json", sample+"\n| k |\n|---|\n| <é & \"x\"> |\n", map[string]any{"output_style": "json_array"})[1:])
	var rows []map[string]string
	if err := json.Unmarshal(f.Data, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["k"] != `<é & "x">` || !strings.Contains(string(f.Data), "<é &") {
		t.Errorf("array %s", f.Data)
	}
}

// TestLaTeX: a document per table, a booktabs tabular aligned as the Markdown, text escaped.
func TestLaTeX(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_latex", sample+"\n| x_y | 50% |\n|---|---|\n| a & b | {c} |\n", nil)[:1])
	if f.Name != "output_1.tex" || f.MIMEType != "application/x-tex" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	tex := string(f.Data)
	for _, want := range []string{"\\documentclass[]{article}", "\\usepackage{booktabs}", "\\begin{tabular}{lrc}", "\\toprule",
		"Region & Revenue & Note \\\\", "\\midrule", "North & 1200 & good \\\\", "\\bottomrule", "\\end{document}"} {
		if !strings.Contains(tex, want) {
			t.Errorf("lacks %q:\n%s", want, tex)
		}
	}
	second := convert(t, "md_to_latex", "| x_y | 50% |\n|---|---|\n| a & b | {c} |\n", nil)
	if tex := string(only(t, second).Data); !strings.Contains(tex, "x\\_y & 50\\% \\\\") || !strings.Contains(tex, "a \\& b & \\{c\\} \\\\") {
		t.Errorf("escapes:\n%s", tex)
	}
}

// TestHTML: a page that an HTML parser reads as the document: title, headings, emphasis, the
// link, the lists, the code and the table.
func TestHTML(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_html", sample+"\n[bad](javascript:alert(1)) [worse](&#106;avascript:alert(1)) <script>x()</script>\n", nil))
	if f.Name != "output.html" || f.MIMEType != "text/html" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	root, err := html.Parse(bytes.NewReader(f.Data))
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string][]string{}
	var hrefs []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			texts[n.Data] = append(texts[n.Data], nodeText(n))
			for _, a := range n.Attr {
				if n.Data == "a" && a.Key == "href" {
					hrefs = append(hrefs, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	for tag, want := range map[string][]string{
		"title": {"Quarterly Report"}, "h1": {"Quarterly Report"}, "h2": {"Highlights"}, "strong": {"strongly", "fair"},
		"em": {"spring"}, "th": {"Region", "Revenue", "Note"}, "td": {"North", "1200", "good", "South", "950.50", "fair"},
		"pre": {`print("hello")`}, "script": nil,
	} {
		if !reflect.DeepEqual(texts[tag], want) {
			t.Errorf("<%s> %q, want %q", tag, texts[tag], want)
		}
	}
	if len(texts["li"]) != 5 || len(texts["ol"]) != 1 || len(texts["ul"]) != 2 {
		t.Errorf("lists: li %q", texts["li"])
	}
	if !reflect.DeepEqual(hrefs, []string{"https://example.com/dash?a=1&b=2"}) {
		t.Errorf("links %q", hrefs)
	}
	// md_to_html_text answers with the HTML itself.
	res := call(t, "md_to_html_text", nil, map[string]any{"md_text": sample})
	if res.IsError || len(res.Files) != 0 || !strings.HasPrefix(res.Text, `<h1 id="quarterly-report">Quarterly Report</h1>`) {
		t.Errorf("html text: %.200s", res.Text)
	}
}

// nodeText is the text of an HTML node.
func nodeText(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(nodeText(c))
	}
	return strings.TrimSpace(b.String())
}

// TestXML: a well-formed XML document, the HTML elements of the text in a <div>.
func TestXML(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_xml", sample, nil))
	if f.Name != "output.xml" || f.MIMEType != "text/xml" || !strings.HasPrefix(string(f.Data), `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("file %s %s %.40s", f.Name, f.MIMEType, f.Data)
	}
	root := parseXML(t, f.Name, f.Data)
	if root.name != "div" {
		t.Fatalf("root %s", root.name)
	}
	var names []string
	for _, c := range root.children {
		names = append(names, c.name)
	}
	if want := []string{"h1", "p", "h2", "ul", "ol", "pre", "table"}; !reflect.DeepEqual(names, want) {
		t.Errorf("blocks %q", names)
	}
	a := root.all("a")
	if len(a) != 1 || a[0].attrs["href"] != "https://example.com/dash?a=1&b=2" || a[0].textOf() != "the dashboard" {
		t.Errorf("link %+v", a)
	}
	if got := root.all("td")[4].textOf(); got != "950.50" {
		t.Errorf("cell %q", got)
	}
}

// TestMarkdownFile: md_to_md's file is the text as prepared: without the fence around it and
// the model's thoughts.
func TestMarkdownFile(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_md", "<think>plan</think>\n```markdown\n"+sample+"```", map[string]any{"output_filename": "notes.md"}))
	if f.Name != "notes.md" || f.MIMEType != "text/markdown" || string(f.Data) != sample {
		t.Errorf("file %s %s %q", f.Name, f.MIMEType, f.Data)
	}
}

// TestIPYNB: a notebook whose code cell is the code block and whose Markdown cells are the text
// around it.
func TestIPYNB(t *testing.T) {
	t.Parallel()
	f := only(t, convert(t, "md_to_ipynb", sample, nil))
	if f.Name != "output.ipynb" || f.MIMEType != "application/x-ipynb+json" {
		t.Errorf("file %s %s", f.Name, f.MIMEType)
	}
	var nb struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			Type           string          `json:"cell_type"`
			ID             string          `json:"id"`
			Source         []string        `json:"source"`
			ExecutionCount json.RawMessage `json:"execution_count"`
			Outputs        []any           `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(f.Data, &nb); err != nil {
		t.Fatal(err)
	}
	if nb.NBFormat != 4 || len(nb.Cells) != 3 {
		t.Fatalf("notebook %s", f.Data)
	}
	kinds := []string{nb.Cells[0].Type, nb.Cells[1].Type, nb.Cells[2].Type}
	if !reflect.DeepEqual(kinds, []string{"markdown", "code", "markdown"}) {
		t.Errorf("cells %q", kinds)
	}
	if src := strings.Join(nb.Cells[1].Source, ""); src != `print("hello")` || string(nb.Cells[1].ExecutionCount) != "null" || nb.Cells[1].Outputs == nil {
		t.Errorf("code cell %+v", nb.Cells[1])
	}
	if src := strings.Join(nb.Cells[0].Source, ""); !strings.HasPrefix(src, "# Quarterly Report\n") || !strings.HasSuffix(src, "2. Step two") {
		t.Errorf("markdown cell %q", src)
	}
}

// TestCodeBlocks: a file per fenced code block, named after its language, or one ZIP file.
func TestCodeBlocks(t *testing.T) {
	t.Parallel()
	md := sample + "\n~~~bash\n  echo hi\n~~~\n\n    indented code is not a block to extract\n"
	files := convert(t, "md_to_codeblock", md, nil)
	if len(files) != 2 || files[0].Name != "code_1.py" || files[0].MIMEType != "text/x-python" || string(files[0].Data) != `print("hello")` ||
		files[1].Name != "code_2.sh" || files[1].MIMEType != "application/x-sh" || string(files[1].Data) != "echo hi" {
		t.Fatalf("files %s", describe(tools.Result{Files: files}))
	}
	res := call(t, "md_to_codeblock", map[string]any{"is_compress": "true"}, map[string]any{"md_text": md, "output_filename": "scripts"})
	f := only(t, res.Files)
	if f.Name != "scripts.zip" || f.MIMEType != "application/zip" {
		t.Fatalf("zip %s %s", f.Name, f.MIMEType)
	}
	entries := unzip(t, f.Data)
	if string(entries["code_1.py"]) != `print("hello")` || string(entries["code_2.sh"]) != "echo hi" || len(entries) != 2 {
		t.Errorf("entries %q", entries)
	}
	res = call(t, "md_to_codeblock", nil, map[string]any{"md_text": "no code"})
	if !res.IsError || !strings.Contains(res.Text, "no code blocks found") {
		t.Errorf("no code: %s", describe(res))
	}
}
