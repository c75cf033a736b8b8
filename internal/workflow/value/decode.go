package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// MaxDepth is how deeply Decode lets arrays and objects nest. Python's JSON decoder stops near
// the same depth (its recursion limit), and everything that walks a value recursively (renderers,
// templates) relies on this bound.
const MaxDepth = 1000

// Decode parses one JSON document into a value: objects become *Object in document order,
// integers that fit int64 become int64, other numbers float64. Trailing data and nesting
// deeper than MaxDepth are errors.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("value: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxDepth {
			return nil, fmt.Errorf("value: JSON nested deeper than %d levels", MaxDepth)
		}
		switch t {
		case '{':
			o := NewObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("value: %w", err)
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("value: %w", err)
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("value: %w", err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("value: unexpected %v", t)
	case json.Number:
		return number(t)
	default: // string, bool, nil
		return t, nil
	}
}

func number(n json.Number) (any, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, fmt.Errorf("value: number %q: %w", s, err)
	}
	return f, nil
}

// FromGo normalises a Go value into the value model: maps become *Object (map keys sorted, since
// Go maps have no order), slices become []any, every integer kind int64, float32 float64,
// json.Number int64 or float64, File a *File. Objects and arrays already in the model are
// normalised element by element (in place for *Object). Structs and other kinds go through
// encoding/json. Non-finite floats are kept.
func FromGo(v any) any {
	switch t := v.(type) {
	case nil, string, int64, float64, bool, *File:
		return v
	case int:
		return int64(t)
	case int8:
		return int64(t)
	case int16:
		return int64(t)
	case int32:
		return int64(t)
	case uint:
		return uintValue(uint64(t))
	case uint8:
		return int64(t)
	case uint16:
		return int64(t)
	case uint32:
		return int64(t)
	case uint64:
		return uintValue(t)
	case float32:
		return float64(t)
	case json.Number:
		n, err := number(t)
		if err != nil {
			return t.String()
		}
		return n
	case File:
		f := t
		return &f
	case *Object:
		if t == nil {
			return nil
		}
		for _, k := range t.keys {
			t.m[k] = FromGo(t.m[k])
		}
		return t
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = FromGo(e)
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = e
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		o := NewObject()
		for _, k := range keys {
			o.Set(k, FromGo(t[k]))
		}
		return o
	case json.RawMessage:
		d, err := Decode(t)
		if err != nil {
			return string(t)
		}
		return d
	}
	return fromReflect(v)
}

func uintValue(u uint64) any {
	if u > math.MaxInt64 {
		return float64(u)
	}
	return int64(u)
}

func fromReflect(v any) any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return FromGo(rv.Elem().Interface())
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintValue(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = FromGo(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		o := NewObject()
		for _, k := range keys {
			o.Set(k, FromGo(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface()))
		}
		return o
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	d, err := Decode(b)
	if err != nil {
		return string(b)
	}
	return d
}
