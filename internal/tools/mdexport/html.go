package mdexport

import (
	"context"
	"fmt"
	"html"
	"strconv"
	"strings"
	"unicode"

	"github.com/parleyhq/parley/internal/tools"
)

// convertHTML is md_to_html: a whole HTML page. The plugin's file is pandoc's HTML fragment
// alone; a page with its character set declared and a title reads right in any browser.
func convertHTML(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	doc, err := newDocument(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	body, err := renderHTML(ctx, doc)
	if err != nil {
		return nil, "", err
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\" />\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>\n%s</style>\n</head>\n<body>\n", html.EscapeString(doc.title()), pageCSS)
	b.WriteString(body)
	b.WriteString("</body>\n</html>\n")
	return single(in, ".html", mimeHTML, []byte(b.String()))
}

// pageCSS is the style of an HTML page: readable text, and tables with borders (the plugin adds
// the borders too).
const pageCSS = `body { font-family: sans-serif; line-height: 1.5; max-width: 50em; margin: 2em auto; padding: 0 1em; }
pre { background: #f5f5f5; padding: .75em; overflow-x: auto; }
code { font-family: monospace; }
blockquote { border-left: 4px solid #ddd; margin-left: 0; padding-left: 1em; color: #555; }
table { border-collapse: collapse; width: 100%; }
table, th, td { border: 1px solid; }
th, td { padding: .25em .5em; }
`

// convertHTMLText is md_to_html_text: the HTML of the text, as the tool's text (no file).
func convertHTMLText(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	doc, err := newDocument(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	body, err := renderHTML(ctx, doc)
	return nil, body, err
}

// convertXML is md_to_xml: the HTML of the text as an XML document, its blocks in one <div>, as
// the plugin makes it (it parses its HTML with lxml and writes it out as XML).
func convertXML(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	doc, err := newDocument(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	body, err := renderHTML(ctx, doc)
	if err != nil {
		return nil, "", err
	}
	out := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<div>\n" + body + "</div>\n"
	return single(in, ".xml", mimeXML, []byte(out))
}

// title is the text of the document's first heading, or "Document".
func (d *document) title() string {
	for _, b := range d.blocks {
		if b.kind == kindHeading {
			if t := strings.TrimSpace(plain(b.spans)); t != "" {
				return t
			}
		}
	}
	return "Document"
}

// renderHTML is the blocks of doc as HTML that is also well-formed XML: void elements closed
// (<br />), every attribute quoted, text escaped.
func renderHTML(ctx context.Context, doc *document) (string, error) {
	w := &htmlWriter{ids: map[string]int{}}
	if err := w.blocks(ctx, doc.blocks); err != nil {
		return "", err
	}
	if w.b.Len() > MaxOutputBytes {
		return "", errOutputTooLarge
	}
	return w.b.String(), nil
}

// htmlWriter writes blocks as HTML.
type htmlWriter struct {
	b strings.Builder
	// ids counts the heading ids given, to keep them unique.
	ids map[string]int
}

// blocks writes bs, checking ctx between them.
func (w *htmlWriter) blocks(ctx context.Context, bs []block) error {
	for i := range bs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.block(ctx, &bs[i]); err != nil {
			return err
		}
		if w.b.Len() > MaxOutputBytes {
			return errOutputTooLarge
		}
	}
	return nil
}

// block writes one block.
func (w *htmlWriter) block(ctx context.Context, b *block) error {
	switch b.kind {
	case kindHeading:
		fmt.Fprintf(&w.b, "<h%d id=\"%s\">", b.level, w.id(plain(b.spans)))
		w.spans(b.spans)
		fmt.Fprintf(&w.b, "</h%d>\n", b.level)
	case kindParagraph:
		w.b.WriteString("<p>")
		w.spans(b.spans)
		w.b.WriteString("</p>\n")
	case kindRule:
		w.b.WriteString("<hr />\n")
	case kindCode:
		w.b.WriteString("<pre><code")
		if b.lang != "" {
			fmt.Fprintf(&w.b, " class=\"language-%s\"", html.EscapeString(b.lang))
		}
		w.b.WriteString(">")
		w.b.WriteString(html.EscapeString(b.code))
		w.b.WriteString("</code></pre>\n")
	case kindQuote:
		w.b.WriteString("<blockquote>\n")
		if err := w.blocks(ctx, b.children); err != nil {
			return err
		}
		w.b.WriteString("</blockquote>\n")
	case kindList:
		return w.list(ctx, b)
	case kindTable:
		w.table(b.table)
	}
	return nil
}

// list writes a list; an item of one paragraph is written without <p>, as a tight list is.
func (w *htmlWriter) list(ctx context.Context, b *block) error {
	tag := "ul"
	if b.ordered {
		tag = "ol"
	}
	w.b.WriteString("<" + tag)
	if b.ordered && b.start != 1 {
		fmt.Fprintf(&w.b, " start=\"%d\"", b.start)
	}
	w.b.WriteString(">\n")
	for _, it := range b.items {
		w.b.WriteString("<li>")
		switch it.task {
		case taskOpen:
			w.b.WriteString(`<input type="checkbox" disabled="disabled" /> `)
		case taskDone:
			w.b.WriteString(`<input type="checkbox" disabled="disabled" checked="checked" /> `)
		}
		if len(it.blocks) == 1 && it.blocks[0].kind == kindParagraph {
			w.spans(it.blocks[0].spans)
		} else {
			w.b.WriteString("\n")
			if err := w.blocks(ctx, it.blocks); err != nil {
				return err
			}
		}
		w.b.WriteString("</li>\n")
	}
	w.b.WriteString("</" + tag + ">\n")
	return nil
}

// table writes a table, each column aligned as the Markdown says.
func (w *htmlWriter) table(t *table) {
	w.b.WriteString("<table>\n<thead>\n<tr>")
	for i, c := range t.header {
		w.cell("th", t.align[i], c)
	}
	w.b.WriteString("</tr>\n</thead>\n<tbody>\n")
	for _, row := range t.rows {
		w.b.WriteString("<tr>")
		for i, c := range row {
			w.cell("td", t.align[i], c)
		}
		w.b.WriteString("</tr>\n")
	}
	w.b.WriteString("</tbody>\n</table>\n")
}

// cell writes one table cell.
func (w *htmlWriter) cell(tag string, a alignment, c cell) {
	w.b.WriteString("<" + tag)
	if css := map[alignment]string{alignLeft: "left", alignCenter: "center", alignRight: "right"}[a]; css != "" {
		fmt.Fprintf(&w.b, " style=\"text-align: %s\"", css)
	}
	w.b.WriteString(">")
	w.spans(c)
	w.b.WriteString("</" + tag + ">")
}

// spans writes inline text: the spans of one link inside one <a>, each span in the elements of
// its style.
func (w *htmlWriter) spans(spans []span) {
	for i := 0; i < len(spans) && w.b.Len() <= MaxOutputBytes; {
		s := spans[i]
		if s.link == "" || s.image {
			w.span(s)
			i++
			continue
		}
		fmt.Fprintf(&w.b, "<a href=\"%s\">", html.EscapeString(s.link))
		for ; i < len(spans) && spans[i].link == s.link && !spans[i].image; i++ {
			w.span(spans[i])
		}
		w.b.WriteString("</a>")
	}
}

// span writes one span.
func (w *htmlWriter) span(s span) {
	switch {
	case s.lineBreak:
		w.b.WriteString("<br />")
		return
	case s.image && s.link != "":
		fmt.Fprintf(&w.b, "<img src=\"%s\" alt=\"%s\" />", html.EscapeString(s.link), html.EscapeString(s.text))
		return
	}
	var closers []string
	for _, e := range []struct {
		bit style
		tag string
	}{{styleBold, "strong"}, {styleItalic, "em"}, {styleStrike, "del"}, {styleCode, "code"}} {
		if s.style&e.bit != 0 {
			w.b.WriteString("<" + e.tag + ">")
			closers = append(closers, "</"+e.tag+">")
		}
	}
	w.b.WriteString(html.EscapeString(s.text))
	for i := len(closers) - 1; i >= 0; i-- {
		w.b.WriteString(closers[i])
	}
}

// id is a heading's id: its text in lower case, words joined by "-", numbered when taken.
func (w *htmlWriter) id(text string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	id := b.String()
	if id == "" {
		id = "section"
	}
	n := w.ids[id]
	w.ids[id] = n + 1
	if n > 0 {
		id += "-" + strconv.Itoa(n)
	}
	return html.EscapeString(id)
}
