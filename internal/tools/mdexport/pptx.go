package mdexport

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/tools"
)

// convertPPTX is md_to_pptx: a 16:9 presentation, split into slides as pandoc (the plugin's
// converter) splits Markdown: headings above the slide level make section slides, headings at
// it start a slide titled by them, a horizontal rule starts an untitled one, and the slide level
// is the highest heading level that is followed by content rather than by another heading. Each
// table gets a slide of its own. Unlike pandoc, a slide whose text would overflow continues on
// another slide with the same title, and so does a long table.
func convertPPTX(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	doc, err := newDocument(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	slides, err := newDeck(doc).slides()
	if err != nil {
		return nil, "", err
	}
	data, err := packPPTX(ctx, slides, doc.title())
	if err != nil {
		return nil, "", err
	}
	files, _, err := single(in, ".pptx", mimePPTX, data)
	return files, templateNote(in.args, "pptx_template_file"), err
}

// Bounds of a deck.
const (
	// maxSlides bounds the slides of one presentation.
	maxSlides = 1000
	// slideLines is how many lines of body text a slide takes before the rest continues on
	// the next one (20 pt text in the body placeholder holds about a dozen).
	slideLines = 11
	// slideTableRows is how many rows of a table a slide shows, under its header row.
	slideTableRows = 10
)

// pptSlide is one slide: a title and paragraphs, or a title and part of a table.
type pptSlide struct {
	title []span
	// subtitle is a section slide's line under its title (the PPT plugin's title slide).
	subtitle []span
	section  bool
	paras    []pptPara
	table    *table
	rows     [][]cell
}

// pptPara is one paragraph of a slide's body.
type pptPara struct {
	level int
	// bullet is paraPlain, paraBullet or paraNumber; start is a numbered list's first number.
	bullet int
	start  int
	spans  []span
	// code is a line of a code block; quote a paragraph of a quote; bold a lower heading's.
	code, quote, bold bool
}

// Kinds of a slide paragraph's bullet.
const (
	paraPlain = iota
	paraBullet
	paraNumber
)

// deck splits a document into slides.
type deck struct {
	doc   *document
	level int
	out   []pptSlide
	// cur is the slide being filled (nil: none), title the title of the slides that continue it,
	// lines the lines of text it holds.
	cur   *pptSlide
	title []span
	lines float64
}

// newDeck is a deck of doc, its slide level found as pandoc finds it.
func newDeck(doc *document) *deck {
	level := 0
	for i, b := range doc.blocks {
		if b.kind != kindHeading {
			continue
		}
		if i+1 < len(doc.blocks) && doc.blocks[i+1].kind != kindHeading && (level == 0 || b.level < level) {
			level = b.level
		}
	}
	if level == 0 {
		level = 1
		for _, b := range doc.blocks {
			if b.kind == kindHeading && b.level > level {
				level = b.level
			}
		}
	}
	return &deck{doc: doc, level: level}
}

// slides splits the document.
func (d *deck) slides() ([]pptSlide, error) {
	for i := range d.doc.blocks {
		b := &d.doc.blocks[i]
		switch {
		case b.kind == kindHeading && b.level < d.level:
			d.out = append(d.out, pptSlide{title: b.spans, section: true})
			d.cur, d.title = nil, nil
		case b.kind == kindHeading && b.level == d.level:
			d.start(b.spans)
		case b.kind == kindRule:
			d.start(nil)
		case b.kind == kindTable:
			d.table(b.table)
		default:
			d.add(paragraphs(b, 0, false))
		}
		if len(d.out) > maxSlides {
			return nil, fmt.Errorf("the presentation would have more than %d slides", maxSlides)
		}
	}
	if len(d.out) == 0 {
		d.start(nil)
	}
	return d.out, nil
}

// start starts a slide titled title.
func (d *deck) start(title []span) {
	d.out = append(d.out, pptSlide{title: title})
	d.cur, d.title, d.lines = &d.out[len(d.out)-1], title, 0
}

// add adds the paragraphs of a block to the current slide: on a new slide of the same title
// if they do not fit in what is left of it, and continuing on further ones if they take more
// than a slide.
func (d *deck) add(paras []pptPara) {
	total := 0.0
	for _, p := range paras {
		total += p.weight()
	}
	if d.cur != nil && len(d.cur.paras) > 0 && d.lines+total > slideLines {
		d.start(d.title)
	}
	for _, p := range paras {
		w := p.weight()
		if d.cur == nil || d.cur.table != nil || (d.lines+w > slideLines && len(d.cur.paras) > 0) {
			d.start(d.title)
		}
		d.cur.paras = append(d.cur.paras, p)
		d.lines += w
	}
}

// table puts a table on slides of its own, slideTableRows rows to a slide, under the current
// title.
func (d *deck) table(t *table) {
	if d.cur != nil && len(d.cur.paras) == 0 && d.cur.table == nil {
		d.out = d.out[:len(d.out)-1] // the slide the table's heading started holds nothing else
	}
	for i := 0; i == 0 || i < len(t.rows); i += slideTableRows {
		d.start(d.title)
		d.cur.table = t
		d.cur.rows = t.rows[i:min(i+slideTableRows, len(t.rows))]
	}
}

// weight is how many lines a paragraph takes, roughly.
func (p pptPara) weight() float64 {
	perLine := 70 - 6*p.level
	if p.code {
		return 0.7 * float64(1+utf8.RuneCountInString(plain(p.spans))/100)
	}
	return float64(1 + utf8.RuneCountInString(plain(p.spans))/perLine)
}

// paragraphs is a block as slide paragraphs, level deep in lists.
func paragraphs(b *block, level int, quote bool) []pptPara {
	switch b.kind {
	case kindHeading:
		return []pptPara{{level: level, spans: b.spans, bold: true, quote: quote}}
	case kindParagraph:
		return []pptPara{{level: level, spans: b.spans, quote: quote}}
	case kindCode:
		var out []pptPara
		for line := range strings.SplitSeq(b.code, "\n") {
			out = append(out, pptPara{level: level, spans: []span{{text: strings.ReplaceAll(line, "\t", "    ")}}, code: true})
		}
		return out
	case kindQuote:
		var out []pptPara
		for i := range b.children {
			out = append(out, paragraphs(&b.children[i], level, true)...)
		}
		return out
	case kindList:
		return listParagraphs(b, level, quote)
	case kindTable:
		// A table inside a list or quote: its rows as lines of text.
		out := []pptPara{{level: level, spans: tableLine(b.table.header), bold: true}}
		for _, r := range b.table.rows {
			out = append(out, pptPara{level: level, spans: tableLine(r)})
		}
		return out
	}
	return nil
}

// listParagraphs is a list's items as bulleted or numbered paragraphs.
func listParagraphs(b *block, level int, quote bool) []pptPara {
	var out []pptPara
	kind := paraBullet
	if b.ordered {
		kind = paraNumber
	}
	for _, it := range b.items {
		rest := it.blocks
		first := pptPara{level: min(level, 8), bullet: kind, start: b.start, quote: quote}
		if len(rest) > 0 && rest[0].kind == kindParagraph {
			first.spans, rest = rest[0].spans, rest[1:]
		}
		switch it.task {
		case taskOpen:
			first.spans = append([]span{{text: "☐ "}}, first.spans...)
		case taskDone:
			first.spans = append([]span{{text: "☒ "}}, first.spans...)
		}
		out = append(out, first)
		for i := range rest {
			out = append(out, paragraphs(&rest[i], min(level+1, 8), quote)...)
		}
	}
	return out
}

// tableLine is a table row as one line of text, cells parted by " | ".
func tableLine(cells []cell) []span {
	var out []span
	for i, c := range cells {
		if i > 0 {
			out = append(out, span{text: " | "})
		}
		out = append(out, c...)
	}
	return out
}

// Geometry of the slides, in EMU (914400 to the inch): 16:9, and the title and body boxes.
const (
	slideWidth  = 12192000
	slideHeight = 6858000
	boxLeft     = 838200
	boxWidth    = 10515600
	titleTop    = 365125
	titleHeight = 1325563
	bodyTop     = 1825625
	bodyHeight  = 4351338
	rowHeight   = 370840
	// subtitleHeight is the height of a section slide's subtitle box.
	subtitleHeight = 914400
	levelIndent    = 342900
	// tableCharWidth is about the width of a character of table text (14 pt).
	tableCharWidth = 95000
)

// Namespaces of the presentation parts.
const (
	nsA = "http://schemas.openxmlformats.org/drawingml/2006/main"
	nsP = "http://schemas.openxmlformats.org/presentationml/2006/main"
	// pptxNS declares the namespaces on a presentation part's root.
	pptxNS = `xmlns:a="` + nsA + `" xmlns:r="` + nsR + `" xmlns:p="` + nsP + `"`
)

// packPPTX writes the package: the presentation, one master with one layout, the theme, and the
// slides.
func packPPTX(ctx context.Context, slides []pptSlide, title string) ([]byte, error) {
	overrides := [][2]string{
		{"/ppt/presentation.xml", "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"},
		{"/ppt/slideMasters/slideMaster1.xml", "application/vnd.openxmlformats-officedocument.presentationml.slideMaster+xml"},
		{"/ppt/slideLayouts/slideLayout1.xml", "application/vnd.openxmlformats-officedocument.presentationml.slideLayout+xml"},
		{"/ppt/theme/theme1.xml", "application/vnd.openxmlformats-officedocument.theme+xml"},
		{"/ppt/presProps.xml", "application/vnd.openxmlformats-officedocument.presentationml.presProps+xml"},
		{"/ppt/viewProps.xml", "application/vnd.openxmlformats-officedocument.presentationml.viewProps+xml"},
		{"/ppt/tableStyles.xml", "application/vnd.openxmlformats-officedocument.presentationml.tableStyles+xml"},
		{"/docProps/core.xml", contentTypeCoreProps},
	}
	presRels := []relationship{
		{id: "rId1", typ: relSlideMaster, target: "slideMasters/slideMaster1.xml"},
		{id: "rId2", typ: relTheme, target: "theme/theme1.xml"},
		{id: "rId3", typ: relPresProps, target: "presProps.xml"},
		{id: "rId4", typ: relViewProps, target: "viewProps.xml"},
		{id: "rId5", typ: relTableStyles, target: "tableStyles.xml"},
	}
	var slideParts []part
	var ids strings.Builder
	size := 0
	for i, s := range slides {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := strconv.Itoa(i + 1)
		w := &slideWriter{}
		content := w.slide(&s)
		size += len(content)
		if size > maxPartBytes {
			return nil, errPartTooLarge
		}
		overrides = append(overrides, [2]string{"/ppt/slides/slide" + n + ".xml", "application/vnd.openxmlformats-officedocument.presentationml.slide+xml"})
		presRels = append(presRels, relationship{id: "rIdS" + n, typ: relSlide, target: "slides/slide" + n + ".xml"})
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rIdS%s"/>`, 256+i, n)
		slideParts = append(slideParts,
			part{"ppt/slides/slide" + n + ".xml", content},
			part{"ppt/slides/_rels/slide" + n + ".xml.rels", relationshipsXML(append([]relationship{
				{id: "rId1", typ: relSlideLayout, target: "../slideLayouts/slideLayout1.xml"}}, w.rels...))})
	}
	presentation := xmlHeader + `<p:presentation ` + pptxNS + ` saveSubsetFonts="1">` +
		`<p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>` +
		`<p:sldIdLst>` + ids.String() + `</p:sldIdLst>` +
		fmt.Sprintf(`<p:sldSz cx="%d" cy="%d"/><p:notesSz cx="6858000" cy="9144000"/>`, slideWidth, slideHeight) +
		`</p:presentation>`
	parts := []part{
		{"[Content_Types].xml", contentTypesXML(overrides)},
		{"_rels/.rels", relationshipsXML([]relationship{
			{id: "rId1", typ: relOfficeDocument, target: "ppt/presentation.xml"},
			{id: "rId2", typ: relCoreProps, target: "docProps/core.xml"},
		})},
		{"docProps/core.xml", corePropsXML(title)},
		{"ppt/presentation.xml", presentation},
		{"ppt/_rels/presentation.xml.rels", relationshipsXML(presRels)},
		{"ppt/presProps.xml", xmlHeader + `<p:presentationPr ` + pptxNS + `/>`},
		{"ppt/viewProps.xml", xmlHeader + `<p:viewPr ` + pptxNS + `/>`},
		{"ppt/tableStyles.xml", xmlHeader + `<a:tblStyleLst xmlns:a="` + nsA + `" def="{5C22544A-7EE6-4342-B048-85BDC9FD1C3A}"/>`},
		{"ppt/slideMasters/slideMaster1.xml", slideMasterXML},
		{"ppt/slideMasters/_rels/slideMaster1.xml.rels", relationshipsXML([]relationship{
			{id: "rId1", typ: relSlideLayout, target: "../slideLayouts/slideLayout1.xml"},
			{id: "rId2", typ: relTheme, target: "../theme/theme1.xml"},
		})},
		{"ppt/slideLayouts/slideLayout1.xml", slideLayoutXML},
		{"ppt/slideLayouts/_rels/slideLayout1.xml.rels", relationshipsXML([]relationship{
			{id: "rId1", typ: relSlideMaster, target: "../slideMasters/slideMaster1.xml"},
		})},
		{"ppt/theme/theme1.xml", themeXML},
	}
	return packParts(append(parts, slideParts...))
}

// slideWriter writes one slide and collects its hyperlinks.
type slideWriter struct {
	b     strings.Builder
	rels  []relationship
	links map[string]string
}

// slide is the XML of one slide: its title placeholder, and its body placeholder or its table.
func (w *slideWriter) slide(s *pptSlide) string {
	w.b.WriteString(xmlHeader + `<p:sld ` + pptxNS + `><p:cSld><p:spTree>` +
		`<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>` +
		`<p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/><a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>`)
	if len(s.title) > 0 || s.section {
		w.b.WriteString(`<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr>` +
			`<p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr>`)
		if s.section {
			// A section slide: its title in the middle of the slide.
			fmt.Fprintf(&w.b, `<p:spPr><a:xfrm><a:off x="%d" y="%d"/><a:ext cx="%d" cy="%d"/></a:xfrm></p:spPr>`,
				boxLeft, (slideHeight-titleHeight)/2, boxWidth, titleHeight)
		} else {
			w.b.WriteString(`<p:spPr/>`)
		}
		w.b.WriteString(`<p:txBody><a:bodyPr/><a:lstStyle/><a:p>`)
		w.runs(s.title, runStyle{})
		w.b.WriteString(`</a:p></p:txBody></p:sp>`)
	}
	if len(s.subtitle) > 0 {
		// A text box under a section slide's title, centred.
		fmt.Fprintf(&w.b, `<p:sp><p:nvSpPr><p:cNvPr id="4" name="Subtitle 3"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr>`+
			`<p:spPr><a:xfrm><a:off x="%d" y="%d"/><a:ext cx="%d" cy="%d"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr>`+
			`<p:txBody><a:bodyPr wrap="square"><a:normAutofit/></a:bodyPr><a:lstStyle/><a:p><a:pPr algn="ctr"/>`,
			boxLeft, (slideHeight+titleHeight)/2, boxWidth, subtitleHeight)
		w.runs(s.subtitle, runStyle{size: 2400})
		w.b.WriteString(`</a:p></p:txBody></p:sp>`)
	}
	switch {
	case s.table != nil:
		w.table(s.table, s.rows)
	case len(s.paras) > 0:
		w.b.WriteString(`<p:sp><p:nvSpPr><p:cNvPr id="3" name="Content 2"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr>` +
			`<p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr><a:normAutofit/></a:bodyPr><a:lstStyle/>`)
		for _, p := range s.paras {
			w.paragraph(p)
		}
		w.b.WriteString(`</p:txBody></p:sp>`)
	}
	w.b.WriteString(`</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>`)
	return w.b.String()
}

// paragraph writes one body paragraph: its bullet, indentation and runs.
func (w *slideWriter) paragraph(p pptPara) {
	marL := p.level * levelIndent
	if p.quote {
		marL += levelIndent
	}
	switch p.bullet {
	case paraBullet:
		fmt.Fprintf(&w.b, `<a:p><a:pPr marL="%d" lvl="%d" indent="%d"><a:buFont typeface="Arial"/><a:buChar char="%s"/></a:pPr>`,
			marL+levelIndent, p.level, -levelIndent, []string{"•", "–", "◦"}[p.level%3])
	case paraNumber:
		fmt.Fprintf(&w.b, `<a:p><a:pPr marL="%d" lvl="%d" indent="%d"><a:buFont typeface="+mj-lt"/><a:buAutoNum type="arabicPeriod" startAt="%d"/></a:pPr>`,
			marL+levelIndent, p.level, -levelIndent, max(p.start, 1))
	default:
		spacing := ""
		if p.code {
			spacing = `<a:spcBef><a:spcPts val="0"/></a:spcBef>`
		}
		fmt.Fprintf(&w.b, `<a:p><a:pPr marL="%d" indent="0">%s<a:buNone/></a:pPr>`, marL, spacing)
	}
	st := runStyle{size: 2000, bold: p.bold, italic: p.quote, mono: p.code}
	if p.code {
		st.size = 1400
	}
	if len(p.spans) == 0 {
		fmt.Fprintf(&w.b, `<a:endParaRPr lang="en-US" sz="%d" dirty="0"/>`, st.size)
	}
	w.runs(p.spans, st)
	w.b.WriteString(`</a:p>`)
}

// runStyle is how a paragraph sets its runs: size in hundredths of a point (0: the
// placeholder's), bold, italic, monospaced.
type runStyle struct {
	size               int
	bold, italic, mono bool
}

// runs writes spans as runs.
func (w *slideWriter) runs(spans []span, st runStyle) {
	for _, s := range spans {
		if s.lineBreak {
			w.b.WriteString(`<a:br><a:rPr lang="en-US"/></a:br>`)
			continue
		}
		w.b.WriteString(`<a:r><a:rPr lang="en-US"`)
		if st.size > 0 {
			fmt.Fprintf(&w.b, ` sz="%d"`, st.size)
		}
		if st.bold || s.style&styleBold != 0 {
			w.b.WriteString(` b="1"`)
		}
		if st.italic || s.style&styleItalic != 0 || s.image {
			w.b.WriteString(` i="1"`)
		}
		if s.style&styleStrike != 0 {
			w.b.WriteString(` strike="sngStrike"`)
		}
		w.b.WriteString(` dirty="0">`)
		if st.mono || s.style&styleCode != 0 {
			w.b.WriteString(`<a:latin typeface="Consolas"/><a:cs typeface="Consolas"/>`)
		}
		if s.link != "" {
			fmt.Fprintf(&w.b, `<a:hlinkClick r:id="%s"/>`, w.linkID(s.link))
		}
		w.b.WriteString(`</a:rPr><a:t>` + esc(s.text) + `</a:t></a:r>`)
	}
}

// linkID is the relationship id of a hyperlink to target.
func (w *slideWriter) linkID(target string) string {
	if w.links == nil {
		w.links = map[string]string{}
	}
	if id, ok := w.links[target]; ok {
		return id
	}
	id := "rIdL" + strconv.Itoa(len(w.rels)+1)
	w.rels = append(w.rels, relationship{id: id, typ: relHyperlink, target: target, external: true})
	w.links[target] = id
	return id
}

// table writes a table's header row and rows as a DrawingML table: the header shaded in the
// theme's accent colour, thin grey borders, columns as wide as their text needs.
func (w *slideWriter) table(t *table, rows [][]cell) {
	widths := columnShares(t, boxWidth, tableCharWidth)
	height := rowHeight * (len(rows) + 1)
	fmt.Fprintf(&w.b, `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="Table 3"/>`+
		`<p:cNvGraphicFramePr><a:graphicFrameLocks noGrp="1"/></p:cNvGraphicFramePr><p:nvPr/></p:nvGraphicFramePr>`+
		`<p:xfrm><a:off x="%d" y="%d"/><a:ext cx="%d" cy="%d"/></p:xfrm>`+
		`<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblPr firstRow="1" bandRow="1"/><a:tblGrid>`,
		boxLeft, bodyTop, boxWidth, height)
	for _, wd := range widths {
		fmt.Fprintf(&w.b, `<a:gridCol w="%d"/>`, wd)
	}
	w.b.WriteString(`</a:tblGrid>`)
	w.tableRow(t.header, t.align, true)
	for _, r := range rows {
		w.tableRow(r, t.align, false)
	}
	w.b.WriteString(`</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`)
}

// tableRow writes one table row.
func (w *slideWriter) tableRow(cells []cell, align []alignment, header bool) {
	fmt.Fprintf(&w.b, `<a:tr h="%d">`, rowHeight)
	for i, c := range cells {
		w.b.WriteString(`<a:tc><a:txBody><a:bodyPr/><a:lstStyle/><a:p>`)
		if algn := map[alignment]string{alignCenter: "ctr", alignRight: "r"}[align[i]]; algn != "" {
			w.b.WriteString(`<a:pPr algn="` + algn + `"/>`)
		}
		if len(c) == 0 {
			w.b.WriteString(`<a:endParaRPr lang="en-US" sz="1400" dirty="0"/>`)
		}
		w.runs(c, runStyle{size: 1400, bold: header})
		w.b.WriteString(`</a:p></a:txBody><a:tcPr>`)
		for _, side := range []string{"lnL", "lnR", "lnT", "lnB"} {
			w.b.WriteString(`<a:` + side + ` w="12700"><a:solidFill><a:srgbClr val="A6A6A6"/></a:solidFill></a:` + side + `>`)
		}
		if header {
			w.b.WriteString(`<a:solidFill><a:srgbClr val="D9E2F3"/></a:solidFill>`)
		}
		w.b.WriteString(`</a:tcPr></a:tc>`)
	}
	w.b.WriteString(`</a:tr>`)
}

// placeholderShapes are the title and body placeholders of the master and its layout, at the
// positions the slides inherit.
var placeholderShapes = fmt.Sprintf(`<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title Placeholder 1"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr>`+
	`<p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="%d" y="%d"/><a:ext cx="%d" cy="%d"/></a:xfrm>`+
	`<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr><p:txBody><a:bodyPr vert="horz" anchor="ctr"><a:normAutofit/></a:bodyPr>`+
	`<a:lstStyle/><a:p><a:endParaRPr lang="en-US"/></a:p></p:txBody></p:sp>`+
	`<p:sp><p:nvSpPr><p:cNvPr id="3" name="Text Placeholder 2"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr>`+
	`<p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="%d" y="%d"/><a:ext cx="%d" cy="%d"/></a:xfrm>`+
	`<a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr><p:txBody><a:bodyPr vert="horz"><a:normAutofit/></a:bodyPr>`+
	`<a:lstStyle/><a:p><a:endParaRPr lang="en-US"/></a:p></p:txBody></p:sp>`,
	boxLeft, titleTop, boxWidth, titleHeight, boxLeft, bodyTop, boxWidth, bodyHeight)

// groupShape is the properties of a slide's shape tree.
const groupShape = `<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>` +
	`<p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/><a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>`

// slideMasterXML is the one slide master: the placeholders, the theme's colours mapped, and the
// text styles of titles and bodies.
var slideMasterXML = xmlHeader + `<p:sldMaster ` + pptxNS + `><p:cSld><p:bg><p:bgRef idx="1001"><a:schemeClr val="bg1"/></p:bgRef></p:bg>` +
	`<p:spTree>` + groupShape + placeholderShapes + `</p:spTree></p:cSld>` +
	`<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" ` +
	`accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/>` +
	`<p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst>` +
	`<p:txStyles><p:titleStyle><a:lvl1pPr algn="l" rtl="0" eaLnBrk="1" latinLnBrk="0" hangingPunct="1"><a:lnSpc><a:spcPct val="90000"/></a:lnSpc>` +
	`<a:spcBef><a:spcPct val="0"/></a:spcBef><a:buNone/><a:defRPr sz="4000" kern="1200"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill>` +
	`<a:latin typeface="+mj-lt"/><a:ea typeface="+mj-ea"/><a:cs typeface="+mj-cs"/></a:defRPr></a:lvl1pPr></p:titleStyle>` +
	`<p:bodyStyle>` + bodyLevels() + `</p:bodyStyle>` +
	`<p:otherStyle><a:defPPr><a:defRPr lang="en-US"/></a:defPPr></p:otherStyle></p:txStyles></p:sldMaster>`

// bodyLevels are the nine levels of the body style: bulleted, each indented further.
func bodyLevels() string {
	var b strings.Builder
	for l := range 9 {
		fmt.Fprintf(&b, `<a:lvl%dpPr marL="%d" indent="%d" algn="l" rtl="0" eaLnBrk="1" latinLnBrk="0" hangingPunct="1">`+
			`<a:lnSpc><a:spcPct val="90000"/></a:lnSpc><a:spcBef><a:spcPts val="1000"/></a:spcBef><a:buFont typeface="Arial"/><a:buChar char="•"/>`+
			`<a:defRPr sz="2000" kern="1200"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill><a:latin typeface="+mn-lt"/>`+
			`<a:ea typeface="+mn-ea"/><a:cs typeface="+mn-cs"/></a:defRPr></a:lvl%dpPr>`, l+1, (l+1)*levelIndent, -levelIndent, l+1)
	}
	return b.String()
}

// slideLayoutXML is the one layout, "Title and Content".
var slideLayoutXML = xmlHeader + `<p:sldLayout ` + pptxNS + ` type="obj" preserve="1"><p:cSld name="Title and Content"><p:spTree>` +
	groupShape +
	`<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr>` +
	`<p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/><a:p><a:endParaRPr lang="en-US"/></a:p></p:txBody></p:sp>` +
	`<p:sp><p:nvSpPr><p:cNvPr id="3" name="Content Placeholder 2"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr>` +
	`<p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/><a:p><a:endParaRPr lang="en-US"/></a:p></p:txBody></p:sp>` +
	`</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>`

// themeXML is the theme: Office's colours and fonts, and the plain fill, line and effect styles
// a theme must list three of each.
var themeXML = xmlHeader + `<a:theme xmlns:a="` + nsA + `" name="Parley"><a:themeElements>` +
	`<a:clrScheme name="Office"><a:dk1><a:sysClr val="windowText" lastClr="000000"/></a:dk1><a:lt1><a:sysClr val="window" lastClr="FFFFFF"/></a:lt1>` +
	`<a:dk2><a:srgbClr val="44546A"/></a:dk2><a:lt2><a:srgbClr val="E7E6E6"/></a:lt2><a:accent1><a:srgbClr val="4472C4"/></a:accent1>` +
	`<a:accent2><a:srgbClr val="ED7D31"/></a:accent2><a:accent3><a:srgbClr val="A5A5A5"/></a:accent3><a:accent4><a:srgbClr val="FFC000"/></a:accent4>` +
	`<a:accent5><a:srgbClr val="5B9BD5"/></a:accent5><a:accent6><a:srgbClr val="70AD47"/></a:accent6><a:hlink><a:srgbClr val="0563C1"/></a:hlink>` +
	`<a:folHlink><a:srgbClr val="954F72"/></a:folHlink></a:clrScheme>` +
	`<a:fontScheme name="Office"><a:majorFont><a:latin typeface="Calibri Light"/><a:ea typeface=""/><a:cs typeface=""/></a:majorFont>` +
	`<a:minorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont></a:fontScheme>` +
	`<a:fmtScheme name="Office"><a:fillStyleLst><a:solidFill><a:schemeClr val="phClr"/></a:solidFill>` +
	`<a:solidFill><a:schemeClr val="phClr"><a:tint val="50000"/></a:schemeClr></a:solidFill>` +
	`<a:solidFill><a:schemeClr val="phClr"><a:shade val="80000"/></a:schemeClr></a:solidFill></a:fillStyleLst>` +
	`<a:lnStyleLst><a:ln w="6350"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln>` +
	`<a:ln w="12700"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln>` +
	`<a:ln w="19050"><a:solidFill><a:schemeClr val="phClr"/></a:solidFill></a:ln></a:lnStyleLst>` +
	`<a:effectStyleLst><a:effectStyle><a:effectLst/></a:effectStyle><a:effectStyle><a:effectLst/></a:effectStyle>` +
	`<a:effectStyle><a:effectLst/></a:effectStyle></a:effectStyleLst>` +
	`<a:bgFillStyleLst><a:solidFill><a:schemeClr val="phClr"/></a:solidFill>` +
	`<a:solidFill><a:schemeClr val="phClr"><a:tint val="95000"/></a:schemeClr></a:solidFill>` +
	`<a:solidFill><a:schemeClr val="phClr"><a:shade val="90000"/></a:schemeClr></a:solidFill></a:bgFillStyleLst></a:fmtScheme>` +
	`</a:themeElements><a:objectDefaults/><a:extraClrSchemeLst/></a:theme>`
