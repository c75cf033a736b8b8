package extract

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
)

// A bounded reader of PDF tokens and objects (ISO 32000-1 §7.2, §7.3). It
// serves two purposes the PDF library cannot be trusted with: checking the
// cross-reference structure before the library walks it, and interpreting
// page content streams with every token, operand and nesting level capped.
// Tokens are read the way github.com/ledongthuc/pdf reads them (raw bytes in
// literal strings, numbers as in its lexer), so that extracted text matches
// what the library produced; where the library gives up on malformed input
// (a stray delimiter, an odd-length hex string, an unknown escape) this reader
// follows the specification instead.

type pdfTokKind uint8

const (
	pdfEOF pdfTokKind = iota
	pdfInt
	pdfReal
	pdfStr
	pdfNameTok
	pdfKeyword // operators and other bare words, including true, false, null
	pdfArrayOpen
	pdfArrayClose
	pdfDictOpen
	pdfDictClose
)

type pdfToken struct {
	kind pdfTokKind
	s    string // string bytes, name without the slash, or keyword
	i    int64
	f    float64
}

// Parsed PDF objects: nil (null), bool, int64, float64, pdfString, pdfName,
// pdfRef, pdfArray, pdfDict.
type (
	pdfString string
	pdfName   string
	pdfRef    struct{ num, gen int64 }
	pdfArray  []any
	pdfDict   map[pdfName]any
)

// pdfMaxDepth bounds the nesting of arrays and dictionaries, as the PDF
// library does (its maxObjectDepth), so the recursive parser cannot exhaust
// the stack.
const pdfMaxDepth = 1000

var errPDFSyntax = errors.New("malformed PDF object")

// pdfLexer splits a byte stream into PDF tokens. Strings, names and keywords
// longer than maxTok are cut (the rest is consumed and dropped), so a single
// token never holds more than maxTok bytes.
type pdfLexer struct {
	src    io.Reader // nil when buf holds the whole input
	buf    []byte
	pos    int   // next byte in buf
	base   int64 // input offset of buf[0]
	maxTok int
	err    error // first read error other than io.EOF
	tok    []byte
	back   []pdfToken // pushed-back tokens, last one first
}

// newPDFLexer reads from r through a buffer of its own.
func newPDFLexer(r io.Reader, maxTok int) *pdfLexer {
	return &pdfLexer{src: r, buf: make([]byte, 0, 64<<10), maxTok: maxTok}
}

// newPDFBytesLexer reads data in place.
func newPDFBytesLexer(data []byte, maxTok int) *pdfLexer {
	return &pdfLexer{buf: data, maxTok: maxTok}
}

// offset is the number of input bytes consumed.
func (l *pdfLexer) offset() int64 {
	return l.base + int64(l.pos)
}

func (l *pdfLexer) readByte() (byte, bool) {
	if l.pos < len(l.buf) {
		c := l.buf[l.pos]
		l.pos++
		return c, true
	}
	return l.fill()
}

// fill refills the buffer, keeping the last byte so that it can still be
// unread, and returns the next byte.
func (l *pdfLexer) fill() (byte, bool) {
	if l.src == nil || l.err != nil {
		return 0, false
	}
	keep := 0
	if len(l.buf) > 0 {
		l.buf[0] = l.buf[len(l.buf)-1]
		keep = 1
	}
	l.base += int64(len(l.buf) - keep)
	for {
		n, err := l.src.Read(l.buf[keep:cap(l.buf)])
		l.buf = l.buf[:keep+n]
		l.pos = keep
		if n > 0 {
			break
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.err = err
			}
			l.src = nil
			return 0, false
		}
	}
	c := l.buf[l.pos]
	l.pos++
	return c, true
}

func (l *pdfLexer) unreadByte() {
	if l.pos > 0 {
		l.pos--
	}
}

func (l *pdfLexer) unread(t pdfToken) {
	l.back = append(l.back, t)
}

func (l *pdfLexer) keep(c byte) {
	if len(l.tok) < l.maxTok {
		l.tok = append(l.tok, c)
	}
}

func isPDFSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

func isPDFDelim(c byte) bool {
	switch c {
	case '<', '>', '(', ')', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func unhexPDF(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// next returns the next token; pdfEOF at the end of the input or after a read
// error (see err).
func (l *pdfLexer) next() pdfToken {
	if n := len(l.back); n > 0 {
		t := l.back[n-1]
		l.back = l.back[:n-1]
		return t
	}
	for {
		c, ok := l.readByte()
		if !ok {
			return pdfToken{kind: pdfEOF}
		}
		switch {
		case isPDFSpace(c):
			continue
		case c == '%':
			for ok && c != '\r' && c != '\n' {
				c, ok = l.readByte()
			}
			continue
		}
		switch c {
		case '<':
			if c2, ok := l.readByte(); ok {
				if c2 == '<' {
					return pdfToken{kind: pdfDictOpen}
				}
				l.unreadByte()
			}
			return l.hexString()
		case '>':
			if c2, ok := l.readByte(); ok {
				if c2 == '>' {
					return pdfToken{kind: pdfDictClose}
				}
				l.unreadByte()
			}
			continue // stray '>'
		case ')':
			continue // stray ')'
		case '(':
			return l.literalString()
		case '[':
			return pdfToken{kind: pdfArrayOpen}
		case ']':
			return pdfToken{kind: pdfArrayClose}
		case '{', '}':
			return pdfToken{kind: pdfKeyword, s: string(c)}
		case '/':
			return l.name()
		}
		l.unreadByte()
		return l.regular()
	}
}

func (l *pdfLexer) hexString() pdfToken {
	l.tok = l.tok[:0]
	hi := -1
	for {
		c, ok := l.readByte()
		if !ok || c == '>' {
			break
		}
		v := unhexPDF(c)
		if v < 0 {
			continue // white space, or a stray byte
		}
		if hi < 0 {
			hi = v
			continue
		}
		l.keep(byte(hi<<4 | v))
		hi = -1
	}
	if hi >= 0 {
		l.keep(byte(hi << 4)) // odd digit count: a final 0 is implied
	}
	return pdfToken{kind: pdfStr, s: string(l.tok)}
}

func (l *pdfLexer) literalString() pdfToken {
	l.tok = l.tok[:0]
	depth := 1
	for {
		// Copy the run of ordinary bytes in one go.
		if rest := l.buf[l.pos:]; len(rest) > 0 {
			n := literalRun(rest)
			if room := l.maxTok - len(l.tok); room > 0 {
				l.tok = append(l.tok, rest[:min(n, room)]...)
			}
			l.pos += n
			if n == len(rest) {
				continue
			}
		}
		c, ok := l.readByte()
		if !ok {
			break
		}
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return pdfToken{kind: pdfStr, s: string(l.tok)}
			}
		case '\\':
			c, ok = l.readByte()
			if !ok {
				return pdfToken{kind: pdfStr, s: string(l.tok)}
			}
			switch c {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if c2, ok := l.readByte(); ok && c2 != '\n' {
					l.unreadByte()
				}
				continue // line continuation
			case '\n':
				continue
			case '0', '1', '2', '3', '4', '5', '6', '7':
				x := int(c - '0')
				for range 2 {
					d, ok := l.readByte()
					if !ok {
						break
					}
					if d < '0' || d > '7' {
						l.unreadByte()
						break
					}
					x = x*8 + int(d-'0')
				}
				c = byte(x)
			}
			// Any other escaped byte stands for itself (the backslash is
			// ignored, §7.3.4.2).
		}
		l.keep(c)
	}
	return pdfToken{kind: pdfStr, s: string(l.tok)}
}

// literalRun returns the length of the prefix of b free of the bytes that
// are special in a literal string.
func literalRun(b []byte) int {
	n := len(b)
	for _, c := range []byte{'(', ')', '\\'} {
		if i := bytes.IndexByte(b[:n], c); i >= 0 {
			n = i
		}
	}
	return n
}

func (l *pdfLexer) name() pdfToken {
	l.tok = l.tok[:0]
	for {
		c, ok := l.readByte()
		if !ok {
			break
		}
		if isPDFDelim(c) || isPDFSpace(c) {
			l.unreadByte()
			break
		}
		if c == '#' {
			c1, ok := l.readByte()
			if !ok {
				l.keep('#')
				break
			}
			h1 := unhexPDF(c1)
			if h1 < 0 {
				l.unreadByte()
				l.keep('#')
				continue
			}
			c2, ok := l.readByte()
			if !ok {
				l.keep('#')
				l.keep(c1)
				break
			}
			h2 := unhexPDF(c2)
			if h2 < 0 {
				l.unreadByte()
				l.keep('#')
				l.keep(c1)
				continue
			}
			c = byte(h1<<4 | h2)
		}
		l.keep(c)
	}
	return pdfToken{kind: pdfNameTok, s: string(l.tok)}
}

// regular reads a number or a keyword.
func (l *pdfLexer) regular() pdfToken {
	l.tok = l.tok[:0]
	for {
		c, ok := l.readByte()
		if !ok {
			break
		}
		if isPDFDelim(c) || isPDFSpace(c) {
			l.unreadByte()
			break
		}
		l.keep(c)
	}
	b := l.tok
	if i, ok := parsePDFInt(b); ok {
		return pdfToken{kind: pdfInt, i: i}
	}
	if isPDFNumber(b, false) || isPDFNumber(b, true) {
		f, _ := strconv.ParseFloat(string(b), 64)
		return pdfToken{kind: pdfReal, f: f}
	}
	if k, ok := pdfKeywords[string(b)]; ok {
		return pdfToken{kind: pdfKeyword, s: k}
	}
	return pdfToken{kind: pdfKeyword, s: string(b)}
}

// pdfKeywords interns the keywords of content streams and file structure,
// so that reading them allocates nothing.
var pdfKeywords = func() map[string]string {
	m := map[string]string{}
	for _, k := range strings.Fields(`true false null R obj endobj stream endstream xref trailer startxref
		b B b* B* BDC BI BMC BT BX c cm CS cs d d0 d1 Do DP EI EMC ET EX f F f* G g gs h i ID j J K k
		l m M MP n q Q re RG rg ri s S SC sc SCN scn sh T* Tc Td TD Tf Tj TJ TL Tm Tr Ts Tw Tz v w W W* y ' "`) {
		m[k] = k
	}
	return m
}()

// parsePDFInt parses an optionally signed run of decimal digits.
func parsePDFInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false // longer ones go through ParseFloat
	}
	var x int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int64(c-'0')
	}
	if neg {
		x = -x
	}
	return x, true
}

// isPDFNumber reports whether b is an optionally signed run of digits with
// no dot (real false) or exactly one dot (real true).
func isPDFNumber(b []byte, real bool) bool {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	dots, digits := 0, 0
	for _, c := range b {
		switch {
		case c == '.':
			dots++
		case '0' <= c && c <= '9':
			digits++
		default:
			return false
		}
	}
	if real {
		return dots == 1 && len(b) > 1
	}
	return dots == 0 && digits > 0
}

// pdfParser builds objects from tokens. left is the number of bytes the
// objects being built may still hold (each string byte and each array or
// dictionary element counts, elements as 16); once spent, strings come out
// empty and elements are dropped, so whatever the input, the objects of one
// parse budget stay small. The caller resets left.
type pdfParser struct {
	lex  *pdfLexer
	refs bool // read "n g R" as a reference (file objects; content streams have none)
	left int
}

func (p *pdfParser) charge(n int) bool {
	if p.left < n {
		p.left = 0
		return false
	}
	p.left -= n
	return true
}

// object parses the object that starts with tok.
func (p *pdfParser) object(tok pdfToken, depth int) (any, error) {
	if depth > pdfMaxDepth {
		return nil, errPDFSyntax
	}
	switch tok.kind {
	case pdfEOF:
		return nil, io.ErrUnexpectedEOF
	case pdfInt:
		if p.refs {
			t2 := p.lex.next()
			if t2.kind == pdfInt {
				t3 := p.lex.next()
				if t3.kind == pdfKeyword && t3.s == "R" {
					return pdfRef{tok.i, t2.i}, nil
				}
				p.lex.unread(t3)
			}
			p.lex.unread(t2)
		}
		return tok.i, nil
	case pdfReal:
		return tok.f, nil
	case pdfStr:
		if !p.charge(len(tok.s)) {
			return pdfString(""), nil
		}
		return pdfString(tok.s), nil
	case pdfNameTok:
		if !p.charge(len(tok.s)) {
			return pdfName(""), nil
		}
		return pdfName(tok.s), nil
	case pdfKeyword:
		switch tok.s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		}
		return nil, errPDFSyntax
	case pdfArrayOpen:
		var arr pdfArray
		for {
			t := p.lex.next()
			if t.kind == pdfArrayClose || t.kind == pdfEOF {
				return arr, nil
			}
			v, err := p.object(t, depth+1)
			if err != nil {
				return nil, err
			}
			if p.charge(16) {
				arr = append(arr, v)
			}
		}
	case pdfDictOpen:
		d := pdfDict{}
		for {
			t := p.lex.next()
			if t.kind == pdfDictClose || t.kind == pdfEOF {
				return d, nil
			}
			if t.kind != pdfNameTok {
				return nil, errPDFSyntax
			}
			vt := p.lex.next()
			if vt.kind == pdfDictClose {
				d[pdfName(t.s)] = nil
				return d, nil
			}
			v, err := p.object(vt, depth+1)
			if err != nil {
				return nil, err
			}
			if p.charge(16 + len(t.s)) {
				d[pdfName(t.s)] = v
			}
		}
	}
	// A lone "]" or ">>".
	return nil, nil
}
