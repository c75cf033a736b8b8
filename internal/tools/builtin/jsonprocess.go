package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/ohler55/ojg/jp"

	"github.com/parleyhq/parley/internal/tools"
)

// Bounds of the JSON tools.
const (
	maxJSONBytes = 1 << 20
	maxJSONDepth = 256
	maxQueryLen  = 500
)

func jsonSpecs() []spec {
	content := [3]string{"content", "string", "the JSON document"}
	query := [3]string{"query", "string", "JSONPath of the values, e.g. $.items[0].name"}
	ensureASCII := [3]string{"ensure_ascii", "boolean", "escape non-ASCII characters in the output"}
	valueDecode := [3]string{"value_decode", "boolean", "parse the new value as JSON rather than use it as a string"}
	return []spec{
		{
			provider: "json_process", name: "parse", label: "JSON Parse",
			description: "Extracts values from a JSON document with a JSONPath filter.",
			parameters: schema([]string{"content", "json_filter"}, content,
				[3]string{"json_filter", "string", "JSONPath of the values to extract, e.g. $.name"}, ensureASCII),
			run: func(_ context.Context, a args) (string, error) {
				data, x, err := docAndQuery(a, "json_filter")
				if err != nil {
					return "", err
				}
				found := x.Get(data)
				var result any = found
				if len(found) == 1 {
					result = found[0]
				}
				return pyScalarOrJSON(result, a.boolean("ensure_ascii", true)), nil
			},
		},
		{
			provider: "json_process", name: "insert", label: "JSON Insert",
			description: "Inserts a value into a JSON document: appended to (or at index in) the arrays the query selects, or merged into the objects it selects.",
			parameters: schema([]string{"content", "query", "new_value"}, content, query,
				[3]string{"new_value", "string", "the value to insert"},
				[3]string{"index", "number", "position in the array (default: the end)"},
				[3]string{"create_path", "boolean", "create the path when nothing matches"},
				valueDecode, ensureASCII),
			run: jsonInsert,
		},
		{
			provider: "json_process", name: "replace", label: "JSON Replace",
			description: "Replaces in a JSON document, at the paths the query selects: a substring of string values (replace_model pattern), the key (key) or the whole value (value).",
			parameters: schema([]string{"content", "query", "replace_model", "replace_value"}, content, query,
				[3]string{"replace_model", "string", "pattern, key or value"},
				[3]string{"replace_pattern", "string", "the substring to replace (pattern mode)"},
				[3]string{"replace_value", "string", "the replacement"},
				valueDecode, ensureASCII),
			run: jsonReplace,
		},
		{
			provider: "json_process", name: "delete", label: "JSON Delete",
			description: "Deletes from a JSON document the values a JSONPath query selects.",
			parameters:  schema([]string{"content", "query"}, content, query, ensureASCII),
			run: func(_ context.Context, a args) (string, error) {
				data, x, err := docAndQuery(a, "query")
				if err != nil {
					return "", err
				}
				if len(x) == 0 || isRoot(x[len(x)-1]) {
					return "", fmt.Errorf("%w: the query selects the whole document", tools.ErrBadArguments)
				}
				if data, err = x.Remove(data); err != nil {
					return "", fmt.Errorf("%w: %w", tools.ErrBadArguments, err)
				}
				return pyDumps(data, a.boolean("ensure_ascii", true)), nil
			},
		},
	}
}

func jsonInsert(_ context.Context, a args) (string, error) {
	data, x, err := docAndQuery(a, "query")
	if err != nil {
		return "", err
	}
	if _, ok := a["new_value"]; !ok {
		return "", fmt.Errorf("%w: new_value is required", tools.ErrBadArguments)
	}
	value, err := newValue(a, "new_value")
	if err != nil {
		return "", err
	}
	var index *int64
	if a.str("index") != "" {
		i, err := a.integer("index", 0)
		if err != nil {
			return "", err
		}
		index = &i
	}
	locs := x.Locate(data, 0)
	if len(locs) == 0 {
		if !a.boolean("create_path", false) {
			return "", fmt.Errorf("%w: the query %s matches nothing", tools.ErrBadArguments, x)
		}
		if err := x.SetOne(data, value); err != nil {
			return "", fmt.Errorf("%w: cannot create %s: %w", tools.ErrBadArguments, x, err)
		}
		return pyDumps(data, a.boolean("ensure_ascii", true)), nil
	}
	for _, loc := range locs {
		switch cur := loc.First(data).(type) {
		case []any:
			at := int64(len(cur))
			if index != nil {
				at = min(max(*index, 0), int64(len(cur)))
			}
			data, err = setAt(data, loc, slices.Insert(cur, int(at), value))
		case map[string]any:
			obj, ok := value.(map[string]any)
			if !ok {
				return "", fmt.Errorf("%w: %s is an object; only an object can be merged into it", tools.ErrBadArguments, loc)
			}
			for k, v := range obj {
				cur[k] = v
			}
		default:
			return "", fmt.Errorf("%w: %s is neither an array nor an object", tools.ErrBadArguments, loc)
		}
		if err != nil {
			return "", err
		}
	}
	return pyDumps(data, a.boolean("ensure_ascii", true)), nil
}

func jsonReplace(_ context.Context, a args) (string, error) {
	data, x, err := docAndQuery(a, "query")
	if err != nil {
		return "", err
	}
	mode := strings.ToLower(strings.TrimSpace(a.str("replace_model")))
	if mode == "" {
		mode = "pattern"
	}
	locs := x.Locate(data, 0)
	switch mode {
	case "pattern":
		pattern, err := a.required("replace_pattern")
		if err != nil {
			return "", err
		}
		repl := a.str("replace_value")
		for _, loc := range locs {
			if s, ok := loc.First(data).(string); ok {
				if data, err = setAt(data, loc, strings.ReplaceAll(s, pattern, repl)); err != nil {
					return "", err
				}
			}
		}
	case "key":
		key, err := a.required("replace_value")
		if err != nil {
			return "", err
		}
		for _, loc := range locs {
			child, ok := loc[len(loc)-1].(jp.Child)
			if !ok {
				continue
			}
			if parent, ok := loc[:len(loc)-1].First(data).(map[string]any); ok {
				v := parent[string(child)]
				delete(parent, string(child))
				parent[key] = v
			}
		}
	case "value":
		if _, ok := a["replace_value"]; !ok {
			return "", fmt.Errorf("%w: replace_value is required", tools.ErrBadArguments)
		}
		v, err := newValue(a, "replace_value")
		if err != nil {
			return "", err
		}
		for _, loc := range locs {
			if data, err = setAt(data, loc, v); err != nil {
				return "", err
			}
		}
	default:
		return "", fmt.Errorf("%w: replace_model must be pattern, key or value, not %q", tools.ErrBadArguments, mode)
	}
	return pyDumps(data, a.boolean("ensure_ascii", true)), nil
}

// setAt replaces the value at the normalized path loc (as Locate returns it); the root itself is
// replaced by returning v.
func setAt(data any, loc jp.Expr, v any) (any, error) {
	if len(loc) == 0 || (len(loc) == 1 && isRoot(loc[0])) {
		return v, nil
	}
	if err := loc.SetOne(data, v); err != nil {
		return nil, fmt.Errorf("%w: cannot set %s: %w", tools.ErrBadArguments, loc, err)
	}
	return data, nil
}

func isRoot(f jp.Frag) bool {
	_, ok := f.(jp.Root)
	return ok
}

// docAndQuery decodes the content argument and parses the JSONPath in argument queryName.
func docAndQuery(a args, queryName string) (any, jp.Expr, error) {
	content, err := a.required("content")
	if err != nil {
		return nil, nil, err
	}
	data, err := decodeJSON(content)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: content: %w", tools.ErrBadArguments, err)
	}
	q, err := a.required(queryName)
	if err != nil {
		return nil, nil, err
	}
	if len(q) > maxQueryLen {
		return nil, nil, fmt.Errorf("%w: %s is longer than %d characters", tools.ErrBadArguments, queryName, maxQueryLen)
	}
	x, err := jp.ParseString(q)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s %q is not a JSONPath: %w", tools.ErrBadArguments, queryName, q, err)
	}
	return data, x, nil
}

// newValue is argument name, decoded as JSON when value_decode is set.
func newValue(a args, name string) (any, error) {
	v := a[name]
	if s, ok := v.(string); ok && a.boolean("value_decode", false) {
		d, err := decodeJSON(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", tools.ErrBadArguments, name, err)
		}
		return d, nil
	}
	return normalize(v, 0)
}

// decodeJSON decodes one JSON value of at most maxJSONBytes and maxJSONDepth, with integers kept
// as int64 where they fit.
func decodeJSON(s string) (any, error) {
	if len(s) > maxJSONBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxJSONBytes)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not valid JSON: more than one value")
	}
	return normalize(v, 0)
}

// normalize turns json.Numbers into int64 or float64, the numbers the JSONPath library knows,
// and bounds the nesting.
func normalize(v any, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", x)
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}

// pyScalarOrJSON spells a parse result as Dify does: arrays and objects as JSON, scalars as
// Python prints them (True, False, None; strings unquoted).
func pyScalarOrJSON(v any, ensureASCII bool) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return x
	case map[string]any, []any:
		return pyDumps(x, ensureASCII)
	default:
		return pyDumps(x, false)
	}
}

// pyDumps writes v as Python's json.dumps does by default: ", " and ": " separators, non-ASCII
// escaped when ensureASCII. Object keys are sorted (Go maps keep no order).
func pyDumps(v any, ensureASCII bool) string {
	var b bytes.Buffer
	writePy(&b, v, ensureASCII)
	return b.String()
}

func writePy(b *bytes.Buffer, v any, ascii bool) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 0):
			b.WriteString(map[bool]string{true: "Infinity", false: "-Infinity"}[x > 0])
		case x == math.Trunc(x) && math.Abs(x) < 1e16:
			b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		default:
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		}
	case string:
		writePyString(b, x, ascii)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writePy(b, e, ascii)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyString(b, k, ascii)
			b.WriteString(": ")
			writePy(b, x[k], ascii)
		}
		b.WriteByte('}')
	default:
		enc, err := json.Marshal(x)
		if err != nil {
			b.WriteString("null")
			return
		}
		b.Write(enc)
	}
}

func writePyString(b *bytes.Buffer, s string, ascii bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (ascii && r > 0x7e):
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
