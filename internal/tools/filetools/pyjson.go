package filetools

import (
	"errors"
	"iter"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The plugins write their JSON with Python: json.dumps with indent=2 and ensure_ascii=False
// (ECharts options, a workbook of several sheets) or pandas' to_json (a workbook of one sheet).
// Their key order, layout, escaping and number spellings are reproduced here, so that the text a
// tool answers is the text the plugin answers.

// jsonObject is a JSON object whose members keep their order, as a Python dict keeps it.
type jsonObject []member

// member is one member of a jsonObject.
type member struct {
	key   string
	value any
}

// pyNumber is a number spelled as Python spells it (see pyFloatRepr).
type pyNumber string

// jsonStyle is how one Python library lays JSON out.
type jsonStyle struct {
	// indent is json.dumps' indent (its separators are then "," and ": "); 0 is pandas'
	// compact layout, with no spaces at all.
	indent int
	// escapeSlash writes "/" as "\/", as pandas' encoder does.
	escapeSlash bool
}

var (
	// pythonIndented is json.dumps(v, indent=2, ensure_ascii=False).
	pythonIndented = jsonStyle{indent: 2}
	// pandasCompact is DataFrame.to_json(force_ascii=False).
	pandasCompact = jsonStyle{escapeSlash: true}
)

// errTooLarge: the JSON would pass its bound.
var errTooLarge = errors.New("too large")

// jsonWriter writes JSON values in a style, failing with errTooLarge past max bytes.
type jsonWriter struct {
	style jsonStyle
	max   int
	buf   []byte
}

// write appends v (nil, bool, string, pyNumber, []any, jsonObject, or a list given as
// iter.Seq[any], written as it is produced).
func (w *jsonWriter) write(v any) error {
	w.value(v, 0)
	if len(w.buf) > w.max {
		return errTooLarge
	}
	return nil
}

// value writes v at depth, the nesting that its lines are indented to.
func (w *jsonWriter) value(v any, depth int) {
	if len(w.buf) > w.max {
		return // the caller fails; stop growing
	}
	switch x := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case pyNumber:
		w.buf = append(w.buf, x...)
	case string:
		w.str(x)
	case []any:
		w.list(slices.Values(x), depth)
	case iter.Seq[any]:
		w.list(x, depth)
	case jsonObject:
		w.object(x, depth)
	default:
		panic("filetools: no JSON form for a value of this type") // a programming error
	}
}

// list writes the items; a list without any is "[]" in every style.
func (w *jsonWriter) list(items iter.Seq[any], depth int) {
	w.buf = append(w.buf, '[')
	n := 0
	for it := range items {
		w.separate(n, depth+1)
		w.value(it, depth+1)
		if n++; len(w.buf) > w.max {
			return
		}
	}
	if n > 0 {
		w.newline(depth)
	}
	w.buf = append(w.buf, ']')
}

// object writes the members in their order; an object without any is "{}" in every style.
func (w *jsonWriter) object(o jsonObject, depth int) {
	if len(o) == 0 {
		w.buf = append(w.buf, "{}"...)
		return
	}
	w.buf = append(w.buf, '{')
	for i, m := range o {
		w.separate(i, depth+1)
		w.str(m.key)
		w.buf = append(w.buf, ':')
		if w.style.indent > 0 {
			w.buf = append(w.buf, ' ')
		}
		w.value(m.value, depth+1)
	}
	w.newline(depth)
	w.buf = append(w.buf, '}')
}

// separate starts the i-th item of a list or object at depth.
func (w *jsonWriter) separate(i, depth int) {
	if i > 0 {
		w.buf = append(w.buf, ',')
	}
	w.newline(depth)
}

// newline breaks the line and indents to depth, when the style indents.
func (w *jsonWriter) newline(depth int) {
	if w.style.indent > 0 {
		w.buf = append(w.buf, '\n')
		w.buf = append(w.buf, strings.Repeat(" ", depth*w.style.indent)...)
	}
}

// str writes s quoted as Python does without ensure_ascii: only the quote, the backslash and
// control characters are escaped (and "/" for pandas); anything else is written as it is.
func (w *jsonWriter) str(s string) {
	const hex = "0123456789abcdef"
	w.buf = append(w.buf, '"')
	for _, r := range strings.ToValidUTF8(s, string(utf8.RuneError)) {
		switch {
		case r == '"' || r == '\\':
			w.buf = append(w.buf, '\\', byte(r))
		case r == '/' && w.style.escapeSlash:
			w.buf = append(w.buf, '\\', '/')
		case r == '\n':
			w.buf = append(w.buf, '\\', 'n')
		case r == '\r':
			w.buf = append(w.buf, '\\', 'r')
		case r == '\t':
			w.buf = append(w.buf, '\\', 't')
		case r == '\b':
			w.buf = append(w.buf, '\\', 'b')
		case r == '\f':
			w.buf = append(w.buf, '\\', 'f')
		case r < 0x20:
			w.buf = append(w.buf, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			w.buf = utf8.AppendRune(w.buf, r)
		}
	}
	w.buf = append(w.buf, '"')
}

// pyFloatRepr spells f as Python's repr (and so json.dumps and str) does: the shortest digits
// that read back as f, in positional notation with at least one decimal when the decimal point
// falls 4 places before the first digit to 16 after it, else in exponent notation with a signed
// exponent of at least two digits ("1e-05", "1e+16", "1.5").
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	sign := ""
	if math.Signbit(f) {
		sign, f = "-", -f
	}
	if f == 0 {
		return sign + "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	point := exp + 1 // digits before the decimal point
	switch {
	case point <= -4 || point > 16:
		out := digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		expSign := "+"
		if exp < 0 {
			expSign, exp = "-", -exp
		}
		return sign + out + "e" + expSign + leftPad(strconv.Itoa(exp), 2)
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	}
	return sign + digits[:point] + "." + digits[point:]
}

// leftPad pads s with zeros to n characters.
func leftPad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return strings.Repeat("0", n-len(s)) + s
}

// pyFloatSyntax is what Python's float() reads (after trimming whitespace): decimal digits with
// single underscores between them, an optional point and exponent, or inf, infinity and nan.
var pyFloatSyntax = regexp.MustCompile(`^[+-]?(?:(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*|\d(?:_?\d)*\.?)(?:[eE][+-]?\d(?:_?\d)*)?|(?i:inf|infinity|nan))$`)

// pyDigits replaces the decimal digits of other scripts ("١٢") with ASCII ones, as Python's
// int() and float() read them. Unicode encodes each script's digits 0 to 9 in a run, so a
// digit's value is its distance from the start of its run, modulo 10 (some runs hold several
// sets).
func pyDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf || !unicode.IsDigit(r) {
			return r
		}
		start := r
		for unicode.IsDigit(start - 1) {
			start--
		}
		return '0' + (r-start)%10
	}, s)
}

// pyFloat reads s as Python's float() does; a number too large for a float is infinite, as in
// Python. ok is false for what float() refuses (hex floats among them, which Go would read).
func pyFloat(s string) (f float64, ok bool) {
	s = pyDigits(strings.TrimSpace(s))
	if !pyFloatSyntax.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// pyIntSyntax is what Python's int() reads in base 10 (after trimming whitespace).
var pyIntSyntax = regexp.MustCompile(`^[+-]?\d(?:_?\d)*$`)

// pyInt reads s as Python's int() does and spells the value as str() does: any number of
// digits, no leading zeros, no plus sign, "0" for minus zero.
func pyInt(s string) (string, bool) {
	s = pyDigits(strings.TrimSpace(s))
	if !pyIntSyntax.MatchString(s) {
		return "", false
	}
	neg := s[0] == '-'
	digits := strings.TrimLeft(strings.ReplaceAll(strings.TrimLeft(s, "+-"), "_", ""), "0")
	switch {
	case digits == "":
		return "0", true
	case neg:
		return "-" + digits, true
	}
	return digits, true
}
