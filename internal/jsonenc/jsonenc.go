// Package jsonenc appends JSON strings to byte slices without encoding/json's reflection, and
// encodes values as Dify writes JSON (HTML characters kept).
package jsonenc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s to b as a JSON string, escaped as encoding/json escapes it (quotes,
// backslashes, control characters, U+2028/U+2029; invalid UTF-8 becomes U+FFFD) but without
// reflection or allocation: the fake upstream and the store's bulk inserts encode a lot of text.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				// Most text is plain ASCII: a run longer than a word is skipped eight bytes at a
				// time, then byte by byte up to what ends it.
				i++
				for n := 0; n < 8 && i < len(s) && plainByte(s[i]); n++ {
					i++
				}
				if i < len(s) && plainByte(s[i]) {
					for i+8 <= len(s) && plain(s[i:i+8]) {
						i += 8
					}
					for i < len(s) && plainByte(s[i]) {
						i++
					}
				}
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Bytes of eight lanes, for the word-at-a-time test in plain.
const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// plainByte reports whether c needs no escape: ASCII, not a control character, a quote or a
// backslash.
func plainByte(c byte) bool { return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' }

// plain reports whether the eight bytes of w need no escape: each is ASCII, not a control
// character, a quote or a backslash. It tests the eight at once (a lane is below n when
// subtracting n borrows into its top bit without the byte having had it).
func plain(w string) bool {
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	quote, backslash := x^(lanes01*'"'), x^(lanes01*'\\')
	control := (x - lanes01*0x20) & ^x
	quoted := (quote - lanes01) & ^quote
	escaped := (backslash - lanes01) & ^backslash
	return (x|control|quoted|escaped)&lanes80 == 0
}

// Marshal encodes v as encoding/json does, but without escaping HTML characters (<, >, &), as
// Dify's stored and prompted JSON keeps them; a json.RawMessage is returned as it is, and a
// value that cannot be encoded is null.
func Marshal(v any) []byte {
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}
