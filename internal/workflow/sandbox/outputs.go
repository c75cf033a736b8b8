package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits are Dify's checks on a code node's outputs (its CODE_* settings).
type Limits struct {
	// MaxStringLength caps a string, in characters (CODE_MAX_STRING_LENGTH).
	MaxStringLength int
	// MaxNumber and MinNumber bound a number (CODE_MAX_NUMBER, CODE_MIN_NUMBER).
	MaxNumber, MinNumber int64
	// MaxPrecision caps the digits after the decimal point of a float (CODE_MAX_PRECISION).
	MaxPrecision int
	// MaxDepth caps the nesting of objects (CODE_MAX_DEPTH).
	MaxDepth int
	// Array lengths (CODE_MAX_STRING_ARRAY_LENGTH, CODE_MAX_OBJECT_ARRAY_LENGTH,
	// CODE_MAX_NUMBER_ARRAY_LENGTH); arrays of booleans have no limit.
	MaxStringArrayLength, MaxObjectArrayLength, MaxNumberArrayLength int
}

// DefaultLimits are Dify's defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxStringLength: 400000,
		MaxNumber:       1<<63 - 1, MinNumber: -(1<<63 - 1),
		MaxPrecision:         20,
		MaxDepth:             5,
		MaxStringArrayLength: 30, MaxObjectArrayLength: 30, MaxNumberArrayLength: 1000,
	}
}

// Output types a code node may declare.
const (
	TypeString       = "string"
	TypeNumber       = "number"
	TypeObject       = "object"
	TypeBoolean      = "boolean"
	TypeArrayString  = "array[string]"
	TypeArrayNumber  = "array[number]"
	TypeArrayObject  = "array[object]"
	TypeArrayBoolean = "array[boolean]"
)

// OutputSpec is one declared output of a code node (the DSL's outputs: {name: {type, children}}).
type OutputSpec struct {
	Name string
	Type string
	// Children declares the fields of an object or of each object of an array: nil (the DSL's
	// children: null) leaves them unchecked but for the limits; an empty, non-nil slice
	// declares an object with no fields.
	Children []OutputSpec
}

// Outputs are a code node's checked outputs.
type Outputs struct {
	// Values holds JSON values: nil, bool, string, int64 (an integer), float64 (any other
	// number), []any and map[string]any.
	Values map[string]any
	// JSON is the same object with its keys in Dify's order: declared outputs in the order of
	// the declaration, undeclared objects as the code built them.
	JSON []byte
}

// CheckOutputs validates result, the JSON object main returned, against the declared outputs as
// Dify does, and returns the outputs the node produces: every declared output must be present
// and of its type (null passes), nothing undeclared may be left over, and strings, numbers,
// arrays and nesting stay within lim. Typed strings lose their NUL characters and booleans
// declared as numbers become 0 or 1, as in Dify. A failure is an *Error of kind KindOutput whose
// message is Dify's.
func CheckOutputs(result []byte, declared []OutputSpec, lim Limits) (Outputs, error) {
	v, err := parseJSON(result)
	if err != nil {
		return Outputs{}, &Error{Kind: KindResult, Type: TypeExecution, Message: "Failed to parse JSON response: " + err.Error() + "."}
	}
	obj, ok := v.(*object)
	if !ok {
		return Outputs{}, &Error{Kind: KindResult, Type: TypeExecution, Message: "Result must be a dict, got " + pyType(v)}
	}
	c := checker{lim: lim}
	if declared == nil {
		declared = []OutputSpec{}
	}
	out, err := c.object(obj, declared, "", 1)
	if err != nil {
		return Outputs{}, err
	}
	var buf bytes.Buffer
	encode(&buf, out)
	return Outputs{Values: plain(out).(map[string]any), JSON: buf.Bytes()}, nil
}

// Decode turns a JSON object into Go values as Outputs.Values holds them, integers as int64.
func Decode(data []byte) (map[string]any, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	m, ok := plain(v).(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// object is a JSON object that keeps its key order.
type object struct {
	keys []string
	vals map[string]any
}

// scientific matches the strings Dify turns back into numbers after a run (JavaScript writes
// large numbers that way when code converts them to text).
var scientific = regexp.MustCompile(`(?i)^-?\d+\.?\d*e[+-]\d+$`)

// parseJSON decodes one JSON value: objects as *object, numbers as json.Number, and strings in
// scientific notation as numbers (Dify's post-processing of every result).
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("extra data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := obj.vals[k]; !dup {
					obj.keys = append(obj.keys, k)
				}
				obj.vals[k] = v
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		if scientific.MatchString(t) {
			if _, err := strconv.ParseFloat(t, 64); err == nil {
				return json.Number(t), nil
			}
		}
		return t, nil
	default:
		return t, nil // nil, bool, json.Number
	}
}

// isInt reports whether a JSON number is written as an integer (Python's int after json.loads).
func isInt(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }

// pyType is the name of the Python type json.loads gives v.
func pyType(v any) string {
	switch t := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case json.Number:
		if isInt(t) {
			return "int"
		}
		return "float"
	case []any:
		return "list"
	case *object:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// pyClass is Python's repr of that type, as Dify's messages print it.
func pyClass(v any) string { return "<class '" + pyType(v) + "'>" }

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, bool: // a bool is an int to Python
		return true
	}
	return false
}

type checker struct{ lim Limits }

func outputErr(format string, args ...any) error {
	return &Error{Kind: KindOutput, Type: TypeOutputValidation, Message: fmt.Sprintf(format, args...)}
}

func path(prefix, name string) string {
	if prefix != "" {
		return prefix + "." + name
	}
	return name
}

// object checks one object: with declared (non-nil) the declared outputs, otherwise only the
// limits. depth counts from 1 at the node's result.
func (c *checker) object(obj *object, declared []OutputSpec, prefix string, depth int) (*object, error) {
	if depth > c.lim.MaxDepth {
		return nil, &Error{Kind: KindOutput, Type: TypeDepthLimit,
			Message: fmt.Sprintf("Depth limit %d reached, object too deep.", c.lim.MaxDepth)}
	}
	if declared == nil {
		for _, k := range obj.keys {
			if err := c.untyped(k, obj.vals[k], prefix, depth); err != nil {
				return nil, err
			}
		}
		return obj, nil
	}
	out := &object{vals: make(map[string]any, len(declared))}
	for _, spec := range declared {
		v, ok := obj.vals[spec.Name]
		if !ok {
			return nil, outputErr("Output %s is missing.", path(prefix, spec.Name))
		}
		tv, err := c.typed(spec, v, prefix, depth)
		if err != nil {
			return nil, err
		}
		if _, dup := out.vals[spec.Name]; !dup {
			out.keys = append(out.keys, spec.Name)
		}
		out.vals[spec.Name] = tv
	}
	if len(out.keys) != len(obj.keys) {
		return nil, &Error{Kind: KindOutput, Type: TypeCodeNode, Message: "Not all output parameters are validated."}
	}
	return out, nil
}

func (c *checker) typed(spec OutputSpec, v any, prefix string, depth int) (any, error) {
	p := path(prefix, spec.Name)
	switch spec.Type {
	case TypeObject:
		if v == nil {
			return nil, nil
		}
		obj, ok := v.(*object)
		if !ok {
			return nil, outputErr("Output %s is not an object, got %s instead.", p, pyClass(v))
		}
		return c.object(obj, spec.Children, p, depth+1)
	case TypeNumber:
		if v == nil {
			return nil, nil
		}
		if !isNumber(v) {
			return nil, outputErr("Output %s is not a number, got %s instead.", p, pyClass(v))
		}
		if err := c.number(v, p); err != nil {
			return nil, err
		}
		return boolToInt(v), nil
	case TypeString:
		if v == nil {
			return nil, nil
		}
		s, ok := v.(string)
		if !ok {
			return nil, outputErr("Output %s must be a string, got %s instead.", p, pyType(v))
		}
		if err := c.str(s, p); err != nil {
			return nil, err
		}
		return strings.ReplaceAll(s, "\x00", ""), nil
	case TypeBoolean:
		return v, nil // Dify does not check booleans
	case TypeArrayNumber:
		arr, err := c.array(v, p, c.lim.MaxNumberArrayLength)
		if arr == nil || err != nil {
			return nil, err
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			if !isNumber(e) {
				return nil, outputErr("The element at index %d of output variable `%s` must be a number.", i, p)
			}
			out[i] = boolToInt(e)
		}
		return out, nil
	case TypeArrayString:
		arr, err := c.array(v, p, c.lim.MaxStringArrayLength)
		if arr == nil || err != nil {
			return nil, err
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			if e == nil {
				continue
			}
			s, ok := e.(string)
			if !ok {
				return nil, outputErr("Output %s[%d] must be a string, got %s instead.", p, i, pyType(e))
			}
			if err := c.str(s, fmt.Sprintf("%s[%d]", p, i)); err != nil {
				return nil, err
			}
			out[i] = strings.ReplaceAll(s, "\x00", "")
		}
		return out, nil
	case TypeArrayObject:
		arr, err := c.array(v, p, c.lim.MaxObjectArrayLength)
		if arr == nil || err != nil {
			return nil, err
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			if e == nil {
				continue
			}
			obj, ok := e.(*object)
			if !ok {
				return nil, outputErr("Output %s[%d] is not an object, got %s instead at index %d.", p, i, pyClass(e), i)
			}
			checked, err := c.object(obj, spec.Children, fmt.Sprintf("%s[%d]", p, i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = checked
		}
		return out, nil
	case TypeArrayBoolean:
		arr, err := c.array(v, p, -1)
		if arr == nil || err != nil {
			return nil, err
		}
		for i, e := range arr {
			if _, ok := e.(bool); e != nil && !ok {
				return nil, outputErr("Output %s[%d] is not a boolean, got %s instead.", p, i, pyClass(e))
			}
		}
		return arr, nil
	}
	return nil, outputErr("Output type %s is not supported.", spec.Type)
}

// array returns v as an array (nil for null) within max elements (-1: no limit).
func (c *checker) array(v any, p string, max int) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, outputErr("Output %s is not an array, got %s instead.", p, pyClass(v))
	}
	if max >= 0 && len(arr) > max {
		return nil, outputErr("The length of output variable `%s` must be less than %d elements.", p, max)
	}
	return arr, nil
}

// untyped checks a value of an object whose fields are not declared: nested objects and arrays
// recursively, strings and numbers against the limits.
func (c *checker) untyped(name string, v any, prefix string, depth int) error {
	p := path(prefix, name)
	switch t := v.(type) {
	case *object:
		_, err := c.object(t, nil, p, depth+1)
		return err
	case bool, nil:
		return nil
	case json.Number:
		return c.number(t, p)
	case string:
		return c.str(t, p)
	case []any:
		return c.untypedArray(name, t, prefix, depth)
	}
	return outputErr("Output %s is not a valid type.", p)
}

// untypedArray accepts arrays whose elements (nulls aside) share one type, with the type of the
// first element deciding, as Dify does; an array that starts with null is not checked.
func (c *checker) untypedArray(name string, arr []any, prefix string, depth int) error {
	p := path(prefix, name)
	if len(arr) == 0 || arr[0] == nil {
		return nil
	}
	all := func(ok func(any) bool) bool {
		for _, e := range arr {
			if e != nil && !ok(e) {
				return false
			}
		}
		return true
	}
	elem := func(i int) string { return fmt.Sprintf("%s[%d]", p, i) }
	switch arr[0].(type) {
	case json.Number, bool:
		if all(isNumber) {
			for i, e := range arr {
				if e != nil {
					if err := c.number(e, elem(i)); err != nil {
						return err
					}
				}
			}
			return nil
		}
	case string:
		if all(func(e any) bool { _, ok := e.(string); return ok }) {
			for i, e := range arr {
				if s, ok := e.(string); ok {
					if err := c.str(s, elem(i)); err != nil {
						return err
					}
				}
			}
			return nil
		}
	case *object:
		if all(func(e any) bool { _, ok := e.(*object); return ok }) {
			for i, e := range arr {
				if obj, ok := e.(*object); ok {
					if _, err := c.object(obj, nil, elem(i), depth+1); err != nil {
						return err
					}
				}
			}
			return nil
		}
	case []any:
		if all(func(e any) bool { _, ok := e.([]any); return ok }) {
			if depth+1 > c.lim.MaxDepth {
				return &Error{Kind: KindOutput, Type: TypeDepthLimit,
					Message: fmt.Sprintf("Depth limit %d reached, object too deep.", c.lim.MaxDepth)}
			}
			for i, e := range arr {
				if inner, ok := e.([]any); ok {
					if err := c.untypedArray(fmt.Sprintf("%s[%d]", name, i), inner, prefix, depth+1); err != nil {
						return err
					}
				}
			}
			return nil
		}
	}
	return outputErr("Output %s is not a valid array. make sure all elements are of the same type.", p)
}

func (c *checker) str(s, p string) error {
	if c.lim.MaxStringLength > 0 && utf8.RuneCountInString(s) > c.lim.MaxStringLength {
		return outputErr("The length of output variable `%s` must be less than %d characters", p, c.lim.MaxStringLength)
	}
	return nil
}

// number checks the range (exactly, as Python compares ints and floats) and a float's digits
// after the decimal point.
func (c *checker) number(v any, p string) error {
	n, ok := v.(json.Number)
	if !ok {
		return nil // a bool: 0 or 1
	}
	rangeErr := outputErr("Output variable `%s` is out of range, it must be between %d and %d.", p, c.lim.MinNumber, c.lim.MaxNumber)
	if isInt(n) {
		i, ok := new(big.Int).SetString(string(n), 10)
		if !ok {
			return rangeErr
		}
		if i.Cmp(big.NewInt(c.lim.MaxNumber)) > 0 || i.Cmp(big.NewInt(c.lim.MinNumber)) < 0 {
			return rangeErr
		}
		return nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return rangeErr // beyond float64: Python's float would be inf
	}
	bf := new(big.Float).SetFloat64(f)
	if bf.Cmp(new(big.Float).SetInt64(c.lim.MaxNumber)) > 0 || bf.Cmp(new(big.Float).SetInt64(c.lim.MinNumber)) < 0 {
		return rangeErr
	}
	if precision(f) > c.lim.MaxPrecision {
		return outputErr("Output variable `%s` has too high precision, it must be less than %d digits.", p, c.lim.MaxPrecision)
	}
	return nil
}

// precision is the number of digits after the decimal point of f's shortest decimal form
// (Python's Decimal(str(f)).normalize()).
func precision(f float64) int {
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	digits := strings.TrimRight(strings.TrimLeft(strings.Replace(mant, ".", "", 1), "-"), "0")
	if digits == "" {
		return 0
	}
	return max(0, len(digits)-1-e)
}

func boolToInt(v any) any {
	if b, ok := v.(bool); ok {
		if b {
			return json.Number("1")
		}
		return json.Number("0")
	}
	return v
}

// plain turns a parsed value into plain Go values.
func plain(v any) any {
	switch t := v.(type) {
	case *object:
		m := make(map[string]any, len(t.keys))
		for _, k := range t.keys {
			m[k] = plain(t.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	case json.Number:
		if isInt(t) {
			if i, err := t.Int64(); err == nil {
				return i
			}
		}
		f, _ := strconv.ParseFloat(string(t), 64)
		return f
	}
	return v
}

// encode writes a parsed value as JSON, objects in their key order.
func encode(buf *bytes.Buffer, v any) {
	switch t := v.(type) {
	case *object:
		buf.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeString(buf, k)
			buf.WriteByte(':')
			encode(buf, t.vals[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			encode(buf, e)
		}
		buf.WriteByte(']')
	case string:
		encodeString(buf, t)
	case json.Number:
		if !json.Valid([]byte(t)) {
			// A string such as "1.e+5" became a number: write it in a form JSON allows,
			// still a float.
			f, _ := strconv.ParseFloat(string(t), 64)
			buf.WriteString(strconv.FormatFloat(f, 'e', -1, 64))
			return
		}
		buf.WriteString(string(t))
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	default:
		buf.WriteString("null")
	}
}

func encodeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	buf.Truncate(buf.Len() - 1) // Encode's newline
}
