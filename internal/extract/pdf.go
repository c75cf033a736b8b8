package extract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ledongthuc/pdf"
)

// Limits on what a PDF file may decompress to. Streams are read through
// capped readers, so a stream is rejected as soon as it passes its cap,
// before its content is held in memory.
const (
	// MaxPDFStreamSize caps the decompressed size of any single PDF stream
	// the extractor reads: a page content stream, an object stream, a
	// cross-reference stream. Content streams of real pages take from a few
	// kilobytes to a few megabytes even for dense vector drawings; a stream
	// that inflates past this is a decompression bomb.
	MaxPDFStreamSize = 64 << 20
	// MaxPDFFontMapSize caps the decompressed size of a font's ToUnicode
	// CMap. A complete map for a CJK font, every glyph listed, takes about
	// 1 MB; the PDF library parses these maps with memory several times
	// their size, so the cap is lower than for content streams.
	MaxPDFFontMapSize = 4 << 20
	// MaxPDFDecompressedSize caps the decompressed bytes of all the streams
	// read from one PDF file together, so that many streams each under
	// MaxPDFStreamSize cannot add up to a bomb. Text-heavy documents of
	// thousands of pages stay well below it, and extraction stops anyway
	// once MaxTextSize of text has been collected.
	MaxPDFDecompressedSize = 512 << 20
)

const (
	// pdfMaxTreeDepth bounds the nesting of the page tree (pdfium uses the
	// same limit); cycles are detected separately.
	pdfMaxTreeDepth = 1024
	// pdfMaxOperandBytes bounds the operands collected before one content
	// stream operator (a single text string, or a TJ array, is far smaller).
	pdfMaxOperandBytes = 4 << 20
	// pdfMaxOperands bounds the number of operands before one operator.
	pdfMaxOperands = 1 << 16
	// pdfMaxDifferences bounds a font's /Differences array: 256 codes and
	// 256 glyph names at most, in a well-formed file.
	pdfMaxDifferences = 1024
)

// pdfMaxPageNodes bounds the page tree nodes visited for a file of the given
// size: every node is an object of its own, and no object takes less than a
// few bytes, even compressed.
func pdfMaxPageNodes(size int) int {
	return size/4 + 1024
}

type pdfLimits struct {
	stream, fontMap, total int64
}

var defaultPDFLimits = pdfLimits{stream: MaxPDFStreamSize, fontMap: MaxPDFFontMapSize, total: MaxPDFDecompressedSize}

// pdfBudget counts the decompressed bytes read from one file.
type pdfBudget struct {
	limits pdfLimits
	used   int64
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// cappedReader fails with a KindTooLarge error once the stream has produced
// more than max bytes, or (b not nil) the file's streams together more than
// the total.
type cappedReader struct {
	r    io.Reader
	max  int64
	n    int64
	what string
	b    *pdfBudget
	err  error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.b != nil {
		c.b.used += int64(n)
	}
	switch {
	case c.n > c.max:
		c.err = newError(KindTooLarge, nil, "PDF %s exceeds %s when decompressed", c.what, sizeText(c.max))
	case c.b != nil && c.b.used > c.b.limits.total:
		c.err = newError(KindTooLarge, nil, "PDF streams exceed %s in total when decompressed", sizeText(c.b.limits.total))
	}
	if c.err != nil {
		return 0, c.err
	}
	return n, err
}

// extractPDF mirrors Dify's PdfExtractor (docs/knowledge.md): one part per page,
// in page order, with Pages carrying the 1-based page numbers. Text is
// joined with "\n\n" between pages. Blank pages are kept in Pages but not in
// Parts. Embedded images are not extracted.
func extractPDF(ctx context.Context, data []byte) (Document, error) {
	return extractPDFLimited(ctx, data, defaultPDFLimits)
}

// extractPDFLimited is extractPDF with explicit decompression limits.
//
// The PDF library is used for parsing the file, resolving objects and
// decoding fonts, but not for walking the page tree or interpreting content
// streams: its walks trust the file (a page tree node listing itself, or a
// /Parent chain that loops, makes them spin forever) and its interpreter
// builds a page's whole text, and any number of operands, in memory.
func extractPDFLimited(ctx context.Context, data []byte, lim pdfLimits) (Document, error) {
	budget := &pdfBudget{limits: lim}
	data, err := checkPDFXref(ctx, data, budget)
	if err != nil {
		return Document{}, err
	}
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Document{}, classifyPDF(err, data)
	}
	x := &pdfExtractor{ctx: ctx, budget: budget, fonts: map[string]*pdfFont{}}
	var (
		doc   Document
		limit textLimit
	)
	err = x.walkPages(r, pdfMaxPageNodes(len(data)), func(num int, page, resources pdf.Value) (bool, error) {
		text, err := x.pageText(num, page, resources, MaxTextSize+1024-limit.n)
		if err != nil {
			return false, err
		}
		text = strings.TrimSpace(text)
		doc.Pages = append(doc.Pages, Page{Number: num, Text: text})
		if text != "" {
			doc.Parts = append(doc.Parts, text)
			limit.add(text)
		}
		return limit.full(), nil
	})
	if err != nil {
		return Document{}, err
	}
	doc.Text = strings.Join(doc.Parts, "\n\n")
	return doc, nil
}

func classifyPDF(err error, data []byte) error {
	msg := err.Error()
	switch {
	case errors.Is(err, pdf.ErrInvalidPassword), strings.Contains(msg, "encrypt"):
		return newError(KindEncrypted, err, "PDF file is password protected")
	case bytes.Contains(data, []byte("/Encrypt")) && !strings.HasPrefix(msg, "not a PDF"):
		return newError(KindEncrypted, err, "PDF file is encrypted and could not be read")
	case strings.HasPrefix(msg, "not a PDF file: invalid header"):
		if bytes.HasPrefix(data, []byte("%PDF-2")) {
			return newError(KindUnsupported, err, "PDF 2.0 files are not supported")
		}
		return newError(KindCorrupt, err, "file is not a valid PDF")
	}
	return newError(KindCorrupt, err, "PDF file is corrupt or truncated")
}

type pdfExtractor struct {
	ctx    context.Context
	budget *pdfBudget
	// fonts caches font decoders and widths by the text of the font
	// dictionary: fonts are per-page resources (one name can mean different
	// fonts on different pages), but equal dictionaries, references
	// included, decode equally, and a font shared by every page is then
	// parsed once.
	fonts map[string]*pdfFont
}

const (
	pdfNotPage = iota
	pdfPageLeaf
	pdfPageNode
)

func pdfPageKind(v pdf.Value) int {
	if v.Kind() != pdf.Dict {
		return pdfNotPage
	}
	switch v.Key("Type").Name() {
	case "Pages":
		return pdfPageNode
	case "Page":
		return pdfPageLeaf
	}
	// A missing /Type, as pdfium reads it: a node with kids, or a page.
	if v.Key("Kids").Kind() == pdf.Array {
		return pdfPageNode
	}
	if !v.Key("Contents").IsNull() {
		return pdfPageLeaf
	}
	return pdfNotPage
}

// walkPages calls visit for every page in document order, with the page's
// resources inherited along the path from the root (ISO 32000-1 §7.7.3.4),
// until visit asks to stop. The walk is bounded: a node whose dictionary
// equals one of its ancestors' (the same object, or a copy that would repeat
// the same subtree forever) is a cycle; the depth and the number of nodes
// visited are capped.
func (x *pdfExtractor) walkPages(r *pdf.Reader, maxNodes int, visit func(num int, page, resources pdf.Value) (bool, error)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newError(KindCorrupt, fmt.Errorf("panic: %v", p), "PDF file is corrupt: its page tree could not be read")
		}
	}()
	root := r.Trailer().Key("Root").Key("Pages")
	switch pdfPageKind(root) {
	case pdfNotPage:
		return nil
	case pdfPageLeaf:
		_, err := visit(1, root, root.Key("Resources"))
		return err
	}
	type frame struct {
		kids      pdf.Value
		next      int
		resources pdf.Value
		sum       [sha256.Size]byte
	}
	stack := []frame{{kids: root.Key("Kids"), resources: root.Key("Resources"), sum: sha256.Sum256([]byte(root.String()))}}
	nodes, num := 1, 0
	for len(stack) > 0 {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		top := &stack[len(stack)-1]
		if top.next >= top.kids.Len() {
			stack = stack[:len(stack)-1]
			continue
		}
		kid := top.kids.Index(top.next)
		top.next++
		if nodes++; nodes > maxNodes {
			return pdfCorrupt("its page tree has more nodes than the file can hold")
		}
		resources := kid.Key("Resources")
		if resources.IsNull() {
			resources = top.resources
		}
		switch pdfPageKind(kid) {
		case pdfPageLeaf:
			num++
			if stop, err := visit(num, kid, resources); err != nil || stop {
				return err
			}
		case pdfPageNode:
			if len(stack) >= pdfMaxTreeDepth {
				return pdfCorrupt("its page tree is nested more than %d levels deep", pdfMaxTreeDepth)
			}
			sum := sha256.Sum256([]byte(kid.String()))
			for _, f := range stack {
				if f.sum == sum {
					return pdfCorrupt("its page tree contains a cycle")
				}
			}
			stack = append(stack, frame{kids: kid.Key("Kids"), resources: resources, sum: sum})
		}
	}
	return nil
}

// pageText returns the text of one page, stopping once it is longer than
// room bytes.
func (x *pdfExtractor) pageText(num int, page, resources pdf.Value, room int) (text string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newError(KindCorrupt, fmt.Errorf("panic: %v", p), "PDF file is corrupt: page %d could not be read", num)
		}
	}()
	contents := page.Key("Contents")
	streams := &pdfStreams{x: x}
	switch contents.Kind() {
	case pdf.Stream:
		streams.get, streams.n = func(int) pdf.Value { return contents }, 1
	case pdf.Array:
		streams.get, streams.n = contents.Index, contents.Len()
	default:
		return "", nil
	}
	run := newPDFTextRun(x, resources.Key("Font"), room)
	text, err = run.interpret(streams)
	if err != nil && !isExtractError(err) && !errors.Is(err, x.ctx.Err()) {
		err = newError(KindCorrupt, err, "PDF file is corrupt: page %d could not be read", num)
	}
	return text, err
}

// openStream measures the decoded size of stream v against limit and the
// file's total, then returns its data (capped again at limit), or nil if v is
// not a stream. Measuring first, by decompressing into nothing, rejects an
// oversized stream before any of it is interpreted or held.
func (x *pdfExtractor) openStream(v pdf.Value, what string, limit int64) (io.Reader, error) {
	if v.Kind() != pdf.Stream {
		return nil, nil
	}
	// The library allocates two rows of /Columns bytes for a PNG predictor.
	params := v.Key("DecodeParms")
	for i := 0; i < max(1, params.Len()); i++ {
		p := params
		if params.Kind() == pdf.Array {
			p = params.Index(i)
		}
		if !p.Key("Predictor").IsNull() {
			if c := p.Key("Columns").Int64(); c < 0 || c > pdfMaxColumns {
				return nil, pdfCorrupt("a stream has an invalid predictor row size")
			}
		}
	}
	measure := &cappedReader{r: v.Reader(), max: limit, what: what, b: x.budget}
	if _, err := io.Copy(io.Discard, ctxReader{x.ctx, measure}); err != nil {
		if isExtractError(err) || x.ctx.Err() != nil {
			return nil, err
		}
		// A damaged stream is reported where its reader meets the damage,
		// which may be after the text cap has been reached.
	}
	return &cappedReader{r: v.Reader(), max: limit, what: what}, nil
}

// pdfStreams reads the streams of a page's /Contents one after the other,
// opening each only when the previous one is exhausted, with a line break
// between them (content may be split between streams only at token
// boundaries, §7.8.2).
type pdfStreams struct {
	x   *pdfExtractor
	get func(int) pdf.Value
	n   int
	i   int
	cur io.Reader
	gap bool
}

func (s *pdfStreams) Read(p []byte) (int, error) {
	// Checked per read as well as per token: white space and comments
	// yield no tokens.
	if err := s.x.ctx.Err(); err != nil {
		return 0, err
	}
	for {
		if s.cur != nil {
			n, err := s.cur.Read(p)
			if errors.Is(err, io.EOF) {
				s.cur, s.gap = nil, true
				err = nil
			}
			if n > 0 || err != nil {
				return n, err
			}
			continue
		}
		if s.gap && len(p) > 0 {
			s.gap = false
			p[0] = '\n'
			return 1, nil
		}
		if s.i >= s.n {
			return 0, io.EOF
		}
		v := s.get(s.i)
		s.i++
		rd, err := s.x.openStream(v, "content stream", s.x.budget.limits.stream)
		if err != nil {
			return 0, err
		}
		s.cur = rd
	}
}

// font builds the library's decoder for a font, after checking what the
// library would read without bounds: the size of the ToUnicode map and the
// length of the /Differences array (which the library scans once per byte
// of text; the resulting per-byte table is precomputed instead). The glyph
// widths are read alongside (pdfFontWidths).
func (x *pdfExtractor) font(font pdf.Value) (*pdfFont, error) {
	key := font.String()
	if f, ok := x.fonts[key]; ok {
		return f, nil
	}
	encoding := font.Key("Encoding")
	switch encoding.Kind() {
	case pdf.Dict:
		if n := encoding.Key("Differences").Len(); n > pdfMaxDifferences {
			return nil, pdfCorrupt("a font encoding lists %d differences", n)
		}
	case pdf.Null, pdf.Name:
		if encoding.Kind() == pdf.Name && encoding.Name() != "Identity-H" {
			break // the library reads no ToUnicode map for the others
		}
		// Measured only: the library reads the map itself.
		if _, err := x.openStream(font.Key("ToUnicode"), "font map (ToUnicode CMap)", x.budget.limits.fontMap); err != nil {
			return nil, err
		}
	}
	lf := &pdf.Font{V: font}
	e := lf.Encoder()
	if encoding.Kind() == pdf.Dict {
		e = newPDFByteTable(e)
	}
	f := pdfFontWidths(font)
	f.enc = e
	x.fonts[key] = f
	return f, nil
}

type pdfNopEncoding struct{}

func (pdfNopEncoding) Decode(raw string) string { return raw }

// pdfByteTable is a single-byte encoding tabulated once.
type pdfByteTable [256]rune

// newPDFByteTable tabulates e, which must map every byte to exactly one rune
// independently of its neighbours (the library's /Differences encoding
// does); otherwise e is returned as is.
func newPDFByteTable(e pdf.TextEncoding) pdf.TextEncoding {
	var t pdfByteTable
	for b := range 256 {
		r := []rune(e.Decode(string([]byte{byte(b)})))
		if len(r) != 1 {
			return e
		}
		t[b] = r[0]
	}
	return &t
}

func (t *pdfByteTable) Decode(raw string) string {
	r := make([]rune, len(raw))
	for i := 0; i < len(raw); i++ {
		r[i] = t[raw[i]]
	}
	return string(r)
}

// skipInlineImage consumes the data of an inline image, from after its ID
// operator up to and including the EI operator (§8.9.7): "EI" preceded by
// white space and followed by white space, a delimiter or the end.
func skipInlineImage(lex *pdfLexer) {
	if _, ok := lex.readByte(); !ok { // the white space after ID
		return
	}
	b3, b2, b1 := byte(' '), byte(0), byte(0)
	for {
		c, ok := lex.readByte()
		if isPDFSpace(b3) && b2 == 'E' && b1 == 'I' && (!ok || isPDFSpace(c) || isPDFDelim(c)) {
			if ok && isPDFDelim(c) {
				lex.unreadByte()
			}
			return
		}
		if !ok {
			return
		}
		b3, b2, b1 = b2, b1, c
	}
}
