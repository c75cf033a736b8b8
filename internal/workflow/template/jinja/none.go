package jinja

import (
	"reflect"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
)

// noneFilter is applied to every bare {{ name }}: Jinja2 prints a defined variable holding None
// as "None" (an undefined one as ""), while gonja prints both as "".
const noneFilter = "__parley_none"

func filterNone(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if !in.IsNil() || len(params.Args) != 1 {
		return in
	}
	if e.Environment.Context.Has(params.Args[0].String()) {
		return exec.AsValue("None")
	}
	return in
}

// markNoneOutputs rewrites each {{ name }} in the parsed template to {{ name | __parley_none('name') }}.
// Control structures keep their bodies in their own fields, so the walk goes through every
// struct field by reflection.
func markNoneOutputs(root *nodes.Template) {
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
				if name, ok := out.Expression.(*nodes.Name); ok {
					out.Expression = &nodes.FilteredExpression{
						Expression: name,
						Filters: []*nodes.FilterCall{{
							Token: name.Name,
							Name:  noneFilter,
							Args:  []nodes.Expression{&nodes.String{Location: name.Name, Val: name.Name.Val}},
						}},
					}
				}
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
