package extract

import (
	"io"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// Text layout from positions. A PDF page holds no spaces between words or
// line breaks between lines unless its producer chose to write them: most
// place every line, and many every word, at a position of its own. The
// interpreter below follows the text position (ISO 32000-1 §9.4) in device
// space and, each time text is shown, compares where it starts with where the
// previously shown text ended, measured in the larger of the two font sizes
// (h) along the new text's baseline and across it:
//
//   - up the page by more than pdfSameLine h (a new column, or content
//     written out of order), or down by more than pdfParagraphGap h: a blank
//     line, as between paragraphs;
//   - down by more than pdfSameLine h: a line break;
//   - on the same line, ending where the previous text started (right-to-left
//     text written in logical order): nothing, or a space for a gap of more
//     than pdfWordGap h, if the widths of both texts are known;
//   - on the same line, otherwise starting at or before where the previous
//     text started: a line break (text objects placed at one origin,
//     overprinting);
//   - on the same line, more than pdfWordGap h after its end: a space (word
//     gaps made by positioning, as Cairo and pdfTeX write them).
//
// Inside one TJ array the adjustments between strings decide alone: one of
// pdfWordGap em or more to the right is a space.
//
// A line break after a letter and a hyphen, before a lower-case letter, is
// taken for a word hyphenated at the end of the line: the hyphen and the
// break are removed ("employ-" / "ee" gives "employee"). Compounds that
// happen to break at their own hyphen ("well-" / "known") are joined too;
// a hyphen before a capital, after a digit or a space, or before a blank
// line is kept.
const (
	// pdfSameLine is how far across the baseline text may move and stay on
	// the same line: superscripts and subscripts move less.
	pdfSameLine = 0.5
	// pdfParagraphGap is the line step above which a blank line is written.
	// Lines of a paragraph are 1.0 to 1.4 font sizes apart; paragraphs
	// separated by spacing are 1.7 or more.
	pdfParagraphGap = 1.6
	// pdfWordGap is the smallest horizontal gap read as a space. Justified
	// text shrinks spaces to about 0.22 em at the tightest; kerning moves
	// glyphs by 0.1 em at most.
	pdfWordGap = 0.2
	// pdfGuessedWordGap replaces pdfWordGap when the glyph widths of either
	// text are unknown (a standard font without /Widths) and its end is an
	// estimate of pdfGuessedWidth per glyph.
	pdfGuessedWordGap = 1.0
	pdfGuessedWidth   = 600 // glyph space units (thousandths of an em)
	// pdfRTLOverlap is how far text may overlap the start of the previous
	// text and still be read as its right-to-left continuation, and
	// pdfMaxRTLGap how far away it may end.
	pdfRTLOverlap = 0.1
	pdfMaxRTLGap  = 2.0
	// pdfMaxSavedStates bounds the graphics state stack (q/Q); deeper
	// saves are counted but not kept, so their restores change nothing.
	pdfMaxSavedStates = 1024
	// pdfMaxWidthRanges bounds the width ranges read from a composite
	// font's /W array; codes past them take the default width.
	pdfMaxWidthRanges = 1 << 16
)

// pdfMatrix is a PDF transformation matrix [a b c d e f] (§8.3.3).
type pdfMatrix [6]float64

var pdfIdentity = pdfMatrix{1, 0, 0, 1, 0, 0}

// mul returns m × n: m applied first, then n.
func (m pdfMatrix) mul(n pdfMatrix) pdfMatrix {
	return pdfMatrix{
		m[0]*n[0] + m[1]*n[2],
		m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2],
		m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4],
		m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func pdfTranslate(tx, ty float64) pdfMatrix { return pdfMatrix{1, 0, 0, 1, tx, ty} }

// pdfFont is a page font: its decoder, and its glyph widths.
type pdfFont struct {
	enc pdf.TextEncoding
	// codeLen is the bytes per character code: 2 for composite (Type0)
	// fonts, whose CMaps are taken to be two-byte ones (Identity-H and
	// most CJK CMaps), 1 otherwise.
	codeLen int
	// unit converts glyph space to text space: 1/1000, or a Type3 font's
	// FontMatrix.
	unit float64
	// Simple fonts: widths by code, if the font has /Widths.
	widths     *[256]float64
	composite  bool
	cidRanges  []pdfWidthRange // composite fonts, sorted by first
	cidDefault float64
}

type pdfWidthRange struct {
	first, last uint32
	w           float64
}

var pdfNoFont = &pdfFont{enc: pdfNopEncoding{}, codeLen: 1, unit: 0.001}

// width returns the width of the glyph of code in glyph space, and whether
// the font gives it.
func (f *pdfFont) width(code uint32) (float64, bool) {
	switch {
	case f.composite:
		i, _ := slices.BinarySearchFunc(f.cidRanges, code, func(r pdfWidthRange, c uint32) int {
			if r.first <= c {
				return -1
			}
			return 1
		})
		if i > 0 && code <= f.cidRanges[i-1].last {
			return f.cidRanges[i-1].w, true
		}
		return f.cidDefault, true
	case f.widths != nil && code < 256:
		return f.widths[code], true
	}
	return 0, false
}

// pdfFontWidths reads the widths of a font dictionary (§9.2.4, §9.7.4.3).
func pdfFontWidths(font pdf.Value) *pdfFont {
	f := &pdfFont{codeLen: 1, unit: 0.001}
	switch font.Key("Subtype").Name() {
	case "Type0":
		f.codeLen = 2
		f.composite = true
		desc := font.Key("DescendantFonts").Index(0)
		f.cidDefault = 1000
		if dw := desc.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			f.cidDefault = dw.Float64()
		}
		f.cidRanges = pdfCIDWidths(desc.Key("W"))
		return f
	case "Type3":
		if m := font.Key("FontMatrix"); m.Len() == 6 && m.Index(0).Float64() > 0 {
			f.unit = m.Index(0).Float64()
		}
	}
	w := font.Key("Widths")
	if w.Kind() != pdf.Array {
		return f
	}
	f.widths = new([256]float64)
	missing := font.Key("FontDescriptor").Key("MissingWidth").Float64()
	for i := range f.widths {
		f.widths[i] = missing
	}
	first := font.Key("FirstChar").Int64()
	for i := range min(w.Len(), 256) {
		if c := first + int64(i); c >= 0 && c < 256 {
			f.widths[c] = w.Index(i).Float64()
		}
	}
	return f
}

// pdfCIDWidths reads a /W array: "c [w1 w2 …]" gives codes c, c+1, … their
// widths, "c1 c2 w" gives every code from c1 to c2 the width w.
func pdfCIDWidths(w pdf.Value) []pdfWidthRange {
	var ranges []pdfWidthRange
	isNum := func(v pdf.Value) bool { return v.Kind() == pdf.Integer || v.Kind() == pdf.Real }
	for i, n := 0, w.Len(); i+1 < n && len(ranges) < pdfMaxWidthRanges; {
		first, next := w.Index(i), w.Index(i+1)
		if !isNum(first) || first.Float64() < 0 {
			break
		}
		c := uint32(min(first.Float64(), math.MaxUint32))
		if next.Kind() == pdf.Array {
			for j := 0; j < next.Len() && len(ranges) < pdfMaxWidthRanges; j++ {
				ranges = append(ranges, pdfWidthRange{c + uint32(j), c + uint32(j), next.Index(j).Float64()})
			}
			i += 2
			continue
		}
		last := w.Index(i + 2)
		if !isNum(next) || !isNum(last) || next.Float64() < first.Float64() {
			break
		}
		ranges = append(ranges, pdfWidthRange{c, uint32(min(next.Float64(), math.MaxUint32)), last.Float64()})
		i += 3
	}
	slices.SortStableFunc(ranges, func(a, b pdfWidthRange) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	return ranges
}

// pdfGraphicsState is the part of the graphics state that q and Q save
// and restore and that places text: the CTM and the text state (§8.4.1).
type pdfGraphicsState struct {
	ctm                  pdfMatrix
	font                 *pdfFont
	size, leading        float64
	charSpace, wordSpace float64
	scale                float64 // horizontal scaling, 1 = 100%
}

// pdfOperand is one operand of a content stream operator. Numbers are kept
// unboxed: coordinates are most of a page's content.
type pdfOperand struct {
	v     any
	num   float64
	isNum bool
}

type pdfPoint struct{ x, y float64 }

// pdfTextRun interprets the text and positioning operators of one page's
// content and lays its text out (see the top of this file). Other operators
// are ignored; Form XObjects (Do) are not entered, as in the PDF library.
type pdfTextRun struct {
	x     *pdfExtractor
	fonts pdf.Value // the page's /Font resource dictionary
	names map[string]bool
	byRes map[string]*pdfFont
	out   []byte
	room  int

	gs       pdfGraphicsState
	saved    []pdfGraphicsState
	lost     int // saves past pdfMaxSavedStates not yet restored
	tm, tlm  pdfMatrix
	shown    bool // some text was written
	last     pdfPoint
	lastEnd  pdfPoint
	lastSize float64
	lastSure bool // the end of the last text is known, not estimated
}

func newPDFTextRun(x *pdfExtractor, fonts pdf.Value, room int) *pdfTextRun {
	return &pdfTextRun{
		x: x, fonts: fonts, room: room,
		gs: pdfGraphicsState{ctm: pdfIdentity, font: pdfNoFont, scale: 1},
		tm: pdfIdentity, tlm: pdfIdentity,
	}
}

func (t *pdfTextRun) interpret(rd io.Reader) (string, error) {
	lex := newPDFLexer(rd, pdfMaxOperandBytes)
	p := &pdfParser{lex: lex, left: pdfMaxOperandBytes}
	var stack []pdfOperand
	for tokens := 0; ; tokens++ {
		if tokens&1023 == 0 {
			if err := t.x.ctx.Err(); err != nil {
				return "", err
			}
		}
		tok := lex.next()
		var operand pdfOperand
		switch {
		case tok.kind == pdfEOF:
			if lex.err != nil {
				return "", lex.err
			}
			return string(t.out), nil
		case tok.kind == pdfKeyword && tok.s != "true" && tok.s != "false" && tok.s != "null":
			if err := t.op(tok.s, stack); err != nil {
				return "", err
			}
			clear(stack)
			stack = stack[:0]
			p.left = pdfMaxOperandBytes
			if tok.s == "ID" {
				skipInlineImage(lex)
			}
			if len(t.out) > t.room {
				return string(t.out), nil
			}
			continue
		case tok.kind == pdfInt:
			operand = pdfOperand{num: float64(tok.i), isNum: true}
		case tok.kind == pdfReal:
			operand = pdfOperand{num: tok.f, isNum: true}
		default:
			v, err := p.object(tok, 0)
			if err != nil {
				continue // a malformed operand is dropped
			}
			operand.v = v
		}
		if len(stack) < pdfMaxOperands {
			stack = append(stack, operand)
		}
	}
}

// pdfNumbers fills out with the numbers that are the last operands of args,
// reporting whether there are that many.
func pdfNumbers(args []pdfOperand, out []float64) bool {
	if len(args) < len(out) {
		return false
	}
	for i, a := range args[len(args)-len(out):] {
		if !a.isNum {
			return false
		}
		out[i] = a.num
	}
	return true
}

func (t *pdfTextRun) op(op string, args []pdfOperand) error {
	var last any
	if len(args) > 0 {
		last = args[len(args)-1].v
	}
	var n [6]float64
	switch op {
	case "q":
		if len(t.saved) < pdfMaxSavedStates {
			t.saved = append(t.saved, t.gs)
		} else {
			t.lost++
		}
	case "Q":
		if t.lost > 0 {
			t.lost--
		} else if len(t.saved) > 0 {
			t.gs = t.saved[len(t.saved)-1]
			t.saved = t.saved[:len(t.saved)-1]
		}
	case "cm":
		if pdfNumbers(args, n[:6]) {
			t.gs.ctm = pdfMatrix(n).mul(t.gs.ctm)
		}
	case "BT":
		t.tm, t.tlm = pdfIdentity, pdfIdentity
	case "Tm":
		if pdfNumbers(args, n[:6]) {
			t.tm, t.tlm = pdfMatrix(n), pdfMatrix(n)
		}
	case "Td", "TD":
		if pdfNumbers(args, n[:2]) {
			if op == "TD" {
				t.gs.leading = -n[1]
			}
			t.moveLine(n[0], n[1])
		}
	case "T*":
		t.moveLine(0, -t.gs.leading)
	case "TL":
		if pdfNumbers(args, n[:1]) {
			t.gs.leading = n[0]
		}
	case "Tc":
		if pdfNumbers(args, n[:1]) {
			t.gs.charSpace = n[0]
		}
	case "Tw":
		if pdfNumbers(args, n[:1]) {
			t.gs.wordSpace = n[0]
		}
	case "Tz":
		if pdfNumbers(args, n[:1]) {
			t.gs.scale = n[0] / 100
		}
	case "Tf":
		name := ""
		if len(args) > 0 {
			nm, _ := args[0].v.(pdfName)
			name = string(nm)
		}
		f, err := t.font(name)
		if err != nil {
			return err
		}
		t.gs.font = f
		if pdfNumbers(args, n[:1]) {
			t.gs.size = n[0]
		}
	case "Tj":
		if s, ok := last.(pdfString); ok {
			t.show(string(s), false, 0)
		}
	case "'", `"`:
		if op == `"` && len(args) >= 3 && pdfNumbers(args[:len(args)-1], n[:2]) {
			t.gs.wordSpace, t.gs.charSpace = n[0], n[1]
		}
		t.moveLine(0, -t.gs.leading)
		if s, ok := last.(pdfString); ok {
			t.show(string(s), false, 0)
		}
	case "TJ":
		arr, ok := last.(pdfArray)
		if !ok {
			break
		}
		first, kern := true, 0.0
		for _, e := range arr {
			var adj float64
			switch e := e.(type) {
			case pdfString:
				t.show(string(e), !first, kern)
				first, kern = false, 0
				continue
			case int64:
				adj = float64(e)
			case float64:
				adj = e
			default:
				continue
			}
			kern += adj
			t.tm = pdfTranslate(-adj/1000*t.gs.size*t.gs.scale, 0).mul(t.tm)
		}
	}
	return nil
}

// moveLine starts a new line offset from the start of the current one.
func (t *pdfTextRun) moveLine(tx, ty float64) {
	t.tlm = pdfTranslate(tx, ty).mul(t.tlm)
	t.tm = t.tlm
}

// show writes the text of the string raw, preceded by the separator its
// position calls for, and advances the text position past it. inArray says
// that raw follows another string of the same TJ array, kern (thousandths
// of an em) after it.
func (t *pdfTextRun) show(raw string, inArray bool, kern float64) {
	f := t.gs.font
	text := f.enc.Decode(raw)
	m := t.tm.mul(t.gs.ctm)
	adv, sure := t.advance(raw)
	if text != "" {
		start := pdfPoint{m[4], m[5]}
		end := pdfPoint{m[4] + adv*m[0], m[5] + adv*m[1]}
		size := math.Abs(t.gs.size) * math.Hypot(m[2], m[3])
		if t.shown {
			sep := pdfSepNone
			if inArray {
				if -kern/1000*t.gs.scale >= pdfWordGap {
					sep = pdfSepSpace
				}
			} else {
				sep = t.separator(start, end, m, size, sure)
			}
			t.separate(sep, text)
		}
		t.write(text)
		t.shown, t.last, t.lastEnd, t.lastSize, t.lastSure = true, start, end, size, sure
	}
	t.tm = pdfTranslate(adv, 0).mul(t.tm)
}

// advance returns the horizontal displacement of showing raw, in text space
// (§9.4.4), and whether the font gave every glyph's width (otherwise each
// unknown one counts pdfGuessedWidth).
func (t *pdfTextRun) advance(raw string) (float64, bool) {
	f, gs := t.gs.font, &t.gs
	sure := true
	var total float64
	for i := 0; i < len(raw); i += f.codeLen {
		code := uint32(raw[i])
		if f.codeLen == 2 && i+1 < len(raw) {
			code = code<<8 | uint32(raw[i+1])
		}
		w, ok := f.width(code)
		if !ok {
			w, sure = pdfGuessedWidth, false
		}
		a := w*f.unit*gs.size + gs.charSpace
		if f.codeLen == 1 && code == ' ' {
			a += gs.wordSpace
		}
		total += a
	}
	return total * gs.scale, sure
}

type pdfSeparator int

const (
	pdfSepNone pdfSeparator = iota
	pdfSepSpace
	pdfSepLine
	pdfSepParagraph
)

// separator decides what goes between the last text shown and text from
// start to end (device space) under the text rendering matrix m, in a font
// size of size device units.
func (t *pdfTextRun) separator(start, end pdfPoint, m pdfMatrix, size float64, sure bool) pdfSeparator {
	h := max(size, t.lastSize)
	l := math.Hypot(m[0], m[1])
	if !(h > 0) || !(l > 0) || math.IsInf(h, 0) || math.IsInf(l, 0) {
		return pdfSepLine // no usable geometry: as a new text object
	}
	// u along the baseline; v across it, pointing up the glyphs.
	ux, uy := m[0]/l, m[1]/l
	vx, vy := -uy, ux
	if vx*m[2]+vy*m[3] < 0 {
		vx, vy = -vx, -vy
	}
	dx, dy := start.x-t.lastEnd.x, start.y-t.lastEnd.y
	across := (dx*vx + dy*vy) / h
	gap := (dx*ux + dy*uy) / h
	back := ((start.x-t.last.x)*ux + (start.y-t.last.y)*uy) / h
	// For text right to left: from the end of the new text to the start
	// of the last one.
	rtlGap := ((t.last.x-end.x)*ux + (t.last.y-end.y)*uy) / h
	wordGap := pdfWordGap
	if !sure || !t.lastSure {
		wordGap = pdfGuessedWordGap
	}
	switch {
	case math.IsNaN(across) || math.IsNaN(gap) || math.IsNaN(back):
		return pdfSepLine
	case across > pdfSameLine || across < -pdfParagraphGap:
		return pdfSepParagraph
	case across < -pdfSameLine:
		return pdfSepLine
	case back < 0.01 && sure && t.lastSure && rtlGap > -pdfRTLOverlap && rtlGap <= pdfMaxRTLGap:
		// Ending where the last text starts: right-to-left text written
		// in logical order, a word or a glyph at a time.
		if rtlGap > pdfWordGap {
			return pdfSepSpace
		}
		return pdfSepNone
	case back < 0.01:
		return pdfSepLine
	case gap > wordGap:
		return pdfSepSpace
	}
	return pdfSepNone
}

// separate writes sep before text: nothing where white space is already
// there, and for a line break after a hyphenated word, nothing but the
// hyphen's removal.
func (t *pdfTextRun) separate(sep pdfSeparator, text string) {
	switch sep {
	case pdfSepSpace:
		first, _ := utf8.DecodeRuneInString(text)
		last, _ := utf8.DecodeLastRune(t.out)
		if !unicode.IsSpace(first) && !unicode.IsSpace(last) {
			t.out = append(t.out, ' ')
		}
	case pdfSepLine, pdfSepParagraph:
		for len(t.out) > 0 && (t.out[len(t.out)-1] == ' ' || t.out[len(t.out)-1] == '\t') {
			t.out = t.out[:len(t.out)-1]
		}
		if sep == pdfSepLine {
			if cut := pdfHyphenated(t.out, text); cut > 0 {
				t.out = t.out[:len(t.out)-cut]
				return
			}
		}
		want := int(sep - pdfSepSpace) // 1 or 2 line breaks
		have := 0
		for have < len(t.out) && t.out[len(t.out)-1-have] == '\n' {
			have++
		}
		if have == len(t.out) {
			return // nothing written yet but breaks
		}
		for ; have < want; have++ {
			t.out = append(t.out, '\n')
		}
	}
}

// pdfHyphenated returns the length of the hyphen ending out if out ends in
// a letter and a hyphen (or soft hyphen) and next starts with a lower-case
// letter, and 0 otherwise.
func pdfHyphenated(out []byte, next string) int {
	h, n := utf8.DecodeLastRune(out)
	if h != '-' && h != '\u00ad' {
		return 0
	}
	if before, _ := utf8.DecodeLastRune(out[:len(out)-n]); !unicode.IsLetter(before) {
		return 0
	}
	if first, _ := utf8.DecodeRuneInString(next); !unicode.IsLower(first) {
		return 0
	}
	return n
}

// write appends text, each invalid byte becoming U+FFFD as in the library.
func (t *pdfTextRun) write(s string) {
	if utf8.ValidString(s) {
		t.out = append(t.out, s...)
		return
	}
	for _, r := range s {
		t.out = utf8.AppendRune(t.out, r)
	}
}

// font returns the page font called name: none (bytes as they are, widths
// unknown) for a name the page does not define, as in the library.
func (t *pdfTextRun) font(name string) (*pdfFont, error) {
	if f, ok := t.byRes[name]; ok {
		return f, nil
	}
	if t.names == nil {
		t.names = map[string]bool{}
		for _, k := range t.fonts.Keys() {
			t.names[k] = true
		}
		t.byRes = map[string]*pdfFont{}
	}
	f := pdfNoFont
	if t.names[name] {
		var err error
		if f, err = t.x.font(t.fonts.Key(name)); err != nil {
			return nil, err
		}
	}
	t.byRes[name] = f
	return f, nil
}
