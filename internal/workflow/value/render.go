package value

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text renders v as a {{#…#}} reference renders inside an LLM prompt or any other text field:
// strings as they are, numbers as Python prints them (1.0, 1e+16), booleans True/False, nil and
// files as "", objects as compact JSON (Python's json.dumps spacing, non-ASCII kept), arrays of
// strings as JSON, arrays of files as "", an empty array as "", and any other array as Python
// prints the list ([1, 2.5], [{'a': 1}], [True, None]).
func Text(v any) string {
	switch t := v.(type) {
	case nil, *File:
		return ""
	case string:
		return t
	case *Object:
		return JSONDumps(t, 0)
	case []any:
		if len(t) == 0 {
			return ""
		}
		switch ArrayType(t) {
		case "array[string]":
			return JSONDumps(t, 0)
		case "array[file]":
			return ""
		}
		return PyRepr(t)
	}
	return PyStr(v)
}

// Markdown renders v as an answer node shows it: files as ![name](url) (images) or [name](url),
// an array of files one per line, objects as JSON indented by two spaces, other arrays as
// "- item" lines (items printed as Python's str), scalars as Text.
func Markdown(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case *File:
		return t.Markdown()
	case *Object:
		return JSONDumps(t, 2)
	case []any:
		if ArrayType(t) == "array[file]" {
			lines := make([]string, len(t))
			for i, e := range t {
				lines[i] = e.(*File).Markdown()
			}
			return strings.Join(lines, "\n")
		}
		lines := make([]string, len(t))
		for i, e := range t {
			lines[i] = "- " + PyStr(e)
		}
		return strings.Join(lines, "\n")
	}
	return Text(v)
}

// Log renders v as Dify logs it: objects as indented JSON, files and arrays of files as "",
// other arrays as Python prints the list, scalars as Text.
func Log(v any) string {
	switch t := v.(type) {
	case *Object:
		return JSONDumps(t, 2)
	case []any:
		if len(t) > 0 && ArrayType(t) == "array[file]" {
			return ""
		}
		return PyRepr(t)
	}
	return Text(v)
}

// TypeOf names v's type as Dify names variable types: none, string, number, boolean, object,
// file, array[string], array[number], array[boolean], array[object], array[file], array[any].
func TypeOf(v any) string {
	switch t := v.(type) {
	case nil:
		return "none"
	case string:
		return "string"
	case int64, float64, int, float32, int32:
		return "number"
	case bool:
		return "boolean"
	case *Object:
		return "object"
	case *File:
		return "file"
	case []any:
		return ArrayType(t)
	}
	return "any"
}

// SegmentType is TypeOf with numbers split as Dify's segments split them: integer or float.
func SegmentType(v any) string {
	switch v.(type) {
	case int64:
		return "integer"
	case float64:
		return "float"
	}
	return TypeOf(v)
}

// ArrayType infers an array's element type as Dify does when it builds a segment from a list:
// an empty array, nested arrays or mixed elements are array[any]; integers and floats together
// are array[number].
func ArrayType(a []any) string {
	if len(a) == 0 {
		return "array[any]"
	}
	elem := ""
	for _, e := range a {
		t := TypeOf(e)
		switch {
		case strings.HasPrefix(t, "array["), t == "none", t == "any":
			return "array[any]"
		case elem == "":
			elem = t
		case elem != t:
			return "array[any]"
		}
	}
	return "array[" + elem + "]"
}

// PyFloat formats f as Python's repr(float): shortest round-trip digits, ".0" on integral
// values, exponent form outside [1e-4, 1e16), inf, -inf and nan.
func PyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e16 || abs < 1e-4 {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// PyStr is Python's str(v): strings unquoted, everything else as PyRepr.
func PyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return PyRepr(v)
}

// PyRepr is Python's repr(v) for the value model: 'quoted' strings, True/False/None, dicts as
// {'k': v} in insertion order, lists as [a, b]. A file prints as its dict.
func PyRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

func writeRepr(b *strings.Builder, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if t {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		b.WriteString(PyQuote(t))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case int:
		b.WriteString(strconv.Itoa(t))
	case float64:
		b.WriteString(PyFloat(t))
	case *File:
		writeRepr(b, t.Dict())
	case *Object:
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(PyQuote(k))
			b.WriteString(": ")
			writeRepr(b, t.m[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e)
		}
		b.WriteByte(']')
	default:
		writeRepr(b, FromGo(v))
	}
}

// PyQuote quotes s as Python's repr(str) does: single quotes unless s contains a single quote
// and no double quote; \\, \n, \r, \t escaped; other non-printable characters as \xhh, \uhhhh or
// \Uhhhhhhhh.
func PyQuote(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError || (r != ' ' && !unicode.IsPrint(r)):
			writeHexEscape(&b, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

func writeHexEscape(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	var width int
	switch {
	case r < 0x100:
		b.WriteString(`\x`)
		width = 2
	case r < 0x10000:
		b.WriteString(`\u`)
		width = 4
	default:
		b.WriteString(`\U`)
		width = 8
	}
	for i := width - 1; i >= 0; i-- {
		b.WriteByte(hex[(r>>(4*i))&0xf])
	}
}

// JSONDumps encodes v as Python's json.dumps(v, ensure_ascii=False) does: ", " and ": "
// separators when indent is 0, otherwise one item per line indented by indent spaces with ","
// line ends; only quotes, backslashes and control characters are escaped; floats print as
// Python prints them (NaN, Infinity for non-finite values); files as their dict.
func JSONDumps(v any, indent int) string {
	var b strings.Builder
	writeJSON(&b, v, indent, 0)
	return b.String()
}

func writeJSON(b *strings.Builder, v any, indent, depth int) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writeJSONString(b, t)
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case int:
		b.WriteString(strconv.Itoa(t))
	case float64:
		switch {
		case math.IsNaN(t):
			b.WriteString("NaN")
		case math.IsInf(t, 1):
			b.WriteString("Infinity")
		case math.IsInf(t, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(PyFloat(t))
		}
	case *File:
		writeJSON(b, t.dictNoURL(), indent, depth)
	case *Object:
		if t.Len() == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, k := range t.keys {
			writeSep(b, i, indent, depth+1)
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSON(b, t.m[k], indent, depth+1)
		}
		writeClose(b, indent, depth)
		b.WriteByte('}')
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range t {
			writeSep(b, i, indent, depth+1)
			writeJSON(b, e, indent, depth+1)
		}
		writeClose(b, indent, depth)
		b.WriteByte(']')
	default:
		writeJSON(b, FromGo(v), indent, depth)
	}
}

func writeSep(b *strings.Builder, i, indent, depth int) {
	if indent == 0 {
		if i > 0 {
			b.WriteString(", ")
		}
		return
	}
	if i > 0 {
		b.WriteByte(',')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", indent*depth))
}

func writeClose(b *strings.Builder, indent, depth int) {
	if indent == 0 {
		return
	}
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", indent*depth))
}

func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[r>>4])
				b.WriteByte(hex[r&0xf])
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// Path follows a selector path below a value: object keys, and one file attribute at the end of
// the path. The second result is false when a step does not exist.
func Path(v any, path []string) (any, bool) {
	for i, p := range path {
		switch t := v.(type) {
		case *Object:
			next, ok := t.Get(p)
			if !ok {
				return nil, false
			}
			v = next
		case *File:
			if i != len(path)-1 {
				return nil, false
			}
			return t.Attr(p)
		default:
			return nil, false
		}
	}
	return v, true
}
