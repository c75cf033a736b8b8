package value

import (
	"strconv"
	"strings"
	"unicode"
)

// ParseInt parses s as Python's int(s) does: surrounding whitespace, an optional sign, decimal
// digits with single underscores between them. Values beyond int64 are rejected.
func ParseInt(s string) (int64, bool) {
	clean, ok := stripUnderscores(strings.TrimFunc(s, unicode.IsSpace))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(clean, 10, 64)
	return n, err == nil
}

// ParseFloat parses s as Python's float(s) does: surrounding whitespace, decimal or exponent
// notation, digit underscores, inf/infinity/nan in any case; no hexadecimal. Out-of-range values
// become ±Inf or 0 as in Python.
func ParseFloat(s string) (float64, bool) {
	clean, ok := stripUnderscores(strings.TrimFunc(s, unicode.IsSpace))
	if !ok || clean == "" {
		return 0, false
	}
	lower := strings.ToLower(clean)
	if strings.Contains(lower, "0x") || strings.Contains(lower, "0b") || strings.Contains(lower, "0o") {
		return 0, false
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// stripUnderscores removes underscores that sit between two digits; any other underscore makes
// the text invalid.
func stripUnderscores(s string) (string, bool) {
	if !strings.Contains(s, "_") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '_' {
			if i == 0 || i == len(s)-1 || !isDigit(s[i-1]) || !isDigit(s[i+1]) {
				return "", false
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
