package mdexport

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/signintech/gopdf"

	"github.com/parleyhq/parley/internal/tools"
)

// convertPDF is md_to_pdf: an A4 PDF file. The plugin renders the Markdown's HTML with
// xhtml2pdf; here the document is laid out directly with gopdf, a maintained pure-Go PDF writer
// that embeds subsets of TrueType fonts, so that any text the fonts cover (see FindFonts) comes
// out as text a reader can select and search: headings (in the PDF's outline too), paragraphs
// with bold, italic, code and links, lists, code blocks, quotes and tables, split across pages.
func convertPDF(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	doc, err := newDocument(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	data, err := renderPDF(ctx, doc, in.set.fonts())
	if err != nil {
		return nil, "", err
	}
	return single(in, ".pdf", mimePDF, data)
}

// Page geometry (A4) and type sizes, in points.
const (
	pdfPageWidth  = 595.28
	pdfPageHeight = 841.89
	pdfMargin     = 56.7
	pdfTextWidth  = pdfPageWidth - 2*pdfMargin
	pdfBottom     = pdfPageHeight - pdfMargin
	pdfBodySize   = 10.5
	pdfCodeSize   = 9
	pdfLineFactor = 1.4
	pdfListIndent = 18
	pdfQuoteInset = 14
	pdfCellPad    = 4
	// maxPDFPages bounds the pages of one file.
	maxPDFPages = 2000
)

// pdfHeadingSizes are the type sizes of headings by level.
var pdfHeadingSizes = [6]float64{20, 16.5, 14.5, 13, 12, 11}

// Font families as the PDF names them.
const (
	familySans     = "sans"
	familyMono     = "mono"
	familyFallback = "fallback"
)

// rgb is a colour.
type rgb [3]uint8

// Colours of the text and the drawings.
var (
	colorText    = rgb{0x1A, 0x1A, 0x1A}
	colorHeading = rgb{0x1F, 0x38, 0x64}
	colorLink    = rgb{0x05, 0x63, 0xC1}
	colorMuted   = rgb{0x59, 0x59, 0x59}
	colorCodeBg  = rgb{0xF2, 0xF2, 0xF2}
	colorRule    = rgb{0xA6, 0xA6, 0xA6}
	colorHeadBg  = rgb{0xE7, 0xE6, 0xE6}
)

// renderPDF lays doc out in a PDF file.
func renderPDF(ctx context.Context, doc *document, fonts *Fonts) ([]byte, error) {
	w := &pdfWriter{ctx: ctx, glyphs: newGlyphs(fonts)}
	w.pdf.Start(gopdf.Config{PageSize: *gopdf.PageSizeA4, Unit: gopdf.UnitPT})
	w.pdf.SetInfo(gopdf.PdfInfo{Title: doc.title(), Creator: "Parley"})
	if err := w.addFonts(fonts, doc); err != nil {
		return nil, err
	}
	w.newPage()
	w.blocks(doc.blocks, pdfBox{left: pdfMargin, width: pdfTextWidth})
	if w.err != nil {
		return nil, w.err
	}
	buf := newLimitedBuffer()
	if _, err := w.pdf.WriteTo(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pdfWriter lays out blocks page after page; the first error stops it.
type pdfWriter struct {
	ctx    context.Context
	pdf    gopdf.GoPdf
	glyphs *glyphs
	// fallback: the fallback font is in the PDF.
	fallback bool
	y        float64
	pages    int
	err      error
}

// pdfBox is where a block is laid out: its left edge and width, and how deep in quotes it is.
type pdfBox struct {
	left, width float64
	quote       int
}

// addFonts adds the family in its four styles, the monospaced font, and the fallback when the
// document has characters only it has.
func (w *pdfWriter) addFonts(f *Fonts, doc *document) error {
	for _, a := range []struct {
		family string
		data   []byte
		style  int
	}{
		{familySans, f.Regular, gopdf.Regular}, {familySans, f.Bold, gopdf.Bold},
		{familySans, f.Italic, gopdf.Italic}, {familySans, f.BoldItalic, gopdf.Bold | gopdf.Italic},
		{familyMono, f.Mono, gopdf.Regular},
	} {
		if err := w.pdf.AddTTFFontDataWithOption(a.family, a.data, gopdf.TtfOption{Style: a.style}); err != nil {
			return fmt.Errorf("pdf font %s: %w", f.Name, err)
		}
	}
	if f.Fallback != nil && w.needsFallback(doc) {
		if err := w.pdf.AddTTFFontDataWithOption(familyFallback, f.Fallback, gopdf.TtfOption{Style: gopdf.Regular}); err != nil {
			return fmt.Errorf("pdf fallback font: %w", err)
		}
		w.fallback = true
	}
	return nil
}

// needsFallback says whether some text of doc needs the fallback font.
func (w *pdfWriter) needsFallback(doc *document) bool {
	need := false
	check := func(s string) {
		for _, r := range s {
			if need {
				return
			}
			need = w.glyphs.choose(r) == inFallback
		}
	}
	walkBlocks(doc.blocks, func(b *block) {
		check(plain(b.spans))
		check(b.code)
		if b.table != nil {
			for _, c := range b.table.header {
				check(plain(c))
			}
			for _, r := range b.table.rows {
				for _, c := range r {
					check(plain(c))
				}
			}
		}
	})
	return need
}

// fail records the first error.
func (w *pdfWriter) fail(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

// newPage starts a page.
func (w *pdfWriter) newPage() {
	w.pages++
	if w.pages > maxPDFPages {
		w.fail(fmt.Errorf("the PDF would have more than %d pages", maxPDFPages))
		return
	}
	w.pdf.AddPage()
	w.y = pdfMargin
}

// room makes sure h points fit under y, starting a page if not.
func (w *pdfWriter) room(h float64) {
	if w.y+h > pdfBottom && w.y > pdfMargin {
		w.newPage()
	}
}

// blocks lays out bs in box.
func (w *pdfWriter) blocks(bs []block, box pdfBox) {
	for i := range bs {
		if w.err != nil {
			return
		}
		w.fail(w.ctx.Err())
		w.block(&bs[i], box)
	}
}

// block lays out one block.
func (w *pdfWriter) block(b *block, box pdfBox) {
	switch b.kind {
	case kindHeading:
		size := pdfHeadingSizes[b.level-1]
		w.y += size * 0.6
		w.room(size * 3)
		if b.level <= 3 {
			w.pdf.AddOutline(plain(b.spans))
		}
		w.paragraph(b.spans, textStyle{size: size, bold: true, color: colorHeading}, box, nil)
		w.y += 4
	case kindParagraph:
		st := textStyle{size: pdfBodySize, color: colorText}
		if box.quote > 0 {
			st.color = colorMuted
		}
		w.paragraph(b.spans, st, box, nil)
		w.y += 6
	case kindRule:
		w.room(14)
		w.stroke(colorRule, 0.75)
		w.pdf.Line(box.left, w.y+7, box.left+box.width, w.y+7)
		w.y += 14
	case kindCode:
		w.code(b.code, box)
		w.y += 6
	case kindQuote:
		inner := pdfBox{left: box.left + pdfQuoteInset, width: box.width - pdfQuoteInset, quote: box.quote + 1}
		w.blocks(b.children, inner)
	case kindList:
		w.list(b, box)
		w.y += 2
	case kindTable:
		w.table(b.table, box)
		w.y += 8
	}
}

// list lays out a list: each item's marker in the margin of its first line, its blocks
// indented.
func (w *pdfWriter) list(b *block, box pdfBox) {
	inner := pdfBox{left: box.left + pdfListIndent, width: box.width - pdfListIndent, quote: box.quote}
	if inner.width < 60 {
		inner = box // lists nested too deep to indent further
	}
	for i, it := range b.items {
		if w.err != nil {
			return
		}
		marker := "•"
		if b.ordered {
			marker = strconv.Itoa(b.start+i) + "."
		}
		switch it.task {
		case taskOpen:
			marker = "☐"
		case taskDone:
			marker = "☑"
		}
		m := &pdfMarker{text: marker, x: inner.left - pdfListIndent + 4}
		rest := it.blocks
		if len(rest) == 0 || rest[0].kind != kindParagraph {
			rest = append([]block{{kind: kindParagraph}}, rest...)
		}
		w.paragraph(rest[0].spans, textStyle{size: pdfBodySize, color: colorText}, inner, m)
		w.y += 3
		w.blocks(rest[1:], inner)
	}
}

// pdfMarker is a list item's marker, drawn left of its first line.
type pdfMarker struct {
	text string
	x    float64
}

// textStyle is how a paragraph sets its text.
type textStyle struct {
	size         float64
	bold, italic bool
	mono         bool
	color        rgb
}

// frag is a piece of text set in one font, the unit of line breaking: a word, part of a word
// in another font (glued to what precedes it), a space, or a line break.
type frag struct {
	text   string
	family string
	style  int
	size   float64
	width  float64
	color  rgb
	link   string
	code   bool
	strike bool
	space  bool
	glue   bool
	brk    bool
}

// paragraph lays out spans in box, line after line, with marker left of the first line.
func (w *pdfWriter) paragraph(spans []span, st textStyle, box pdfBox, marker *pdfMarker) {
	frags := w.frags(spans, st)
	lines := w.breakLines(frags, box.width)
	if len(lines) == 0 {
		lines = [][]frag{nil}
	}
	for i, line := range lines {
		if w.err != nil {
			return
		}
		h := st.size * pdfLineFactor
		for _, f := range line {
			h = max(h, f.size*pdfLineFactor)
		}
		w.room(h)
		if i == 0 && marker != nil {
			w.drawLine(w.frags([]span{{text: marker.text}}, st), marker.x, h)
		}
		w.drawLine(line, box.left, h)
		w.quoteBars(box, h)
		w.y += h
	}
}

// quoteBars draws the bar left of a quote's line.
func (w *pdfWriter) quoteBars(box pdfBox, h float64) {
	if box.quote == 0 {
		return
	}
	w.stroke(colorRule, 2)
	x := box.left - pdfQuoteInset/2
	w.pdf.Line(x, w.y, x, w.y+h)
}

// frags turns spans into frags: words, spaces and breaks, each in the font it is set in.
func (w *pdfWriter) frags(spans []span, st textStyle) []frag {
	var out []frag
	for _, s := range spans {
		if s.lineBreak {
			out = append(out, frag{brk: true})
			continue
		}
		base := frag{size: st.size, color: st.color, link: pdfLink(s.link), code: s.style&styleCode != 0,
			strike: s.style&styleStrike != 0, family: familySans}
		if st.mono || base.code {
			base.family = familyMono
			if !st.mono {
				base.size = st.size * 0.92
			}
		}
		if st.bold || s.style&styleBold != 0 {
			base.style |= gopdf.Bold
		}
		if st.italic || s.style&styleItalic != 0 || s.image {
			base.style |= gopdf.Italic
		}
		if base.family == familyMono {
			base.style = gopdf.Regular
		}
		if s.link != "" {
			base.color = colorLink
		}
		out = w.split(out, s.text, base)
	}
	for i := range out {
		out[i].width = w.measure(out[i])
	}
	return out
}

// split appends the frags of text: runs of spaces, words, and Chinese, Japanese and Korean
// characters one by one (lines may break between them); a change of font within a word makes a
// glued frag.
func (w *pdfWriter) split(out []frag, text string, base frag) []frag {
	var cur strings.Builder
	curFamily, inWord := "", false
	flush := func(glue bool) {
		if cur.Len() == 0 {
			return
		}
		f := base
		f.text, f.glue = cur.String(), glue
		if curFamily == familyFallback {
			f.family, f.style = familyFallback, gopdf.Regular
		}
		out = append(out, f)
		cur.Reset()
	}
	for _, r := range strings.ReplaceAll(text, "\t", "    ") {
		if r == ' ' || r == '\n' {
			flush(inWord && len(out) > 0 && !out[len(out)-1].space)
			inWord = false
			// Spaces in code all count (indentation); elsewhere a run of them is one.
			if n := len(out); n == 0 || !out[n-1].space || base.family == familyMono {
				sp := base
				sp.text, sp.space = " ", true
				out = append(out, sp)
			}
			continue
		}
		family := base.family
		switch w.glyphs.choose(r) {
		case inFallback:
			if w.fallback {
				family = familyFallback
			} else {
				r = '?'
			}
		case inNone:
			r = '?'
		}
		wide := isWide(r)
		if family != curFamily || wide {
			flush(inWord && !wide)
			curFamily = family
		}
		cur.WriteRune(r)
		inWord = true
		if wide {
			flush(false)
			inWord = false
		}
	}
	flush(inWord && cur.Len() > 0 && len(out) > 0 && !out[len(out)-1].space && !out[len(out)-1].brk)
	return out
}

// isWide says whether r is a Chinese, Japanese or Korean character, after which a line may
// break.
func isWide(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

// pdfLink is a link a PDF can follow: an absolute web or mail address; "" otherwise.
func pdfLink(link string) string {
	l := strings.ToLower(link)
	if strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "mailto:") {
		return link
	}
	return ""
}

// setFont selects a frag's font.
func (w *pdfWriter) setFont(f frag) {
	w.fail(w.pdf.SetFontWithStyle(f.family, f.style, f.size))
}

// measure is the width of a frag's text.
func (w *pdfWriter) measure(f frag) float64 {
	if f.brk || f.text == "" {
		return 0
	}
	w.setFont(f)
	width, err := w.pdf.MeasureTextWidth(f.text)
	w.fail(err)
	return width
}

// breakLines breaks frags into lines of at most width: between words, or within a word that
// is wider than a line.
func (w *pdfWriter) breakLines(frags []frag, width float64) [][]frag {
	var lines [][]frag
	var line []frag
	x := 0.0
	end := func() {
		lines = append(lines, trimSpaces(line))
		line, x = nil, 0
	}
	for i := 0; i < len(frags); {
		f := frags[i]
		switch {
		case f.brk:
			end()
			i++
			continue
		case f.space:
			if len(line) > 0 {
				line = append(line, f)
				x += f.width
			}
			i++
			continue
		}
		j := i + 1
		for j < len(frags) && frags[j].glue {
			j++
		}
		wordWidth := 0.0
		for _, g := range frags[i:j] {
			wordWidth += g.width
		}
		if x+wordWidth > width && len(trimSpaces(line)) > 0 {
			end()
		}
		if wordWidth > width {
			for _, g := range frags[i:j] {
				line, x = w.splitWord(g, line, x, width, &lines)
			}
		} else {
			line = append(line, frags[i:j]...)
			x += wordWidth
		}
		i = j
	}
	if len(line) > 0 {
		lines = append(lines, trimSpaces(line))
	}
	return lines
}

// splitWord adds a frag too wide for a line character by character, ending lines where they
// are full.
func (w *pdfWriter) splitWord(g frag, line []frag, x, width float64, lines *[][]frag) ([]frag, float64) {
	var cur strings.Builder
	curWidth := 0.0
	for _, r := range g.text {
		piece := g
		piece.text = string(r)
		rw := w.measure(piece)
		if x+curWidth+rw > width && (cur.Len() > 0 || len(line) > 0) {
			if cur.Len() > 0 {
				part := g
				part.text, part.width = cur.String(), curWidth
				line = append(line, part)
			}
			*lines = append(*lines, trimSpaces(line))
			line, x = nil, 0
			cur.Reset()
			curWidth = 0
		}
		cur.WriteRune(r)
		curWidth += rw
	}
	if cur.Len() > 0 {
		part := g
		part.text, part.width = cur.String(), curWidth
		line = append(line, part)
		x += curWidth
	}
	return line, x
}

// trimSpaces drops the spaces at the end of a line.
func trimSpaces(line []frag) []frag {
	for len(line) > 0 && line[len(line)-1].space {
		line = line[:len(line)-1]
	}
	return line
}

// drawLine draws a line of frags from x, its top at y, h high: code shading, the text, the
// strike lines and the link areas.
func (w *pdfWriter) drawLine(line []frag, x, h float64) {
	for _, f := range line {
		if f.code && !f.space {
			w.fill(colorCodeBg)
			w.pdf.RectFromUpperLeftWithStyle(x-1, w.y+h*0.12, f.width+2, f.size*1.2, "F")
		}
		if f.text != "" && !f.space {
			w.setFont(f)
			w.pdf.SetTextColor(f.color[0], f.color[1], f.color[2])
			baseline := w.y + h*0.5 + f.size*0.35
			w.pdf.SetXY(x, baseline)
			w.fail(w.pdf.Text(f.text))
			if f.strike {
				w.stroke(f.color, f.size/16)
				w.pdf.Line(x, baseline-f.size*0.3, x+f.width, baseline-f.size*0.3)
			}
		}
		if f.link != "" {
			w.pdf.AddExternalLink(f.link, x, w.y, f.width, h)
		}
		x += f.width
	}
}

// code lays out a code block: monospaced lines on a shaded band, long lines wrapped.
func (w *pdfWriter) code(code string, box pdfBox) {
	st := textStyle{size: pdfCodeSize, mono: true, color: colorText}
	h := pdfCodeSize * 1.3
	w.y += 2
	for i, line := range strings.Split(code, "\n") {
		if w.err != nil {
			return
		}
		if i%256 == 0 {
			w.fail(w.ctx.Err())
		}
		pieces := w.codeLines(w.frags([]span{{text: line}}, st), box.width-8)
		for _, p := range pieces {
			w.room(h)
			w.fill(colorCodeBg)
			w.pdf.RectFromUpperLeftWithStyle(box.left, w.y, box.width, h, "F")
			w.drawLine(p, box.left+4, h)
			w.quoteBars(box, h)
			w.y += h
		}
	}
}

// codeLines breaks a line of code where it passes width, keeping its spaces.
func (w *pdfWriter) codeLines(frags []frag, width float64) [][]frag {
	var lines [][]frag
	var line []frag
	x := 0.0
	for _, f := range frags {
		if x+f.width <= width {
			line = append(line, f)
			x += f.width
			continue
		}
		line, x = w.splitWord(f, line, x, width, &lines)
	}
	return append(lines, line)
}

// table lays out a table: columns sized after their text, cells wrapped, the header row shaded
// and repeated at the top of each page the table continues on; a row taller than what is left
// of a page continues on the next.
func (w *pdfWriter) table(t *table, box pdfBox) {
	if len(t.header) == 0 {
		return
	}
	size := pdfBodySize * 0.95
	head := make([][]frag, len(t.header))
	for i, c := range t.header {
		head[i] = w.frags(c, textStyle{size: size, bold: true, color: colorText})
	}
	body := make([][][]frag, len(t.rows))
	for r, row := range t.rows {
		body[r] = make([][]frag, len(row))
		for i, c := range row {
			body[r][i] = w.frags(c, textStyle{size: size, color: colorText})
		}
	}
	widths := pdfColumnWidths(head, body, box.width)
	lineH := size * pdfLineFactor
	drawHead := func() { w.row(head, widths, t.align, box, lineH, true, nil) }
	drawHead()
	for r := range body {
		if w.err != nil {
			return
		}
		if r%64 == 0 {
			w.fail(w.ctx.Err())
		}
		w.row(body[r], widths, t.align, box, lineH, false, drawHead)
	}
}

// pdfColumnWidths sizes the columns after the width of their text on one line: the columns
// narrower than an even share of what is left keep their width, and the wider ones share the
// rest after theirs, so that short columns (numbers, names) are not wrapped to make room for a
// long one.
func pdfColumnWidths(head [][]frag, body [][][]frag, width float64) []float64 {
	n := len(head)
	natural := make([]float64, n)
	fit := func(i int, frags []frag) {
		sum := 2.0 * pdfCellPad
		for _, f := range frags {
			sum += f.width
		}
		natural[i] = max(natural[i], sum)
	}
	for i, c := range head {
		fit(i, c)
	}
	for _, row := range body {
		for i, c := range row {
			fit(i, c)
		}
	}
	out, _, _ := shareWidths(natural, width, 0)
	return out
}

// row draws one table row: on the next page if it does not fit in what is left of this one,
// in parts over several pages if it is taller than a page. onNewPage runs after each page it
// starts (the table's header row again).
func (w *pdfWriter) row(cells [][]frag, widths []float64, align []alignment, box pdfBox, lineH float64, header bool, onNewPage func()) {
	lines := make([][][]frag, len(cells))
	most := 1
	for i, c := range cells {
		lines[i] = w.breakLines(c, widths[i]-2*pdfCellPad)
		most = max(most, len(lines[i]))
	}
	turn := func() {
		w.newPage()
		if onNewPage != nil {
			onNewPage()
		}
	}
	fits := func() int { return int((pdfBottom - w.y - 2*pdfCellPad) / lineH) }
	if full := float64(most)*lineH + 2*pdfCellPad; w.y+full > pdfBottom && w.y > pdfMargin && full <= pdfBottom-pdfMargin {
		turn()
	}
	for from := 0; from < most && w.err == nil; {
		n := min(fits(), most-from)
		if n < 1 {
			turn()
			// A header that fills a page leaves no room: the row runs over the margin.
			n = max(min(fits(), most-from), 1)
		}
		h := float64(n)*lineH + 2*pdfCellPad
		x := box.left
		for i := range cells {
			if header {
				w.fill(colorHeadBg)
				w.pdf.RectFromUpperLeftWithStyle(x, w.y, widths[i], h, "F")
			}
			w.stroke(colorRule, 0.5)
			w.pdf.RectFromUpperLeftWithStyle(x, w.y, widths[i], h, "D")
			top := w.y
			for k := from; k < from+n && k < len(lines[i]); k++ {
				w.y = top + pdfCellPad + float64(k-from)*lineH
				w.drawLine(lines[i][k], x+pdfCellPad+alignOffset(lines[i][k], align[i], widths[i]-2*pdfCellPad), lineH)
			}
			w.y = top
			x += widths[i]
		}
		w.y += h
		from += n
	}
}

// alignOffset is how far right a line of a cell starts to be aligned in width.
func alignOffset(line []frag, a alignment, width float64) float64 {
	if a != alignRight && a != alignCenter {
		return 0
	}
	used := 0.0
	for _, f := range line {
		used += f.width
	}
	free := max(width-used, 0)
	if a == alignCenter {
		free /= 2
	}
	return free
}

// stroke sets the colour and width of lines.
func (w *pdfWriter) stroke(c rgb, width float64) {
	w.pdf.SetStrokeColor(c[0], c[1], c[2])
	w.pdf.SetLineWidth(width)
}

// fill sets the colour of filled shapes.
func (w *pdfWriter) fill(c rgb) {
	w.pdf.SetFillColor(c[0], c[1], c[2])
}
