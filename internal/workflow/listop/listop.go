// Package listop implements the list-operator node's semantics: filter, extract, order and limit
// over an array of strings, numbers, booleans or files, in that order, with Dify's operator set
// and errors.
package listop

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// ErrInvalid marks a configuration that cannot be applied to the input: an unsupported array
// type, an operator or key that does not fit it, a value that does not convert, a serial out of
// range.
var ErrInvalid = errors.New("invalid list operation")

// Config is the list-operator node's data, in the DSL's shape.
type Config struct {
	Variable  []string  `json:"variable"`
	FilterBy  FilterBy  `json:"filter_by"`
	OrderBy   OrderBy   `json:"order_by"`
	Limit     Limit     `json:"limit"`
	ExtractBy ExtractBy `json:"extract_by"`
}

// FilterBy keeps the items that satisfy every condition.
type FilterBy struct {
	Enabled    bool              `json:"enabled"`
	Conditions []FilterCondition `json:"conditions"`
}

// FilterCondition compares each item (or, for files, one attribute named by Key) with Value.
type FilterCondition struct {
	Key                string `json:"key,omitempty"`
	ComparisonOperator string `json:"comparison_operator"`
	Value              any    `json:"value"` // string (may hold {{#…#}}), []string for file type/transfer_method, bool
}

// OrderBy sorts the items ("asc" or "desc"); Key names the file attribute for files.
type OrderBy struct {
	Enabled bool   `json:"enabled"`
	Key     string `json:"key"`
	Value   string `json:"value"`
}

// Limit keeps the first Size items (a Python slice: a negative size drops items from the end).
type Limit struct {
	Enabled bool `json:"enabled"`
	Size    *int `json:"size"`
}

// ExtractBy keeps the single item at the 1-based Serial (which may hold {{#…#}}).
type ExtractBy struct {
	Enabled bool   `json:"enabled"`
	Serial  string `json:"serial"`
}

// Result holds the node's outputs.
type Result struct {
	Result      []any
	FirstRecord any
	LastRecord  any
}

// Outputs is the result as the node's output variables, in Dify's order.
func (r Result) Outputs() *value.Object {
	return value.ObjectOf("result", r.Result, "first_record", r.FirstRecord, "last_record", r.LastRecord)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func result(items []any) Result {
	r := Result{Result: items}
	if len(items) > 0 {
		r.FirstRecord, r.LastRecord = items[0], items[len(items)-1]
	}
	return r
}

// Apply runs the enabled operations on input (the value of cfg.Variable). An empty or otherwise
// falsy input yields an empty result whatever the configuration; anything else must be an
// array of strings, numbers, booleans or files. lookup resolves references in filter values and
// the serial. Apply does not see whether cfg.Variable exists: in Dify a missing variable fails
// the node ("Variable not found for selector"), so the caller checks that first.
func Apply(cfg Config, input any, lookup template.Lookup) (Result, error) {
	items, ok := input.([]any)
	if !ok {
		if truthy(input) {
			return Result{}, invalid("variable %s is %s, not an array", strings.Join(cfg.Variable, "."), value.TypeOf(input))
		}
		return result([]any{}), nil
	}
	if len(items) == 0 {
		return result([]any{}), nil
	}
	kind := value.ArrayType(items)
	switch kind {
	case "array[string]", "array[number]", "array[boolean]", "array[file]":
	default:
		return Result{}, invalid("variable %s is %s; the list operator takes array[string], array[number], array[boolean] or array[file]", strings.Join(cfg.Variable, "."), kind)
	}
	items = append([]any(nil), items...)
	var err error
	if cfg.FilterBy.Enabled {
		for _, c := range cfg.FilterBy.Conditions {
			if items, err = filter(kind, items, c, lookup); err != nil {
				return Result{}, err
			}
		}
	}
	if cfg.ExtractBy.Enabled {
		text := template.Render(cfg.ExtractBy.Serial, lookup, value.Text)
		n, ok := value.ParseInt(text)
		switch {
		case !ok:
			return Result{}, invalid("serial %q is not an integer", text)
		case n < 1:
			return Result{}, invalid("serial index must be >= 1, got %d", n)
		case n > int64(len(items)):
			return Result{}, invalid("serial index must be <= %d, got %d", len(items), n)
		}
		items = []any{items[n-1]}
	}
	if cfg.OrderBy.Enabled {
		if err := order(kind, items, cfg.OrderBy); err != nil {
			return Result{}, err
		}
	}
	if cfg.Limit.Enabled {
		size := -1
		if cfg.Limit.Size != nil {
			size = *cfg.Limit.Size
		}
		items = pySliceTo(items, size)
	}
	return result(items), nil
}

// pySliceTo is Python's items[:n].
func pySliceTo(items []any, n int) []any {
	if n < 0 {
		n += len(items)
		if n < 0 {
			n = 0
		}
	}
	if n > len(items) {
		n = len(items)
	}
	return items[:n]
}

func truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case string:
		return t != ""
	case bool:
		return t
	case int64:
		return t != 0
	case float64:
		return t != 0
	case *value.Object:
		return t.Len() > 0
	}
	return true
}

func filter(kind string, items []any, c FilterCondition, lookup template.Lookup) ([]any, error) {
	var keep func(any) (bool, error)
	switch kind {
	case "array[string]":
		s, ok := c.Value.(string)
		if !ok {
			return nil, invalid("filter value %s is not a string", value.PyRepr(value.FromGo(c.Value)))
		}
		f, err := stringFilter(c.ComparisonOperator, template.Render(s, lookup, value.Text))
		if err != nil {
			return nil, err
		}
		keep = func(v any) (bool, error) { return f(v.(string)), nil }
	case "array[number]":
		s, ok := c.Value.(string)
		if !ok {
			return nil, invalid("filter value %s is not a string", value.PyRepr(value.FromGo(c.Value)))
		}
		f, err := numberFilter(c.ComparisonOperator, template.Render(s, lookup, value.Text))
		if err != nil {
			return nil, err
		}
		keep = func(v any) (bool, error) { return f(v), nil }
	case "array[boolean]":
		b, ok := c.Value.(bool)
		if !ok {
			return nil, invalid("a boolean filter needs a boolean value, got %s", value.PyRepr(value.FromGo(c.Value)))
		}
		switch c.ComparisonOperator {
		case "is":
			keep = func(v any) (bool, error) { return v.(bool) == b, nil }
		case "is not":
			keep = func(v any) (bool, error) { return v.(bool) != b, nil }
		default:
			return nil, invalid("condition %q does not apply to booleans", c.ComparisonOperator)
		}
	default:
		f, err := fileFilter(c, lookup)
		if err != nil {
			return nil, err
		}
		keep = func(v any) (bool, error) { return f(v.(*value.File)), nil }
	}
	out := make([]any, 0, len(items))
	for _, it := range items {
		ok, err := keep(it)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, it)
		}
	}
	return out, nil
}

func stringFilter(op, want string) (func(string) bool, error) {
	switch op {
	case "contains":
		return func(s string) bool { return strings.Contains(s, want) }, nil
	case "not contains":
		return func(s string) bool { return !strings.Contains(s, want) }, nil
	case "start with":
		return func(s string) bool { return strings.HasPrefix(s, want) }, nil
	case "end with":
		return func(s string) bool { return strings.HasSuffix(s, want) }, nil
	case "is":
		return func(s string) bool { return s == want }, nil
	case "is not":
		return func(s string) bool { return s != want }, nil
	case "in": // the item is a substring of the value, as Python's "x in str"
		return func(s string) bool { return strings.Contains(want, s) }, nil
	case "not in":
		return func(s string) bool { return !strings.Contains(want, s) }, nil
	case "empty":
		return func(s string) bool { return s == "" }, nil
	case "not empty":
		return func(s string) bool { return s != "" }, nil
	}
	return nil, invalid("condition %q does not apply to strings", op)
}

func numberFilter(op, text string) (func(any) bool, error) {
	want, ok := value.ParseFloat(text)
	if !ok {
		return nil, invalid("filter value %q is not a number", text)
	}
	num := func(v any) float64 {
		switch t := v.(type) {
		case int64:
			return float64(t)
		case float64:
			return t
		}
		return 0
	}
	switch op {
	case "=":
		return func(v any) bool { return num(v) == want }, nil
	case "≠":
		return func(v any) bool { return num(v) != want }, nil
	case "<":
		return func(v any) bool { return num(v) < want }, nil
	case "≤":
		return func(v any) bool { return num(v) <= want }, nil
	case ">":
		return func(v any) bool { return num(v) > want }, nil
	case "≥":
		return func(v any) bool { return num(v) >= want }, nil
	}
	return nil, invalid("condition %q does not apply to numbers", op)
}

// fileString is the text of a file attribute the list operator filters and orders by; unset
// values are "". The url is the remote URL only, as Dify's list operator reads it.
func fileString(f *value.File, key string) (string, bool) {
	switch key {
	case "name":
		return f.Filename, true
	case "type":
		return f.Type, true
	case "extension":
		return f.Extension, true
	case "mime_type":
		return f.MimeType, true
	case "transfer_method":
		return f.TransferMethod, true
	case "url":
		return f.RemoteURL, true
	case "related_id":
		return f.RelatedID, true
	}
	return "", false
}

func fileFilter(c FilterCondition, lookup template.Lookup) (func(*value.File) bool, error) {
	want := c.Value
	switch t := want.(type) {
	case string:
		want = template.Render(t, lookup, value.Text)
	case bool:
		return nil, invalid("a file filter needs a string value, got a boolean")
	case []string:
		l := make([]any, len(t))
		for i, s := range t {
			l[i] = s
		}
		want = l
	}
	switch c.Key {
	case "name", "extension", "mime_type", "url", "related_id":
		s, ok := want.(string)
		if !ok {
			break
		}
		f, err := stringFilter(c.ComparisonOperator, s)
		if err != nil {
			return nil, err
		}
		return func(file *value.File) bool { v, _ := fileString(file, c.Key); return f(v) }, nil
	case "type", "transfer_method":
		var in func(string) bool
		switch w := want.(type) {
		case string:
			in = func(s string) bool { return strings.Contains(w, s) }
		case []any:
			in = func(s string) bool {
				for _, e := range w {
					if e == s {
						return true
					}
				}
				return false
			}
		default:
			return nil, invalid("filter value for %s must be a string or a list of strings", c.Key)
		}
		switch c.ComparisonOperator {
		case "in":
			return func(file *value.File) bool { v, _ := fileString(file, c.Key); return in(v) }, nil
		case "not in":
			return func(file *value.File) bool { v, _ := fileString(file, c.Key); return !in(v) }, nil
		}
		return nil, invalid("condition %q does not apply to file %s", c.ComparisonOperator, c.Key)
	case "size":
		s, ok := want.(string)
		if !ok {
			break
		}
		f, err := numberFilter(c.ComparisonOperator, s)
		if err != nil {
			return nil, err
		}
		return func(file *value.File) bool { return f(file.Size) }, nil
	}
	return nil, invalid("invalid key %q", c.Key)
}

func order(kind string, items []any, o OrderBy) error {
	desc := o.Value == "desc"
	var less func(a, b any) bool
	switch kind {
	case "array[string]":
		less = func(a, b any) bool { return a.(string) < b.(string) }
	case "array[number]":
		less = func(a, b any) bool { return numLess(a, b) }
	case "array[boolean]":
		less = func(a, b any) bool { return !a.(bool) && b.(bool) }
	default:
		switch o.Key {
		case "size":
			less = func(a, b any) bool { return a.(*value.File).Size < b.(*value.File).Size }
		default:
			if _, ok := fileString(&value.File{}, o.Key); !ok {
				return invalid("invalid order key %q", o.Key)
			}
			less = func(a, b any) bool {
				x, _ := fileString(a.(*value.File), o.Key)
				y, _ := fileString(b.(*value.File), o.Key)
				return x < y
			}
		}
	}
	// Stable in both directions, as Python's sorted(reverse=True) is.
	if desc {
		sort.SliceStable(items, func(i, j int) bool { return less(items[j], items[i]) })
	} else {
		sort.SliceStable(items, func(i, j int) bool { return less(items[i], items[j]) })
	}
	return nil
}

func numLess(a, b any) bool {
	ai, aInt := a.(int64)
	bi, bInt := b.(int64)
	if aInt && bInt {
		return ai < bi
	}
	f := func(v any) float64 {
		if i, ok := v.(int64); ok {
			return float64(i)
		}
		return v.(float64)
	}
	return f(a) < f(b)
}
