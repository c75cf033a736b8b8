package mdexport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
)

// document is a parsed Markdown text as the writers see it: blocks of spans of styled text.
// Every writer walks this model rather than goldmark's tree, so that the formats agree on what
// the Markdown says (a soft line break is a space, raw HTML is its text, an image is its alt
// text and link), and so that each writer deals with a handful of kinds.
type document struct {
	blocks []block
}

// blockKind is the kind of a block.
type blockKind uint8

// Kinds of block.
const (
	kindParagraph blockKind = iota
	kindHeading
	kindList
	kindCode
	kindQuote
	kindTable
	kindRule
)

// block is one block of the document; which fields are set depends on kind.
type block struct {
	kind blockKind
	// level is a heading's level, 1 to 6.
	level int
	// spans are the text of a paragraph or heading.
	spans []span
	// ordered, start and items are a list's: numbered from start, or bulleted.
	ordered bool
	start   int
	items   []listItem
	// lang and code are a code block's info word and text (without a final line break);
	// fenced says it was fenced (``` or ~~~), not indented.
	lang, code string
	fenced     bool
	// children are a block quote's blocks.
	children []block
	// table is a table's cells.
	table *table
}

// listItem is one item of a list.
type listItem struct {
	// task is a task list item's box: taskNone, taskOpen or taskDone.
	task   taskState
	blocks []block
}

// taskState is the check box of a task list item.
type taskState uint8

// States of a task list item.
const (
	taskNone taskState = iota
	taskOpen
	taskDone
)

// table is a table: its header row, its body rows (each as wide as the header, as GitHub's
// tables are) and the alignment of each column.
type table struct {
	align  []alignment
	header []cell
	rows   [][]cell
}

// cell is a table cell's text.
type cell []span

// alignment is a table column's alignment.
type alignment uint8

// Alignments of a table column.
const (
	alignNone alignment = iota
	alignLeft
	alignCenter
	alignRight
)

// style is how a span's text is set, bits of styleBold… combined.
type style uint8

// Styles of a span.
const (
	styleBold style = 1 << iota
	styleItalic
	styleCode
	styleStrike
)

// span is a run of text in one style.
type span struct {
	text  string
	style style
	// link is the target of the link the text is, if any (already checked by safeLink).
	link string
	// image is set for an image's alt text; link is then the image's source.
	image bool
	// lineBreak is a hard line break (text is empty).
	lineBreak bool
}

// plain is the text of spans, line breaks as "\n".
func plain(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		if s.lineBreak {
			b.WriteByte('\n')
			continue
		}
		b.WriteString(s.text)
	}
	return b.String()
}

// newDocument parses the Markdown text md into the document model.
func newDocument(ctx context.Context, md string) (*document, error) {
	src := []byte(md)
	root, err := parseMarkdown(ctx, src)
	if err != nil {
		return nil, err
	}
	c := converter{src: src, links: map[string]string{}}
	doc := &document{blocks: c.blocks(root)}
	if c.err != nil {
		return nil, c.err
	}
	return doc, ctx.Err()
}

// Bounds of a document beyond those of the parse: a small text can ask for much more.
const (
	// maxTableCells bounds the cells of the tables once every row is as wide as its header (as
	// goldmark makes them, and as spreadsheets need them): a header of a thousand columns over
	// a thousand rows of "|" is a million cells. A megabyte of real tables is a few hundred
	// thousand cells.
	maxTableCells = MaxInputBytes / 2
	// maxLinkBytes bounds the bytes of the link targets of a document, each link counted: a
	// reference definition written once can be used by a hundred thousand links.
	maxLinkBytes = MaxOutputBytes
)

// Errors of a document over its bounds.
var (
	errTooManyCells = fmt.Errorf("the tables would have more than %d cells once each row is as wide as its header", maxTableCells)
	errLinksTooLong = fmt.Errorf("the link addresses of the text add up to more than %d bytes", maxLinkBytes)
)

// converter turns goldmark's tree of one source into blocks.
type converter struct {
	src []byte
	// links interns link targets: the links to one reference share its text.
	links map[string]string
	// cells and linkBytes count towards maxTableCells and maxLinkBytes; err is the first bound
	// passed.
	cells, linkBytes int
	err              error
	// task is the check box of the list item being converted.
	task taskState
}

// link is the safe target of a link (image: of an image), counted towards maxLinkBytes.
func (c *converter) link(dest []byte, image bool) string {
	c.linkBytes += len(dest)
	if c.linkBytes > maxLinkBytes && c.err == nil {
		c.err = errLinksTooLong
	}
	if s, ok := c.links[string(dest)]; ok {
		return s
	}
	// The target as CommonMark reads it (escapes and character references resolved), checked,
	// then percent-encoded where a URI needs it, as goldmark writes an href: DOCX and PPTX
	// readers refuse relationship targets that are not URIs.
	s := safeLink(unescape(dest), image)
	if s != "" {
		s = string(util.URLEscape([]byte(s), false))
	}
	c.links[string(dest)] = s
	return s
}

// blocks converts the block children of parent. The parse bounds how deep blocks nest, so the
// recursion is bounded too.
func (c *converter) blocks(parent ast.Node) []block {
	var out []block
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		if b, ok := c.block(n); ok {
			out = append(out, b)
		}
	}
	return out
}

// block converts one block node; false for nodes that are not shown (an empty HTML comment).
func (c *converter) block(n ast.Node) (block, bool) {
	switch n := n.(type) {
	case *ast.Heading:
		return block{kind: kindHeading, level: min(max(n.Level, 1), 6), spans: c.inlines(n)}, true
	case *ast.Paragraph, *ast.TextBlock:
		return block{kind: kindParagraph, spans: c.inlines(n)}, true
	case *ast.ThematicBreak:
		return block{kind: kindRule}, true
	case *ast.FencedCodeBlock:
		lang := ""
		if n.Info != nil {
			lang, _, _ = strings.Cut(strings.TrimSpace(string(n.Info.Value(c.src))), " ")
		}
		return block{kind: kindCode, lang: lang, code: c.lines(n), fenced: true}, true
	case *ast.CodeBlock:
		return block{kind: kindCode, code: c.lines(n)}, true
	case *ast.Blockquote:
		return block{kind: kindQuote, children: c.blocks(n)}, true
	case *ast.List:
		return c.list(n), true
	case *ast.HTMLBlock:
		// Raw HTML is not passed through (it could carry scripts into the HTML and XML files);
		// its text is kept as a paragraph.
		t := strings.TrimSpace(htmlText(c.lines(n)))
		if t == "" {
			return block{}, false
		}
		return block{kind: kindParagraph, spans: []span{{text: t}}}, true
	case *east.Table:
		return block{kind: kindTable, table: c.table(n)}, true
	}
	if n.Type() == ast.TypeBlock && n.HasChildren() {
		// A block of a kind not known here: its children stand in for it.
		return block{kind: kindQuote, children: c.blocks(n)}, true
	}
	return block{}, false
}

// lines is the text of a code or HTML block's lines, without the last line break.
func (c *converter) lines(n ast.Node) string {
	var b bytes.Buffer
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		b.Write(seg.Value(c.src))
	}
	return strings.TrimRight(b.String(), "\n")
}

// list converts a list.
func (c *converter) list(n *ast.List) block {
	b := block{kind: kindList, ordered: n.IsOrdered(), start: n.Start}
	if b.ordered && b.start < 0 {
		b.start = 1
	}
	for it := n.FirstChild(); it != nil; it = it.NextSibling() {
		// The item's check box, if any, is met in its first block; the items of lists inside
		// it keep theirs to themselves.
		outer := c.task
		c.task = taskNone
		item := listItem{blocks: c.blocks(it)}
		item.task, c.task = c.task, outer
		b.items = append(b.items, item)
	}
	return b
}

// table converts a table.
func (c *converter) table(n *east.Table) *table {
	t := &table{}
	for _, a := range n.Alignments {
		switch a {
		case east.AlignLeft:
			t.align = append(t.align, alignLeft)
		case east.AlignCenter:
			t.align = append(t.align, alignCenter)
		case east.AlignRight:
			t.align = append(t.align, alignRight)
		default:
			t.align = append(t.align, alignNone)
		}
	}
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []cell
		for tc := row.FirstChild(); tc != nil; tc = tc.NextSibling() {
			cells = append(cells, cell(c.inlines(tc)))
		}
		if _, ok := row.(*east.TableHeader); ok {
			t.header = cells
		} else {
			t.rows = append(t.rows, cells)
		}
	}
	width := max(len(t.header), len(t.align))
	if c.cells += width * (len(t.rows) + 1); c.cells > maxTableCells {
		if c.err == nil {
			c.err = errTooManyCells
		}
		return &table{}
	}
	t.header = pad(t.header, width)
	for i := range t.rows {
		t.rows[i] = pad(t.rows[i], width)
	}
	for len(t.align) < width {
		t.align = append(t.align, alignNone)
	}
	return t
}

// pad is cells cut or filled to width.
func pad(cells []cell, width int) []cell {
	if len(cells) > width {
		return cells[:width]
	}
	for len(cells) < width {
		cells = append(cells, nil)
	}
	return cells
}

// inlines flattens the inline children of n into spans. It walks goldmark's tree without
// recursion: emphasis can nest as deep as the text is long.
func (c *converter) inlines(n ast.Node) []span {
	var out spanBuilder
	var stack []inlineFrame
	st := inlineState{}
	next := n.FirstChild()
	for next != nil || len(stack) > 0 {
		if next == nil {
			// The children of the top frame are done: on with its next sibling.
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			st = top.outer
			next = top.node.NextSibling()
			continue
		}
		node := next
		next = node.NextSibling()
		if inner, descend := c.inline(&out, node, st); descend && node.HasChildren() {
			stack = append(stack, inlineFrame{node: node, outer: st})
			st = inner
			next = node.FirstChild()
		}
	}
	return out.done()
}

// inlineState is the style and link in force at a point of the text.
type inlineState struct {
	style style
	link  string
	image bool
}

// inlineFrame is an inline node being walked and the state around it.
type inlineFrame struct {
	node  ast.Node
	outer inlineState
}

// inline adds what node says by itself to out, and returns the state of its children and
// whether to walk them.
func (c *converter) inline(out *spanBuilder, node ast.Node, st inlineState) (inlineState, bool) {
	switch n := node.(type) {
	case *ast.Text:
		c.text(out, n, st)
		return st, false
	case *ast.String:
		v := string(n.Value)
		if !n.IsCode() && !n.IsRaw() {
			v = unescape(n.Value)
		}
		out.add(span{text: v, style: st.style, link: st.link, image: st.image})
		return st, false
	case *ast.CodeSpan:
		st.style |= styleCode
	case *ast.Emphasis:
		if n.Level >= 2 {
			st.style |= styleBold
		} else {
			st.style |= styleItalic
		}
	case *east.Strikethrough:
		st.style |= styleStrike
	case *ast.Link:
		st.link = c.link(n.Destination, false)
	case *ast.Image:
		st.link, st.image = c.link(n.Destination, true), true
		if !n.HasChildren() {
			out.add(span{text: "image", style: st.style, link: st.link, image: true})
		}
	case *ast.AutoLink:
		out.add(span{text: string(n.Label(c.src)), style: st.style, link: c.link(n.URL(c.src), false)})
		return st, false
	case *ast.RawHTML:
		// Inline HTML is not passed through; a <br> is the line break it means.
		if isBreakTag(c.raw(n)) {
			out.add(span{lineBreak: true})
		}
		return st, false
	case *east.TaskCheckBox:
		c.task = taskOpen
		if n.IsChecked {
			c.task = taskDone
		}
		out.trimNextSpace = true
		return st, false
	}
	return st, true
}

// text adds a text node: its characters with escapes and entities resolved (verbatim in code),
// and its line break: a hard one as such, a soft one as a space.
func (c *converter) text(out *spanBuilder, n *ast.Text, st inlineState) {
	v := n.Value(c.src)
	var t string
	switch {
	case st.style&styleCode != 0:
		// Line ends in code are spaces (CommonMark); goldmark leaves them in the text.
		t = strings.ReplaceAll(string(v), "\n", " ")
		if bytes.HasSuffix(v, []byte("\n")) {
			out.add(span{text: t, style: st.style, link: st.link, image: st.image})
			return
		}
	case n.IsRaw():
		t = string(v)
	default:
		t = unescape(v)
	}
	out.add(span{text: t, style: st.style, link: st.link, image: st.image})
	switch {
	case n.HardLineBreak():
		out.add(span{lineBreak: true})
	case n.SoftLineBreak():
		out.add(span{text: " ", style: st.style, link: st.link, image: st.image})
	}
}

// raw is the source of an inline HTML tag.
func (c *converter) raw(n *ast.RawHTML) string {
	var b strings.Builder
	for i := 0; i < n.Segments.Len(); i++ {
		seg := n.Segments.At(i)
		b.Write(seg.Value(c.src))
	}
	return b.String()
}

// isBreakTag says whether tag is <br>, <br/> or <br />.
func isBreakTag(tag string) bool {
	t := strings.ToLower(strings.Join(strings.Fields(tag), ""))
	return t == "<br>" || t == "<br/>"
}

// unescape is Markdown text with its backslash escapes and character references resolved, the
// way goldmark's HTML writer resolves them (its output is HTML, read back as text here).
func unescape(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 && bytes.IndexByte(v, '&') < 0 {
		return string(v)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	gmhtml.DefaultWriter.Write(w, v)
	_ = w.Flush()
	// A character reference can name a control character ("&#1;"), which XML cannot carry.
	return clean(html.UnescapeString(buf.String()))
}

// safeLink is a link's target if it is one a document may carry: a web, mail, FTP or phone
// address, or a relative one (images: a web address or a relative one); "" otherwise, so that
// javascript: and data: addresses never reach a file.
func safeLink(dest string, image bool) string {
	dest = strings.TrimSpace(dest)
	if dest == "" {
		return ""
	}
	scheme := ""
	if i := strings.IndexAny(dest, ":/?#"); i > 0 && dest[i] == ':' {
		scheme = strings.ToLower(dest[:i])
	}
	switch scheme {
	case "", "http", "https":
		return dest
	case "mailto", "ftp", "tel":
		if !image {
			return dest
		}
	}
	return ""
}

// spanBuilder collects spans, merging neighbours of the same style and link. The text of the
// last span grows in a builder: a paragraph can be a million one-character text nodes.
type spanBuilder struct {
	spans []span
	// text is the text of the last span while open.
	text strings.Builder
	open bool
	// trimNextSpace drops the space after a task list item's check box.
	trimNextSpace bool
}

// add appends s.
func (b *spanBuilder) add(s span) {
	if b.trimNextSpace && !s.lineBreak {
		s.text = strings.TrimLeft(s.text, " ")
		b.trimNextSpace = s.text == ""
	}
	if !s.lineBreak && s.text == "" {
		return
	}
	if n := len(b.spans); b.open && !s.lineBreak {
		last := b.spans[n-1]
		if last.style == s.style && last.link == s.link && last.image == s.image {
			b.text.WriteString(s.text)
			return
		}
	}
	b.close()
	b.spans = append(b.spans, s)
	if !s.lineBreak {
		b.text.WriteString(s.text)
		b.open = true
	}
}

// close ends the text of the last span.
func (b *spanBuilder) close() {
	if b.open {
		b.spans[len(b.spans)-1].text = b.text.String()
		b.text.Reset()
		b.open = false
	}
}

// done is the spans.
func (b *spanBuilder) done() []span {
	b.close()
	return b.spans
}

// htmlText is the text of a piece of HTML: its text without tags, scripts and styles, a line
// break for each block-level tag.
func htmlText(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	skip := 0
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return collapseLines(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "pre", "blockquote":
				b.WriteByte('\n')
			}
		}
	}
}

// collapseLines is text with each line's spaces collapsed and empty lines dropped.
func collapseLines(s string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return strings.Join(out, "\n")
}
