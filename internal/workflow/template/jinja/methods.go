package jinja

import (
	"errors"
	"fmt"
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
	for _, n := range []string{"center", "ljust", "rjust", "zfill", "expandtabs"} {
		if f, ok := str[n]; ok {
			str[n] = func(self string, sv *exec.Value, args *exec.VarArgs) (any, error) {
				if err := checkWidths(args); err != nil {
					return nil, err
				}
				if _, ok := args.KwArgs["fillchar"]; !ok && len(args.Args) == 1 && n != "zfill" && n != "expandtabs" {
					args.Args = append(args.Args, exec.AsValue(" ")) // gonja's default fillchar is not a string
				}
				return f(self, sv, args)
			}
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
	dict["items"] = view("items", func(p *exec.Pair) any { return pyTuple{p.Key.Interface(), p.Value.Interface()} })
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
	for _, n := range []string{"center", "indent", "wordwrap", "truncate"} {
		if inner, ok := f.Get(n); ok {
			_ = f.Replace(n, func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
				if err := checkWidths(params); err != nil {
					return exec.AsValue(err)
				}
				return inner(e, in, params)
			})
		}
	}
	_ = f.Register(printFilter, filterPrint)
	// gonja's versions return nothing for an ordered dict, and reverse leaves lists of one or
	// two items as they are.
	for name, fn := range map[string]exec.FilterFunction{"items": filterItems, "dictsort": filterDictSort, "reverse": filterReverse} {
		if f.Exists(name) {
			_ = f.Replace(name, fn)
		} else {
			_ = f.Register(name, fn)
		}
	}
	return f
}()

// pairsOf returns a dict's (key, value) pairs in insertion order.
func pairsOf(in *exec.Value) ([]pyTuple, bool) {
	switch d := in.Interface().(type) {
	case *exec.Dict:
		out := make([]pyTuple, len(d.Pairs))
		for i, p := range d.Pairs {
			out[i] = pyTuple{p.Key.Interface(), p.Value.Interface()}
		}
		return out, true
	}
	if !in.IsDict() {
		return nil, false
	}
	var out []pyTuple
	in.Iterate(func(_, _ int, k, v *exec.Value) bool {
		out = append(out, pyTuple{k.Interface(), v.Interface()})
		return true
	}, func() {})
	return out, true
}

// filterItems is Jinja2's items: a dict's (key, value) pairs in order.
func filterItems(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsError() || in.IsNil() {
		return exec.AsValue(pyList{})
	}
	pairs, ok := pairsOf(in)
	if !ok {
		return exec.AsValue(errors.New("items expects a dict"))
	}
	out := make(pyList, len(pairs))
	for i, p := range pairs {
		out[i] = p
	}
	return exec.AsValue(out)
}

// filterDictSort is Jinja2's dictsort(case_sensitive=False, by='key', reverse=False).
func filterDictSort(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	pairs, ok := pairsOf(in)
	if !ok {
		return exec.AsValue(errors.New("dictsort expects a dict"))
	}
	arg := func(i int, name string) *exec.Value {
		if v, ok := params.KwArgs[name]; ok {
			return v
		}
		if i < len(params.Args) {
			return params.Args[i]
		}
		return nil
	}
	caseSensitive := arg(0, "case_sensitive") != nil && arg(0, "case_sensitive").IsTrue()
	byValue := arg(1, "by") != nil && arg(1, "by").String() == "value"
	reverse := arg(2, "reverse") != nil && arg(2, "reverse").IsTrue()
	key := func(p pyTuple) *exec.Value {
		v := exec.AsValue(p[0])
		if byValue {
			v = exec.AsValue(p[1])
		}
		if !caseSensitive && v.IsString() {
			return exec.AsValue(strings.ToLower(v.String()))
		}
		return v
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		a, b := key(pairs[i]), key(pairs[j])
		if reverse {
			a, b = b, a
		}
		if a.IsNumber() && b.IsNumber() {
			return a.Float() < b.Float()
		}
		return a.String() < b.String()
	})
	out := make(pyList, len(pairs))
	for i, p := range pairs {
		out[i] = p
	}
	return exec.AsValue(out)
}

// filterReverse is Jinja2's reverse: a reversed copy of a list, or a reversed string.
func filterReverse(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	switch {
	case in.IsError() || in.IsNil():
		return in
	case in.IsString():
		r := []rune(in.String())
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return exec.AsValue(string(r))
	case in.IsList():
		n := in.Len()
		out := make(pyList, n)
		for i := 0; i < n; i++ {
			out[n-1-i] = in.Index(i).Interface()
		}
		return exec.AsValue(out)
	}
	return exec.AsValue(errors.New("reverse expects a list or a string"))
}

// renderFilters adds the size-capped operators of one render to the shared filters.
func renderFilters(g *guard) *exec.FilterSet {
	f := exec.NewFilterSet(map[string]exec.FilterFunction{opFilter: opFilterFunc(4*g.maxOutput, g.maxItems)})
	f.Update(filters)
	return f
}

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
	case pyTuple:
		return fromGonja(pyList(t))
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

// maxWidth bounds the width arguments of padding filters and methods (center, indent,
// ljust, …), which otherwise allocate whatever they are asked for.
const maxWidth = 1 << 20

func checkWidths(args *exec.VarArgs) error {
	check := func(v *exec.Value) error {
		if v.IsInteger() && v.Integer() > maxWidth {
			return fmt.Errorf("%w: width %d is over %d", errTooBig, v.Integer(), maxWidth)
		}
		return nil
	}
	for _, a := range args.Args {
		if err := check(a); err != nil {
			return err
		}
	}
	for _, a := range args.KwArgs {
		if err := check(a); err != nil {
			return err
		}
	}
	return nil
}
