package jinja

import (
	"reflect"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"

	"github.com/parleyhq/parley/internal/workflow/value"
)

// printFilter is applied to every {{ expression }} so that values print as Jinja2 prints them:
// dicts and lists as Python's repr (gonja quotes strings inside them naively and prints None
// inside them as nothing), and a defined variable holding None as "None" (an undefined one
// prints nothing, in both).
const printFilter = "__parley_print"

func filterPrint(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsNil() {
		if len(params.Args) == 1 && e.Environment.Context.Has(params.Args[0].String()) {
			return exec.AsValue("None")
		}
		return in
	}
	switch in.Interface().(type) {
	case *exec.Dict, exec.Dict, pyList, exec.ValuesList, []any, map[string]any:
		return exec.AsValue(value.PyRepr(fromGonja(in.Interface())))
	}
	return in
}

// markOutputs rewrites each {{ expr }} in the parsed template to {{ expr | __parley_print }}
// ({{ name | __parley_print('name') }} for a bare name, so the filter can tell None from
// undefined). Control structures keep their bodies in their own fields, so the walk goes
// through every exported struct field by reflection.
func markOutputs(root *nodes.Template) {
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			if out, ok := v.Interface().(*nodes.Output); ok {
				wrapOutput(out)
				return
			}
			walk(v.Elem())
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				walk(iter.Value())
			}
		}
	}
	walk(reflect.ValueOf(root))
}

func wrapOutput(out *nodes.Output) {
	if out.Expression == nil {
		return
	}
	call := &nodes.FilterCall{Token: out.Expression.Position(), Name: printFilter}
	if name, ok := out.Expression.(*nodes.Name); ok {
		call.Args = []nodes.Expression{&nodes.String{Location: name.Name, Val: name.Name.Val}}
	}
	out.Expression = &nodes.FilteredExpression{Expression: out.Expression, Filters: []*nodes.FilterCall{call}}
	if out.Alternative != nil {
		out.Alternative = &nodes.FilteredExpression{Expression: out.Alternative, Filters: []*nodes.FilterCall{{Token: out.Alternative.Position(), Name: printFilter}}}
	}
}
