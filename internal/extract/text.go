package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeText converts raw file bytes to a UTF-8 string: a UTF-8 BOM is
// dropped, UTF-16 (with a BOM, or without one when the NUL pattern makes it
// evident) is decoded, and invalid UTF-8 bytes are replaced with U+FFFD.
// Dify's TextExtractor auto-detects the encoding (docs/knowledge.md); legacy 8-bit
// code pages are not guessed here.
func decodeText(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		return decodeUTF16(b[2:], false)
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		return decodeUTF16(b[2:], true)
	default:
		if !utf8.Valid(b) {
			if bigEndian, ok := looksUTF16(b); ok {
				return decodeUTF16(b, bigEndian)
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// looksUTF16 guesses BOM-less UTF-16 from mostly-ASCII text: one byte of
// nearly every pair is zero.
func looksUTF16(b []byte) (bigEndian, ok bool) {
	n := len(b) / 2
	if n < 2 {
		return false, false
	}
	if n > 4096 {
		n = 4096
	}
	var evenZero, oddZero int
	for i := 0; i < n; i++ {
		if b[2*i] == 0 {
			evenZero++
		}
		if b[2*i+1] == 0 {
			oddZero++
		}
	}
	switch {
	case oddZero*10 >= n*7 && evenZero*10 < n:
		return false, true
	case evenZero*10 >= n*7 && oddZero*10 < n:
		return true, true
	}
	return false, false
}

func decodeUTF16(b []byte, bigEndian bool) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		if bigEndian {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			u[i] = uint16(b[2*i+1])<<8 | uint16(b[2*i])
		}
	}
	s := string(utf16.Decode(u))
	if len(b)%2 == 1 {
		s += "\uFFFD"
	}
	return s
}

// sanitize makes s valid UTF-8, removes NUL bytes and normalises line endings
// to "\n" (Python's text mode, used by Dify's extractors, does the same).
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// textLimit collects output and reports when MaxTextSize (plus slack for
// separators) has been reached, so extractors can stop early instead of
// building unbounded strings; finish does the exact cut.
type textLimit struct {
	n int
}

func (l *textLimit) add(s string) {
	l.n += len(s)
}

func (l *textLimit) full() bool {
	return l.n > MaxTextSize+1024
}

// checkCtx returns ctx.Err() every 1024 calls, to bound the cost of polling
// the context in tight loops.
type ctxPoll struct {
	ctx context.Context
	i   int
}

func (p *ctxPoll) err() error {
	p.i++
	if p.i&1023 != 0 {
		return nil
	}
	return p.ctx.Err()
}

func extractText(_ context.Context, data []byte) (Document, error) {
	// Dify's TextExtractor: one document holding the whole file.
	return Document{Text: decodeText(data)}, nil
}

// extractJSON reads a JSON file as text, indented so that the splitter finds line breaks. The
// issue asks for JSON although Dify's default upload list lacks it; a file that is not valid
// JSON is reported as corrupt with the offset of the error.
func extractJSON(_ context.Context, data []byte) (Document, error) {
	text := decodeText(data)
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(text), "", "  "); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return Document{}, newError(KindCorrupt, err, "invalid JSON at byte %d: %v", se.Offset, err)
		}
		return Document{}, newError(KindCorrupt, err, "invalid JSON: %v", err)
	}
	return Document{Text: out.String()}, nil
}
