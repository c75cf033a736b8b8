package mdexport

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/tools"
)

// convertDOCX is md_to_docx: a Word document. The plugin has pandoc write it over a template;
// here its parts are written directly (see the package comment): headings in the Heading 1-6
// styles (so that Word's navigation and table of contents see them), lists as Word numbering,
// code in a monospaced style, links as hyperlinks, tables as Word tables with a header row.
func convertDOCX(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	doc, err := newDocument(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	w := &docxWriter{links: map[string]string{}}
	if err := w.blocks(ctx, doc.blocks, 0); err != nil {
		return nil, "", err
	}
	data, err := w.pack(doc.title())
	if err != nil {
		return nil, "", err
	}
	files, _, err := single(in, ".docx", mimeDOCX, data)
	return files, templateNote(in.args, "docx_template_file"), err
}

// Page geometry of the document (A4, margins of one inch), in twentieths of a point.
const (
	docxPageWidth  = 11906
	docxPageHeight = 16838
	docxMargin     = 1440
	docxTextWidth  = docxPageWidth - 2*docxMargin
	// docxIndent is the indentation of one level of a quote or list.
	docxIndent = 360
	// docxCharWidth is about the width of a character of table text (11 pt, bold in the header),
	// with room for the cell margins.
	docxCharWidth = 140
)

// docxWriter writes the body of a Word document and collects what it refers to.
type docxWriter struct {
	body strings.Builder
	// rels are the hyperlink relationships of the body; links maps a target to its id.
	rels  []relationship
	links map[string]string
	// nums are the numbering instances of the lists, numId i+1 for nums[i].
	nums []docxNum
}

// docxNum is one list's numbering instance: bulleted or numbered, and where it starts.
type docxNum struct {
	ordered bool
	level   int
	start   int
}

// blocks writes bs at quote depth quote.
func (w *docxWriter) blocks(ctx context.Context, bs []block, quote int) error {
	for i := range bs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.block(ctx, &bs[i], quote); err != nil {
			return err
		}
		if w.body.Len() > maxPartBytes {
			return errPartTooLarge
		}
	}
	return nil
}

// block writes one block.
func (w *docxWriter) block(ctx context.Context, b *block, quote int) error {
	switch b.kind {
	case kindHeading:
		w.paragraph(fmt.Sprintf(`<w:pStyle w:val="Heading%d"/>`, b.level), b.spans)
	case kindParagraph:
		w.paragraph(quoteProps(quote, ""), b.spans)
	case kindRule:
		w.body.WriteString(`<w:p><w:pPr><w:pBdr><w:bottom w:val="single" w:sz="6" w:space="1" w:color="A6A6A6"/></w:pBdr></w:pPr></w:p>`)
	case kindCode:
		w.code(b.code, quote)
	case kindQuote:
		return w.blocks(ctx, b.children, quote+1)
	case kindList:
		return w.list(ctx, b, 0, quote)
	case kindTable:
		w.table(b.table)
	}
	return nil
}

// quoteProps is the paragraph properties of a paragraph in a quote quote levels deep (style
// when not in one).
func quoteProps(quote int, style string) string {
	if quote == 0 {
		if style == "" {
			return ""
		}
		return `<w:pStyle w:val="` + style + `"/>`
	}
	if style == "" {
		style = "Quote"
	}
	return fmt.Sprintf(`<w:pStyle w:val="%s"/><w:ind w:left="%d"/>`, style, quote*2*docxIndent)
}

// paragraph writes a paragraph of spans with the paragraph properties pPr.
func (w *docxWriter) paragraph(pPr string, spans []span) {
	w.body.WriteString("<w:p>")
	if pPr != "" {
		w.body.WriteString("<w:pPr>" + pPr + "</w:pPr>")
	}
	w.runs(spans, false)
	w.body.WriteString("</w:p>")
}

// code writes a code block as one paragraph, its lines parted by line breaks.
func (w *docxWriter) code(code string, quote int) {
	w.body.WriteString("<w:p><w:pPr>" + quoteProps(quote, "SourceCode") + "</w:pPr>")
	for i, line := range strings.Split(code, "\n") {
		if i > 0 {
			w.body.WriteString("<w:r><w:br/></w:r>")
		}
		w.run(line, "")
	}
	w.body.WriteString("</w:p>")
}

// list writes a list level levels deep: each item's first paragraph numbered, its other blocks
// indented under it, its lists one level deeper.
func (w *docxWriter) list(ctx context.Context, b *block, level, quote int) error {
	w.nums = append(w.nums, docxNum{ordered: b.ordered, level: min(level, 8), start: b.start})
	numID := len(w.nums)
	numPr := fmt.Sprintf(`<w:numPr><w:ilvl w:val="%d"/><w:numId w:val="%d"/></w:numPr>`, min(level, 8), numID)
	indent := fmt.Sprintf(`<w:ind w:left="%d"/>`, (level+1)*2*docxIndent)
	for _, it := range b.items {
		if err := ctx.Err(); err != nil {
			return err
		}
		rest := it.blocks
		var first []span
		if len(rest) > 0 && rest[0].kind == kindParagraph {
			first, rest = rest[0].spans, rest[1:]
		}
		switch it.task {
		case taskOpen:
			first = append([]span{{text: "☐ "}}, first...)
		case taskDone:
			first = append([]span{{text: "☒ "}}, first...)
		}
		w.paragraph(`<w:pStyle w:val="ListParagraph"/>`+numPr, first)
		for i := range rest {
			var err error
			switch rest[i].kind {
			case kindList:
				err = w.list(ctx, &rest[i], level+1, quote)
			case kindParagraph:
				w.paragraph(`<w:pStyle w:val="ListParagraph"/>`+indent, rest[i].spans)
			default:
				err = w.block(ctx, &rest[i], quote)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// table writes a table: the header row repeated on each page and shaded, column widths after
// the length of their text.
func (w *docxWriter) table(t *table) {
	widths := columnShares(t, docxTextWidth, docxCharWidth)
	w.body.WriteString(`<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/><w:tblW w:w="5000" w:type="pct"/>` +
		`<w:tblLook w:val="04A0"/></w:tblPr><w:tblGrid>`)
	for _, wd := range widths {
		fmt.Fprintf(&w.body, `<w:gridCol w:w="%d"/>`, wd)
	}
	w.body.WriteString(`</w:tblGrid>`)
	w.row(t.header, t.align, widths, true)
	for _, r := range t.rows {
		w.row(r, t.align, widths, false)
	}
	w.body.WriteString(`</w:tbl><w:p/>`)
}

// row writes one table row.
func (w *docxWriter) row(cells []cell, align []alignment, widths []int, header bool) {
	w.body.WriteString("<w:tr>")
	if header {
		w.body.WriteString("<w:trPr><w:tblHeader/></w:trPr>")
	}
	for i, c := range cells {
		fmt.Fprintf(&w.body, `<w:tc><w:tcPr><w:tcW w:w="%d" w:type="dxa"/>`, widths[i])
		if header {
			w.body.WriteString(`<w:shd w:val="clear" w:color="auto" w:fill="E7E6E6"/>`)
		}
		w.body.WriteString(`</w:tcPr><w:p><w:pPr><w:spacing w:before="0" w:after="0"/>`)
		if jc := map[alignment]string{alignCenter: "center", alignRight: "right"}[align[i]]; jc != "" {
			w.body.WriteString(`<w:jc w:val="` + jc + `"/>`)
		}
		w.body.WriteString(`</w:pPr>`)
		w.runs(c, header)
		w.body.WriteString("</w:p></w:tc>")
	}
	w.body.WriteString("</w:tr>")
}

// columnShares divides total among the columns of t after the length of their longest text
// (charWidth a character, in the unit of total): the columns narrower than an even share of what
// is left keep their width, the wider ones share the rest after theirs, and all are widened alike
// when they leave room, so that the table fills total.
func columnShares(t *table, total, charWidth int) []int {
	n := len(t.header)
	if n == 0 {
		return nil
	}
	natural := make([]int, n)
	measure := func(cells []cell) {
		for i, c := range cells {
			natural[i] = max(natural[i], (min(utf8.RuneCountInString(plain(c)), 80)+2)*charWidth)
		}
	}
	measure(t.header)
	for _, r := range t.rows {
		measure(r)
	}
	out, left, flexible := shareWidths(natural, total, 1)
	if flexible == 0 && left > 0 {
		used := total - left
		for i := range out {
			out[i] = out[i] * total / max(used, 1)
		}
	}
	return out
}

// runs writes spans as runs, the spans of one link inside one hyperlink; bold makes every run
// bold (a header row).
func (w *docxWriter) runs(spans []span, bold bool) {
	for i := 0; i < len(spans); {
		s := spans[i]
		if s.link == "" {
			w.span(s, bold, false)
			i++
			continue
		}
		fmt.Fprintf(&w.body, `<w:hyperlink r:id="%s" w:history="1">`, w.linkID(s.link))
		for ; i < len(spans) && spans[i].link == s.link; i++ {
			w.span(spans[i], bold, true)
		}
		w.body.WriteString(`</w:hyperlink>`)
	}
}

// span writes one span as a run, in the Hyperlink style when link.
func (w *docxWriter) span(s span, bold, link bool) {
	if s.lineBreak {
		w.body.WriteString("<w:r><w:br/></w:r>")
		return
	}
	var rPr strings.Builder
	// The schema orders run properties: style first, then bold, italics, strike.
	switch {
	case link:
		rPr.WriteString(`<w:rStyle w:val="Hyperlink"/>`)
	case s.style&styleCode != 0:
		rPr.WriteString(`<w:rStyle w:val="VerbatimChar"/>`)
	}
	if s.style&styleBold != 0 || bold {
		rPr.WriteString("<w:b/><w:bCs/>")
	}
	if s.style&styleItalic != 0 || s.image {
		rPr.WriteString("<w:i/><w:iCs/>")
	}
	if s.style&styleStrike != 0 {
		rPr.WriteString("<w:strike/>")
	}
	w.run(s.text, rPr.String())
}

// run writes text as one run with the run properties rPr, tabs as tab characters.
func (w *docxWriter) run(text, rPr string) {
	w.body.WriteString("<w:r>")
	if rPr != "" {
		w.body.WriteString("<w:rPr>" + rPr + "</w:rPr>")
	}
	for i, part := range strings.Split(text, "\t") {
		if i > 0 {
			w.body.WriteString("<w:tab/>")
		}
		if part != "" {
			w.body.WriteString(`<w:t xml:space="preserve">` + esc(part) + `</w:t>`)
		}
	}
	w.body.WriteString("</w:r>")
}

// linkID is the relationship id of a hyperlink to target.
func (w *docxWriter) linkID(target string) string {
	if id, ok := w.links[target]; ok {
		return id
	}
	id := "rIdL" + strconv.Itoa(len(w.rels)+1)
	w.rels = append(w.rels, relationship{id: id, typ: relHyperlink, target: target, external: true})
	w.links[target] = id
	return id
}

// Namespaces of the document parts.
const (
	nsW = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	nsR = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
)

// pack writes the package: the document, its styles and numbering, and its relationships.
func (w *docxWriter) pack(title string) ([]byte, error) {
	document := xmlHeader + `<w:document xmlns:w="` + nsW + `" xmlns:r="` + nsR + `"><w:body>` + w.body.String() +
		fmt.Sprintf(`<w:sectPr><w:pgSz w:w="%d" w:h="%d"/><w:pgMar w:top="%d" w:right="%d" w:bottom="%d" w:left="%d" w:header="720" w:footer="720" w:gutter="0"/></w:sectPr>`,
			docxPageWidth, docxPageHeight, docxMargin, docxMargin, docxMargin, docxMargin) +
		`</w:body></w:document>`
	rels := append([]relationship{
		{id: "rIdStyles", typ: relStyles, target: "styles.xml"},
		{id: "rIdNumbering", typ: relNumbering, target: "numbering.xml"},
	}, w.rels...)
	return packParts([]part{
		{"[Content_Types].xml", contentTypesXML([][2]string{
			{"/word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"},
			{"/word/styles.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"},
			{"/word/numbering.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"},
			{"/docProps/core.xml", contentTypeCoreProps},
		})},
		{"_rels/.rels", relationshipsXML([]relationship{
			{id: "rId1", typ: relOfficeDocument, target: "word/document.xml"},
			{id: "rId2", typ: relCoreProps, target: "docProps/core.xml"},
		})},
		{"docProps/core.xml", corePropsXML(title)},
		{"word/document.xml", document},
		{"word/_rels/document.xml.rels", relationshipsXML(rels)},
		{"word/styles.xml", docxStyles},
		{"word/numbering.xml", w.numbering()},
	})
}

// numbering is word/numbering.xml: two abstract lists (bullets; numbers, letters and roman
// numerals by level) and an instance per list, a numbered list's restarting at its start.
func (w *docxWriter) numbering() string {
	var b strings.Builder
	b.WriteString(xmlHeader + `<w:numbering xmlns:w="` + nsW + `">`)
	bullets := []string{"•", "◦", "▪"}
	formats := []string{"decimal", "lowerLetter", "lowerRoman"}
	for abstract := range 2 {
		fmt.Fprintf(&b, `<w:abstractNum w:abstractNumId="%d"><w:multiLevelType w:val="hybridMultilevel"/>`, abstract)
		for l := range 9 {
			format, text := "bullet", bullets[l%3]
			if abstract == 1 {
				format, text = formats[l%3], "%"+strconv.Itoa(l+1)+"."
			}
			fmt.Fprintf(&b, `<w:lvl w:ilvl="%d"><w:start w:val="1"/><w:numFmt w:val="%s"/><w:lvlText w:val="%s"/>`+
				`<w:lvlJc w:val="left"/><w:pPr><w:ind w:left="%d" w:hanging="%d"/></w:pPr></w:lvl>`,
				l, format, text, (l+1)*2*docxIndent, docxIndent)
		}
		b.WriteString(`</w:abstractNum>`)
	}
	for i, n := range w.nums {
		abstract := 0
		if n.ordered {
			abstract = 1
		}
		fmt.Fprintf(&b, `<w:num w:numId="%d"><w:abstractNumId w:val="%d"/>`, i+1, abstract)
		if n.ordered {
			fmt.Fprintf(&b, `<w:lvlOverride w:ilvl="%d"><w:startOverride w:val="%d"/></w:lvlOverride>`, n.level, n.start)
		}
		b.WriteString(`</w:num>`)
	}
	b.WriteString(`</w:numbering>`)
	return b.String()
}

// docxStyles is word/styles.xml: the paragraph, character and table styles the body uses.
var docxStyles = xmlHeader + `<w:styles xmlns:w="` + nsW + `">` +
	`<w:docDefaults><w:rPrDefault><w:rPr><w:rFonts w:ascii="Calibri" w:hAnsi="Calibri" w:cs="Calibri"/>` +
	`<w:sz w:val="22"/><w:szCs w:val="22"/><w:lang w:val="en-US"/></w:rPr></w:rPrDefault>` +
	`<w:pPrDefault><w:pPr><w:spacing w:after="120" w:line="264" w:lineRule="auto"/></w:pPr></w:pPrDefault></w:docDefaults>` +
	`<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>` +
	`<w:style w:type="character" w:default="1" w:styleId="DefaultParagraphFont"><w:name w:val="Default Paragraph Font"/><w:uiPriority w:val="1"/><w:semiHidden/></w:style>` +
	`<w:style w:type="table" w:default="1" w:styleId="TableNormal"><w:name w:val="Normal Table"/><w:semiHidden/>` +
	`<w:tblPr><w:tblInd w:w="0" w:type="dxa"/><w:tblCellMar><w:top w:w="0" w:type="dxa"/><w:left w:w="108" w:type="dxa"/>` +
	`<w:bottom w:w="0" w:type="dxa"/><w:right w:w="108" w:type="dxa"/></w:tblCellMar></w:tblPr></w:style>` +
	headingStyles() +
	`<w:style w:type="paragraph" w:styleId="Quote"><w:name w:val="Quote"/><w:basedOn w:val="Normal"/><w:qFormat/>` +
	`<w:pPr><w:pBdr><w:left w:val="single" w:sz="18" w:space="8" w:color="D0D0D0"/></w:pBdr></w:pPr><w:rPr><w:i/><w:color w:val="595959"/></w:rPr></w:style>` +
	`<w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/><w:basedOn w:val="Normal"/><w:qFormat/>` +
	`<w:pPr><w:spacing w:after="60"/><w:contextualSpacing/></w:pPr></w:style>` +
	`<w:style w:type="paragraph" w:styleId="SourceCode"><w:name w:val="Source Code"/><w:basedOn w:val="Normal"/>` +
	`<w:pPr><w:shd w:val="clear" w:color="auto" w:fill="F5F5F5"/><w:spacing w:after="120" w:line="240" w:lineRule="auto"/></w:pPr>` +
	`<w:rPr><w:rFonts w:ascii="Consolas" w:hAnsi="Consolas" w:cs="Consolas"/><w:sz w:val="19"/><w:szCs w:val="19"/></w:rPr></w:style>` +
	`<w:style w:type="character" w:styleId="VerbatimChar"><w:name w:val="Verbatim Char"/>` +
	`<w:rPr><w:rFonts w:ascii="Consolas" w:hAnsi="Consolas" w:cs="Consolas"/><w:sz w:val="20"/><w:shd w:val="clear" w:color="auto" w:fill="F0F0F0"/></w:rPr></w:style>` +
	`<w:style w:type="character" w:styleId="Hyperlink"><w:name w:val="Hyperlink"/><w:rPr><w:color w:val="0563C1"/><w:u w:val="single"/></w:rPr></w:style>` +
	`<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/><w:basedOn w:val="TableNormal"/>` +
	`<w:tblPr><w:tblBorders><w:top w:val="single" w:sz="4" w:space="0" w:color="A6A6A6"/><w:left w:val="single" w:sz="4" w:space="0" w:color="A6A6A6"/>` +
	`<w:bottom w:val="single" w:sz="4" w:space="0" w:color="A6A6A6"/><w:right w:val="single" w:sz="4" w:space="0" w:color="A6A6A6"/>` +
	`<w:insideH w:val="single" w:sz="4" w:space="0" w:color="A6A6A6"/><w:insideV w:val="single" w:sz="4" w:space="0" w:color="A6A6A6"/></w:tblBorders></w:tblPr></w:style>` +
	`</w:styles>`

// headingStyles are the styles Heading1 to Heading6, with the outline levels Word's navigation
// reads.
func headingStyles() string {
	var b strings.Builder
	sizes := []int{32, 28, 26, 24, 22, 22}
	for i, size := range sizes {
		fmt.Fprintf(&b, `<w:style w:type="paragraph" w:styleId="Heading%d"><w:name w:val="heading %d"/><w:basedOn w:val="Normal"/>`+
			`<w:next w:val="Normal"/><w:qFormat/><w:pPr><w:keepNext/><w:keepLines/><w:spacing w:before="240" w:after="120"/>`+
			`<w:outlineLvl w:val="%d"/></w:pPr><w:rPr><w:b/><w:bCs/><w:color w:val="1F3864"/><w:sz w:val="%d"/><w:szCs w:val="%d"/></w:rPr></w:style>`,
			i+1, i+1, i, size, size)
	}
	return b.String()
}
