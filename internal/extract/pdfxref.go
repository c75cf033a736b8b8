package extract

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/ascii85"
	"fmt"
	"io"
)

// The PDF library reads the cross-reference sections and resolves objects
// with loops and recursion that trust the file: a /Prev chain that points
// back to itself is followed forever, an object declared to live inside an
// object stream that itself lives inside an object stream (or itself) recurses
// until the goroutine stack overflows, which kills the process, and /Extends
// chains between object streams are followed without a visited set. Sizes are
// trusted too: the library allocates one table entry per declared object
// number. checkPDFXref parses the same structures first, bounded, and rejects
// what would make the library loop, recurse or allocate without limit.
// Anything it cannot make sense of is left to the library, which then fails
// with an error of its own: only the dangerous shapes are rejected here.

const (
	// pdfSpecMaxObjects is the PDF 1.7 implementation limit on indirect
	// objects in a file (ISO 32000-1 Annex C).
	pdfSpecMaxObjects = 8_388_607
	// pdfMaxXrefSections bounds the /Prev chain (one section per
	// incremental update).
	pdfMaxXrefSections = 4096
	// pdfMaxExtends bounds a chain of object streams linked by /Extends.
	pdfMaxExtends = 64
	// pdfMaxColumns bounds the /Columns of a PNG predictor: the library
	// allocates two rows of that size per stream.
	pdfMaxColumns = 1 << 20
	// pdfMaxRefChase bounds the objects looked at while checking what an
	// object stream's dictionary refers to.
	pdfMaxRefChase = 256
)

// pdfMaxObjects is the highest object count accepted for a file of the given
// size: the specification's limit, and no more than one object per 16 bytes
// of file (plus slack for small files), so a few hundred bytes cannot make
// the library allocate a table for millions of objects.
func pdfMaxObjects(size int) int64 {
	return min(pdfSpecMaxObjects, int64(size)/16+65_536)
}

// xrefEntry mirrors one entry of the library's cross-reference table, merged
// the same way (the newest section wins; an entry counts as set when its
// object pointer is not zero).
type xrefEntry struct {
	num      int64
	gen      int64
	inStream bool
	stream   int64 // object stream number, for entries in an object stream
	offset   int64
}

func (e xrefEntry) set() bool { return e.num != 0 || e.gen != 0 }

type pdfXrefCheck struct {
	ctx       context.Context
	data      []byte
	maxObj    int64
	budget    *pdfBudget
	entries   []xrefEntry
	encrypted bool
	// classicEnd is one past the highest object number the classic tables
	// declare; newest is the newest section when it is a classic one.
	classicEnd int64
	newest     *pdfClassicTrailer
}

// pdfClassicTrailer is where the newest classic section starts, its trailer
// dictionary's bytes and its /Size.
type pdfClassicTrailer struct {
	xrefOff int64
	dict    []byte
	size    int64
}

// checkPDFXref validates the cross-reference structure of data and returns
// what the library may read: data, or data repaired (see repairSize).
func checkPDFXref(ctx context.Context, data []byte, budget *pdfBudget) ([]byte, error) {
	c := &pdfXrefCheck{ctx: ctx, data: data, maxObj: pdfMaxObjects(len(data)), budget: budget}
	streams, err := c.readSections()
	if err != nil {
		return nil, err
	}
	if !streams {
		// Classic tables place every object in the file itself: nothing is
		// resolved through object streams.
		return c.repairSize(), nil
	}
	return data, c.checkObjectStreams()
}

// repairSize answers a file whose tables list more objects than its newest
// trailer's /Size says, as pdfunite writes them: the library drops every
// object past /Size (the catalog among them, so the file reads as one without
// pages and no text), where other readers take the tables as they are. The
// repair is an incremental update appended to a copy: an empty table and a
// trailer that is the newest one with /Size and /Prev set after its own
// entries (a dictionary's last entry for a key is the one read), so no offset
// in the file moves.
func (c *pdfXrefCheck) repairSize() []byte {
	t := c.newest
	if t == nil || t.size >= c.classicEnd {
		return c.data
	}
	dict := bytes.TrimSpace(t.dict)
	if !bytes.HasSuffix(dict, []byte(">>")) {
		return c.data
	}
	out := make([]byte, 0, len(c.data)+len(dict)+96)
	out = append(out, c.data...)
	at := len(out) + 1
	out = fmt.Appendf(out, "\nxref\n0 0\ntrailer\n%s /Size %d /Prev %d >>\nstartxref\n%d\n%%%%EOF\n",
		dict[:len(dict)-2], c.classicEnd, t.xrefOff, at)
	return out
}

func pdfCorrupt(format string, args ...any) error {
	return newError(KindCorrupt, nil, "PDF file is corrupt: "+format, args...)
}

// findStartXref locates the startxref offset the way the library does: in
// the last 100 bytes, after a line holding only "startxref", before %%EOF.
func findStartXref(data []byte) (int64, bool) {
	const endChunk = 100
	if len(data) < endChunk {
		return 0, false
	}
	buf := bytes.TrimRight(data[len(data)-endChunk:], "\r\n\t ")
	if !bytes.HasSuffix(buf, []byte("%%EOF")) {
		return 0, false
	}
	key := []byte("startxref")
	end := len(buf)
	for {
		i := bytes.LastIndex(buf[:end], key)
		if i <= 0 || i+len(key) >= len(buf) {
			return 0, false
		}
		if (buf[i-1] == '\n' || buf[i-1] == '\r') && (buf[i+len(key)] == '\n' || buf[i+len(key)] == '\r') {
			lex := newPDFBytesLexer(buf[i+len(key):], 64)
			t := lex.next()
			return t.i, t.kind == pdfInt
		}
		end = i
	}
}

func (c *pdfXrefCheck) lexerAt(off int64) *pdfLexer {
	return newPDFBytesLexer(c.data[off:], 1<<16)
}

func (c *pdfXrefCheck) parser(lex *pdfLexer) *pdfParser {
	return &pdfParser{lex: lex, refs: true, left: len(c.data) + 1<<20}
}

// readSections follows the /Prev chain from startxref. It reports whether
// the file uses cross-reference streams (and so may use object streams).
func (c *pdfXrefCheck) readSections() (streams bool, err error) {
	off, ok := findStartXref(c.data)
	if !ok {
		return false, nil
	}
	seen := map[int64]bool{}
	var firstSize int64
	for n := 0; ; n++ {
		if err := c.ctx.Err(); err != nil {
			return false, err
		}
		if off < 0 || off >= int64(len(c.data)) {
			return streams, nil
		}
		if seen[off] {
			return false, pdfCorrupt("its cross-reference sections refer to each other in a loop")
		}
		if n >= pdfMaxXrefSections {
			return false, pdfCorrupt("it has more than %d cross-reference sections", pdfMaxXrefSections)
		}
		seen[off] = true
		lex := c.lexerAt(off)
		tok := lex.next()
		var prev any
		switch {
		case n == 0 && tok.kind == pdfKeyword && tok.s == "xref", n > 0 && !streams:
			if tok.kind != pdfKeyword || tok.s != "xref" {
				return false, nil
			}
			trailer, raw, err := c.classicSection(lex, off)
			if trailer == nil || err != nil {
				return false, err
			}
			if n == 0 {
				_, c.encrypted = trailer["Encrypt"]
				if size, ok := trailer["Size"].(int64); ok {
					c.newest = &pdfClassicTrailer{xrefOff: off, dict: raw, size: size}
				}
			}
			prev = trailer["Prev"]
		default:
			streams = true
			hdr, err := c.streamSection(off, n == 0, &firstSize)
			if hdr == nil || err != nil {
				return false, err
			}
			if n == 0 {
				_, c.encrypted = hdr["Encrypt"]
			}
			prev = hdr["Prev"]
		}
		if prev == nil {
			return streams, nil
		}
		p, ok := prev.(int64)
		if !ok {
			return false, nil
		}
		off = p
	}
}

// classicSection checks the subsection headers of an "xref" table and
// returns its trailer dictionary and the dictionary's bytes (nil if the
// section is not understood). lex reads the section at off.
func (c *pdfXrefCheck) classicSection(lex *pdfLexer, off int64) (pdfDict, []byte, error) {
	for {
		t := lex.next()
		if t.kind == pdfKeyword && t.s == "trailer" {
			break
		}
		n := lex.next()
		if t.kind != pdfInt || n.kind != pdfInt {
			return nil, nil, nil
		}
		if t.i < 0 || n.i < 0 || t.i > c.maxObj-n.i {
			return nil, nil, pdfCorrupt("its cross-reference table declares objects up to number %d, more than such a file can hold", t.i+n.i)
		}
		if n.i > 0 {
			c.classicEnd = max(c.classicEnd, t.i+n.i)
		}
		for i := int64(0); i < 3*n.i; i++ {
			if lex.next().kind == pdfEOF {
				return nil, nil, nil
			}
		}
	}
	p := c.parser(lex)
	start := lex.offset()
	obj, err := p.object(lex.next(), 0)
	if err != nil {
		return nil, nil, nil
	}
	d, _ := obj.(pdfDict)
	return d, c.data[off+start : off+lex.offset()], nil
}

// indirectAt parses "num gen obj <object>" at off; for a stream, dataOff is
// where its data starts (-1 otherwise).
func (c *pdfXrefCheck) indirectAt(off int64) (num, gen int64, obj any, dataOff int64, ok bool) {
	if off <= 0 || off >= int64(len(c.data)) {
		return 0, 0, nil, -1, false
	}
	lex := c.lexerAt(off)
	t1, t2, t3 := lex.next(), lex.next(), lex.next()
	if t1.kind != pdfInt || t2.kind != pdfInt || t3.kind != pdfKeyword || t3.s != "obj" {
		return 0, 0, nil, -1, false
	}
	obj, err := c.parser(lex).object(lex.next(), 0)
	if err != nil {
		return 0, 0, nil, -1, false
	}
	dataOff = -1
	if _, isDict := obj.(pdfDict); isDict {
		if t := lex.next(); t.kind == pdfKeyword && t.s == "stream" {
			switch b, _ := lex.readByte(); b {
			case '\r':
				if b2, ok := lex.readByte(); ok && b2 != '\n' {
					lex.unreadByte()
				}
			case '\n':
			default:
				return 0, 0, nil, -1, false
			}
			dataOff = off + lex.offset()
		}
	}
	return t1.i, t2.i, obj, dataOff, true
}

func intArray(v any) ([]int64, bool) {
	arr, ok := v.(pdfArray)
	if !ok {
		return nil, false
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(int64); !ok {
			return nil, false
		}
	}
	return out, true
}

// streamSection checks the cross-reference stream at off and merges its
// entries. It returns the stream dictionary (nil if the section is not
// understood). Keys are read as the library reads them: while it reads these
// sections it has no table yet, so references resolve to null.
func (c *pdfXrefCheck) streamSection(off int64, first bool, firstSize *int64) (pdfDict, error) {
	_, _, obj, dataOff, ok := c.indirectAt(off)
	if !ok || dataOff < 0 {
		return nil, nil
	}
	hdr := obj.(pdfDict)
	if hdr["Type"] != pdfName("XRef") {
		return nil, nil
	}
	size, ok := hdr["Size"].(int64)
	switch {
	case first && !ok:
		return nil, nil
	case size < 0 || size > c.maxObj:
		return nil, pdfCorrupt("its cross-reference stream declares %d objects, more than such a file can hold", size)
	case first:
		*firstSize = size
	case size > *firstSize:
		return nil, nil
	}
	w, ok := intArray(hdr["W"])
	if !ok || len(w) < 3 {
		return nil, nil
	}
	wtotal := int64(0)
	for _, x := range w {
		if x < 0 || x > 8 {
			return nil, pdfCorrupt("its cross-reference stream has invalid field widths")
		}
		wtotal += x
	}
	index := []int64{0, size}
	if arr, isArray := hdr["Index"].(pdfArray); isArray {
		if index, ok = intArray(arr); !ok || len(index)%2 != 0 {
			return nil, nil
		}
	}
	var total int64
	for i := 0; i < len(index); i += 2 {
		start, n := index[i], index[i+1]
		if start < 0 || n < 0 || start > c.maxObj-n || total > c.maxObj-n {
			return nil, pdfCorrupt("its cross-reference stream declares objects up to number %d, more than such a file can hold", start+n)
		}
		total += n
	}
	length, ok := hdr["Length"].(int64)
	if !ok || length <= 0 {
		// An indirect or missing length makes the library read nothing
		// and fail.
		return nil, nil
	}
	noRefs := func(v any) any {
		if _, isRef := v.(pdfRef); isRef {
			return nil
		}
		return v
	}
	rd, err := c.decode(hdr["Filter"], hdr["DecodeParms"], dataOff, length, noRefs)
	if err != nil {
		if isExtractError(err) {
			return nil, err
		}
		return nil, nil
	}
	// The library reads exactly total entries and ignores the rest, so the
	// read is bounded by the declared counts whatever the data inflates to.
	capped := &cappedReader{r: rd, max: c.budget.limits.stream, what: "cross-reference stream", b: c.budget}
	br := bufio.NewReader(io.LimitReader(capped, total*wtotal))
	row := make([]byte, wtotal)
	for i := 0; i < len(index); i += 2 {
		start, n := index[i], index[i+1]
		for j := int64(0); j < n; j++ {
			if j&4095 == 0 {
				if err := c.ctx.Err(); err != nil {
					return nil, err
				}
			}
			if _, err := io.ReadFull(br, row); err != nil {
				if isExtractError(err) {
					return nil, err
				}
				return nil, nil
			}
			c.merge(start+j, row, w)
		}
	}
	return hdr, nil
}

func decodeBE(b []byte) int64 {
	var x int64
	for _, c := range b {
		x = x<<8 | int64(c)
	}
	return x
}

// merge records one cross-reference stream entry as the library does.
func (c *pdfXrefCheck) merge(x int64, row []byte, w []int64) {
	typ := int64(1)
	if w[0] > 0 {
		typ = decodeBE(row[:w[0]])
	}
	f2 := decodeBE(row[w[0] : w[0]+w[1]])
	f3 := decodeBE(row[w[0]+w[1] : w[0]+w[1]+w[2]])
	if x >= int64(len(c.entries)) {
		c.entries = append(c.entries, make([]xrefEntry, x-int64(len(c.entries))+1)...)
	}
	if c.entries[x].set() {
		return
	}
	switch typ {
	case 0:
		c.entries[x] = xrefEntry{num: 0, gen: 65535}
	case 1:
		c.entries[x] = xrefEntry{num: x, gen: int64(uint16(f3)), offset: f2}
	case 2:
		c.entries[x] = xrefEntry{num: x, inStream: true, stream: int64(uint32(f2)), offset: f3}
	}
}

func (c *pdfXrefCheck) entry(num int64) (xrefEntry, bool) {
	if num < 0 || num >= int64(len(c.entries)) {
		return xrefEntry{}, false
	}
	e := c.entries[num]
	return e, e.set()
}

// checkObjectStreams rejects object streams stored in object streams (the
// library recurses without end resolving them), object stream dictionaries
// that refer into object streams, oversized object counts, /Extends loops
// and, when the file is not encrypted, object streams that decompress beyond
// MaxPDFStreamSize (the library inflates one again for every object it reads
// from it).
func (c *pdfXrefCheck) checkObjectStreams() error {
	containers := map[int64]bool{}
	for _, e := range c.entries {
		if !e.inStream || !e.set() {
			continue
		}
		ce, ok := c.entry(e.stream)
		if !ok || ce.num != e.stream || ce.gen != 0 {
			continue // resolves to null in the library
		}
		if ce.inStream {
			return pdfCorrupt("an object stream is itself stored in an object stream")
		}
		containers[e.stream] = true
	}
	checked := map[int64]bool{}
	for num := range containers {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		seen := map[int64]bool{}
		cur := num
		for hops := 0; ; hops++ {
			if seen[cur] {
				return pdfCorrupt("its object streams extend each other in a loop")
			}
			if hops > pdfMaxExtends {
				return pdfCorrupt("its object streams extend each other more than %d levels deep", pdfMaxExtends)
			}
			seen[cur] = true
			hdr, dataOff, ok := c.objectStream(cur)
			if !ok {
				break // the library fails on it without looping
			}
			if !checked[cur] {
				checked[cur] = true
				if err := c.checkObjectStream(hdr, dataOff); err != nil {
					return err
				}
			}
			ext, ok := hdr["Extends"].(pdfRef)
			if !ok {
				break
			}
			cur = ext.num
		}
	}
	return nil
}

// objectStream parses the object stream num, stored in the file itself.
func (c *pdfXrefCheck) objectStream(num int64) (pdfDict, int64, bool) {
	e, ok := c.entry(num)
	if !ok || e.inStream || e.num != num || e.gen != 0 {
		return nil, 0, false
	}
	n, g, obj, dataOff, ok := c.indirectAt(e.offset)
	if !ok || n != num || g != 0 || dataOff < 0 {
		return nil, 0, false
	}
	return obj.(pdfDict), dataOff, true
}

func (c *pdfXrefCheck) checkObjectStream(hdr pdfDict, dataOff int64) error {
	// The library resolves these keys while it decodes the stream, and
	// through Filter and DecodeParms follows arrays and dictionaries
	// further. A reference from them into an object stream leads back into
	// object-stream decoding, possibly of this very stream.
	chased := 0
	for _, key := range []pdfName{"Type", "N", "First", "Length", "Filter", "DecodeParms", "Extends"} {
		if err := c.noCompressedRefs(hdr[key], map[pdfRef]bool{}, &chased, 0); err != nil {
			return err
		}
	}
	if n, ok := c.direct(hdr["N"]).(int64); ok && n > c.maxObj {
		return pdfCorrupt("an object stream declares %d objects, more than such a file can hold", n)
	}
	if c.encrypted {
		// The data is encrypted; the library decrypts it with a key this
		// check does not derive.
		return nil
	}
	length, ok := c.direct(hdr["Length"]).(int64)
	if !ok || length <= 0 {
		return nil
	}
	rd, err := c.decode(hdr["Filter"], hdr["DecodeParms"], dataOff, length, c.direct)
	if err != nil {
		if isExtractError(err) {
			return err
		}
		return nil
	}
	capped := &cappedReader{r: rd, max: c.budget.limits.stream, what: "object stream", b: c.budget}
	if _, err := io.Copy(io.Discard, ctxReader{c.ctx, capped}); err != nil {
		if isExtractError(err) || c.ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// noCompressedRefs fails if v refers, directly or through objects stored in
// the file, to an object stored in an object stream.
func (c *pdfXrefCheck) noCompressedRefs(v any, seen map[pdfRef]bool, chased *int, depth int) error {
	switch v := v.(type) {
	case pdfRef:
		e, ok := c.entry(v.num)
		if !ok || e.num != v.num || e.gen != v.gen || seen[v] {
			return nil
		}
		if e.inStream {
			return pdfCorrupt("an object stream's dictionary refers to an object inside an object stream")
		}
		seen[v] = true
		if *chased++; *chased > pdfMaxRefChase || depth > 8 {
			return pdfCorrupt("an object stream's dictionary refers to too many objects")
		}
		_, _, obj, _, ok := c.indirectAt(e.offset)
		if !ok {
			return nil
		}
		if d, isDict := obj.(pdfDict); isDict {
			obj = d // a stream: only its dictionary is looked at
		}
		return c.noCompressedRefs(obj, seen, chased, depth+1)
	case pdfArray:
		for _, x := range v {
			if err := c.noCompressedRefs(x, seen, chased, depth+1); err != nil {
				return err
			}
		}
	case pdfDict:
		for _, x := range v {
			if err := c.noCompressedRefs(x, seen, chased, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// direct resolves v if it refers to an object stored in the file.
func (c *pdfXrefCheck) direct(v any) any {
	r, ok := v.(pdfRef)
	if !ok {
		return v
	}
	e, ok := c.entry(r.num)
	if !ok || e.inStream || e.num != r.num || e.gen != r.gen {
		return nil
	}
	_, _, obj, _, ok := c.indirectAt(e.offset)
	if !ok {
		return nil
	}
	return obj
}

// decode applies the filters the library supports (FlateDecode, with the PNG
// Up predictor, and ASCII85Decode), as the library applies them.
func (c *pdfXrefCheck) decode(filter, params any, dataOff, length int64, resolve func(any) any) (io.Reader, error) {
	end := min(dataOff+length, int64(len(c.data)))
	if dataOff > end {
		return nil, errPDFSyntax
	}
	var rd io.Reader = bytes.NewReader(c.data[dataOff:end])
	apply := func(name any, param any) error {
		n, _ := resolve(name).(pdfName)
		p, _ := resolve(param).(pdfDict)
		switch n {
		case "FlateDecode":
			zr, err := zlib.NewReader(rd)
			if err != nil {
				return err
			}
			rd = zr
			pred, present := p["Predictor"]
			if !present || pred == nil {
				return nil
			}
			if resolve(pred) != int64(12) {
				return errPDFSyntax
			}
			cols, _ := resolve(p["Columns"]).(int64)
			if cols < 0 || cols > pdfMaxColumns {
				return pdfCorrupt("a stream has an invalid predictor row size")
			}
			rd = &pngUpReader{r: rd, hist: make([]byte, 1+cols), row: make([]byte, 1+cols)}
		case "ASCII85Decode":
			rd = ascii85.NewDecoder(&ascii85Filter{r: rd})
		default:
			return errPDFSyntax
		}
		return nil
	}
	switch f := resolve(filter).(type) {
	case nil:
	case pdfName:
		if err := apply(f, params); err != nil {
			return nil, err
		}
	case pdfArray:
		pa, _ := resolve(params).(pdfArray)
		for i, name := range f {
			var p any
			if i < len(pa) {
				p = pa[i]
			}
			if err := apply(name, p); err != nil {
				return nil, err
			}
		}
	default:
		return nil, errPDFSyntax
	}
	return rd, nil
}

// pngUpReader undoes the PNG "Up" predictor (PNG filter type 2 on every row),
// the only predictor the library supports.
type pngUpReader struct {
	r    io.Reader
	hist []byte
	row  []byte
	pend []byte
}

func (p *pngUpReader) Read(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if len(p.pend) > 0 {
			m := copy(b, p.pend)
			n += m
			b = b[m:]
			p.pend = p.pend[m:]
			continue
		}
		if _, err := io.ReadFull(p.r, p.row); err != nil {
			return n, err
		}
		if p.row[0] != 2 {
			return n, fmt.Errorf("malformed PNG-Up encoding")
		}
		for i, x := range p.row {
			p.hist[i] += x
		}
		p.pend = p.hist[1:]
	}
	return n, nil
}

// ascii85Filter drops the bytes that are not ASCII85 digits and stops at the
// "~" of the end marker, as the library's ASCII85 filter does.
type ascii85Filter struct {
	r   io.Reader
	eod bool
}

func (a *ascii85Filter) Read(p []byte) (int, error) {
	if a.eod {
		return 0, io.EOF
	}
	n, err := a.r.Read(p)
	out := 0
	for _, c := range p[:n] {
		if c == '~' {
			a.eod = true
			return out, io.EOF
		}
		if (c >= '!' && c <= 'u') || c == 'z' {
			p[out] = c
			out++
		}
	}
	return out, err
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
