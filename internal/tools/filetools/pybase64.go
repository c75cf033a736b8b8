package filetools

import (
	"errors"
	"fmt"
)

// The plugins are Python; what they accept and how they fail is Python's. These functions give
// Go the same readings of Base64 and hex text.

// b64Value is the value of each Base64 character, 0xff for the others.
var b64Value = func() [256]byte {
	var t [256]byte
	for i := range t {
		t[i] = 0xff
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range len(alphabet) {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// pyError is an error worded as Python words it, capital letter included.
type pyError string

// Error is the message as Python words it.
func (e pyError) Error() string { return string(e) }

// errPadding is Python's complaint about a text that ends inside a group of four.
const errPadding = pyError("Incorrect padding")

// pyB64Decode decodes src as Python's base64.b64decode (asciiOnly: a str must be ASCII) or
// base64.decodebytes does, both being binascii.a2b_base64 in its lenient mode: characters
// outside the alphabet are skipped, a group of four completed by "=" ends the data (what
// follows is ignored), and a text ending inside a group fails. urlSafe reads "-" and "_" as
// "+" and "/", as base64.urlsafe_b64decode does.
func pyB64Decode(src string, urlSafe, asciiOnly bool) ([]byte, error) {
	out := make([]byte, 0, len(src)/4*3+3)
	var (
		quad, pads int
		left       byte
		chars      int // Base64 characters read
	)
	for i := range len(src) {
		c := src[i]
		if asciiOnly && c >= 0x80 {
			return nil, errors.New("string argument should contain only ASCII characters")
		}
		if urlSafe {
			switch c {
			case '-':
				c = '+'
			case '_':
				c = '/'
			}
		}
		if c == '=' {
			// Padding counts only once two characters of the group are in.
			if quad >= 2 {
				if pads++; quad+pads >= 4 {
					return out, nil
				}
			}
			continue
		}
		v := b64Value[c]
		if v == 0xff {
			continue
		}
		chars++
		pads = 0
		switch quad {
		case 0:
			left = v
		case 1:
			out = append(out, left<<2|v>>4)
			left = v & 0x0f
		case 2:
			out = append(out, left<<4|v>>2)
			left = v & 0x03
		case 3:
			out = append(out, left<<6|v)
		}
		quad = (quad + 1) % 4
	}
	switch quad {
	case 0:
		return out, nil
	case 1:
		return nil, pyError(fmt.Sprintf("Invalid base64-encoded string: number of data characters (%d) cannot be 1 more than a multiple of 4", chars))
	}
	return nil, errPadding
}

// pyFromHex decodes hex digits as Python's bytes.fromhex does: pairs of digits, ASCII
// whitespace allowed between pairs; an error names the position (in characters) of the first
// character that is not a digit where one is due.
func pyFromHex(s string) ([]byte, error) {
	runes := []rune(s)
	out := make([]byte, 0, len(runes)/2)
	digit := func(i int) (byte, error) {
		if i < len(runes) {
			if r := runes[i]; r < 0x80 {
				if v := hexValue(byte(r)); v < 16 {
					return v, nil
				}
			}
		}
		return 0, fmt.Errorf("non-hexadecimal number found in fromhex() arg at position %d", i)
	}
	for i := 0; i < len(runes); {
		if isASCIISpace(runes[i]) {
			i++
			continue
		}
		hi, err := digit(i)
		if err != nil {
			return nil, err
		}
		lo, err := digit(i + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, hi<<4|lo)
		i += 2
	}
	return out, nil
}

// hexValue is a hex digit's value, 16 or more for other characters.
func hexValue(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0xff
}

// isASCIISpace is Python's bytes whitespace: space, \t, \n, \v, \f, \r.
func isASCIISpace(r rune) bool {
	return r == ' ' || ('\t' <= r && r <= '\r')
}
