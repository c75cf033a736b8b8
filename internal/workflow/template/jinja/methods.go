package jinja

import (
	"errors"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/parleyhq/parley/internal/workflow/value"
)

var strMethodNames = []string{"capitalize", "capwords", "casefold", "center", "count", "encode", "endswith",
	"expandtabs", "find", "format", "format_map", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
	"islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip",
	"partition", "removeprefix", "removesuffix", "rfind", "rjust", "rpartition", "rsplit", "rstrip", "split",
	"splitlines", "startswith", "strip", "swapcase", "title", "upper", "zfill"}

var dictMethodNames = []string{"get", "pop", "setdefault", "update", "copy", "clear"}

// methods is gonja's method set with the dict views in insertion order and str.replace taking
// an optional count, as Python's do.
var methods = func() exec.Methods {
	m := builtins.Methods
	str := map[string]exec.Method[string]{}
	for _, n := range strMethodNames {
		if f, ok := m.Str.Get(n); ok {
			str[n] = f
		}
	}
	str["replace"] = func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) < 2 || len(args.Args) > 3 || !args.Args[0].IsString() || !args.Args[1].IsString() {
			return nil, errors.New("replace expects (old, new[, count])")
		}
		count := -1
		if len(args.Args) == 3 {
			if !args.Args[2].IsInteger() {
				return nil, errors.New("replace count must be an integer")
			}
			count = args.Args[2].Integer()
		}
		return strings.Replace(self, args.Args[0].String(), args.Args[1].String(), count), nil
	}
	dict := map[string]exec.Method[map[string]any]{}
	for _, n := range dictMethodNames {
		if f, ok := m.Dict.Get(n); ok {
			dict[n] = f
		}
	}
	orig := map[string]exec.Method[map[string]any]{}
	for _, n := range []string{"keys", "values", "items"} {
		orig[n], _ = m.Dict.Get(n)
	}
	view := func(name string, pick func(p *exec.Pair) any) exec.Method[map[string]any] {
		return func(self map[string]any, sv *exec.Value, args *exec.VarArgs) (any, error) {
			d, ok := sv.Interface().(*exec.Dict)
			if !ok {
				return orig[name](self, sv, args)
			}
			out := make(pyList, len(d.Pairs))
			for i, p := range d.Pairs {
				out[i] = pick(p)
			}
			return out, nil
		}
	}
	dict["keys"] = view("keys", func(p *exec.Pair) any { return p.Key.Interface() })
	dict["values"] = view("values", func(p *exec.Pair) any { return p.Value.Interface() })
	dict["items"] = view("items", func(p *exec.Pair) any { return pyList{p.Key.Interface(), p.Value.Interface()} })
	m.Str = exec.NewMethodSet(str)
	m.Dict = exec.NewMethodSet(dict)
	return m
}()

// filters is gonja's filter set with tojson as Jinja2 writes it: keys sorted, ", " and ": "
// separators, non-ASCII escaped, and <, >, & and ' escaped for HTML.
var filters = func() *exec.FilterSet {
	f := exec.NewFilterSet(map[string]exec.FilterFunction{})
	f.Update(builtins.Filters)
	_ = f.Replace("tojson", filterToJSON)
	_ = f.Register(noneFilter, filterNone)
	return f
}()

func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	indent := 0
	if v, ok := params.KwArgs["indent"]; ok && v.IsInteger() {
		indent = v.Integer()
	} else if len(params.Args) > 0 && params.Args[0].IsInteger() {
		indent = params.Args[0].Integer()
	}
	s := value.JSONDumps(sortKeys(fromGonja(in.Interface())), indent)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '<':
			b.WriteString(`\u003c`)
		case r == '>':
			b.WriteString(`\u003e`)
		case r == '&':
			b.WriteString(`\u0026`)
		case r == '\'':
			b.WriteString(`\u0027`)
		case r > 0x7e && r != 0x7f:
			for _, u := range utf16.Encode([]rune{r}) {
				b.WriteString(`\u`)
				const hex = "0123456789abcdef"
				b.WriteByte(hex[u>>12&0xf])
				b.WriteByte(hex[u>>8&0xf])
				b.WriteByte(hex[u>>4&0xf])
				b.WriteByte(hex[u&0xf])
			}
		default:
			b.WriteRune(r)
		}
	}
	return exec.AsSafeValue(b.String())
}

func sortKeys(v any) any {
	switch t := v.(type) {
	case *value.Object:
		keys := t.Keys()
		sort.Strings(keys)
		o := value.NewObject()
		for _, k := range keys {
			e, _ := t.Get(k)
			o.Set(k, sortKeys(e))
		}
		return o
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = sortKeys(e)
		}
		return out
	}
	return v
}

// fromGonja converts a template value back to the workflow value model.
func fromGonja(v any) any {
	switch t := v.(type) {
	case *exec.Value:
		if t == nil {
			return nil
		}
		return fromGonja(t.Interface())
	case *exec.Dict:
		o := value.NewObject()
		for _, p := range t.Pairs {
			o.Set(p.Key.String(), fromGonja(p.Value))
		}
		return o
	case exec.Dict:
		return fromGonja(&t)
	case pyList:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = fromGonja(e)
		}
		return out
	case exec.ValuesList:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = fromGonja(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = fromGonja(e)
		}
		return out
	case map[string]any:
		o := value.FromGo(t).(*value.Object)
		o.Range(func(k string, e any) bool { o.Set(k, fromGonja(e)); return true })
		return o
	}
	return value.FromGo(v)
}
