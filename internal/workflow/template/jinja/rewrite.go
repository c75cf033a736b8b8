package jinja

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	gonjacs "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Packages whose structs the rewrite walks.
var (
	nodesPkg             = reflect.TypeFor[nodes.Output]().PkgPath()
	controlStructuresPkg = reflect.TypeFor[gonjacs.ForControlStructure]().PkgPath()
	ownPkg               = reflect.TypeFor[iterationCheck]().PkgPath()
)

// Names of the filters the rewrite inserts.
const (
	printFilter = "__parley_print"
	opFilter    = "__parley_op"
)

// rewrite adapts a parsed template, before it runs, in three ways:
//   - each {{ expr }} becomes {{ expr | __parley_print }} so values print as Jinja2 prints them
//     ({{ name | __parley_print('name') }} for a bare name, so None can be told from undefined);
//   - each a * b, a + b and a ~ b becomes a | __parley_op('op', b), the same arithmetic with a
//     cap on the size of strings and lists it builds;
//   - each for-loop body starts with a check of the guard, so a deadline stops a loop between
//     iterations.
//
// Control structures keep their bodies in their own fields, so the walk goes through every
// exported struct field by reflection.
func rewrite(root *nodes.Template, g *guard) {
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			walk(v.Elem())
			switch n := v.Interface().(type) {
			case *nodes.Output:
				wrapOutput(n)
			case *gonjacs.ForControlStructure:
				if n.BodyWrapper != nil {
					check := &nodes.ControlStructureBlock{Location: n.Position(), Name: "guard", ControlStructure: &iterationCheck{g: g, at: n.Position()}}
					n.BodyWrapper.Nodes = append([]nodes.Node{check}, n.BodyWrapper.Nodes...)
				}
			}
		case reflect.Interface:
			if v.IsNil() {
				return
			}
			walk(v.Elem())
			be, ok := v.Interface().(*nodes.BinaryExpression)
			if !ok || !v.CanSet() || be.Operator == nil || be.Operator.Token == nil {
				return
			}
			switch be.Operator.Token.Type {
			case tokens.Multiply, tokens.Addition, tokens.Tilde:
			default:
				return
			}
			tok := be.Operator.Token
			repl := &nodes.FilteredExpression{Expression: be.Left, Filters: []*nodes.FilterCall{{
				Token: tok, Name: opFilter,
				Args: []nodes.Expression{&nodes.String{Location: tok, Val: tok.Val}, be.Right},
			}}}
			if reflect.TypeOf(repl).AssignableTo(v.Type()) {
				v.Set(reflect.ValueOf(repl))
			}
		case reflect.Struct:
			pkg := v.Type().PkgPath()
			gonjaNode := pkg == nodesPkg || pkg == controlStructuresPkg
			if !gonjaNode && pkg != ownPkg {
				return // tokens, parser state, the guard: nothing to rewrite
			}
			for i := 0; i < v.NumField(); i++ {
				f := v.Field(i)
				switch {
				case v.Type().Field(i).IsExported():
					walk(f)
				case gonjaNode && f.CanAddr():
					// Some control structures (set, if, with, …) keep their expressions in
					// unexported fields; reach them to bound their operators too.
					walk(reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem())
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
	switch e := out.Expression.(type) {
	case *nodes.Name:
		call.Args = []nodes.Expression{&nodes.String{Location: e.Name, Val: e.Name.Val}}
	case *nodes.GetAttribute:
		if parent, ok := e.Node.(nodes.Expression); ok && e.Attribute != "" && pure(parent) {
			call.Args = []nodes.Expression{parent, &nodes.String{Location: e.Location, Val: e.Attribute}}
		}
	case *nodes.GetItem:
		parent, ok := e.Node.(nodes.Expression)
		key, isKey := e.Arg.(nodes.Expression)
		switch e.Arg.(type) {
		case *nodes.String, *nodes.Integer:
		default:
			isKey = false
		}
		if ok && isKey && pure(parent) {
			call.Args = []nodes.Expression{parent, key}
		}
	}
	out.Expression = &nodes.FilteredExpression{Expression: out.Expression, Filters: []*nodes.FilterCall{call}}
	if out.Alternative != nil {
		out.Alternative = &nodes.FilteredExpression{Expression: out.Alternative, Filters: []*nodes.FilterCall{{Token: out.Alternative.Position(), Name: printFilter}}}
	}
}

// pure reports whether evaluating e twice is harmless: a name, or attribute and literal-key
// lookups below one.
func pure(e nodes.Node) bool {
	switch t := e.(type) {
	case *nodes.Name:
		return true
	case *nodes.GetAttribute:
		return pure(t.Node)
	case *nodes.GetItem:
		switch t.Arg.(type) {
		case *nodes.String, *nodes.Integer:
			return pure(t.Node)
		}
	}
	return false
}

// iterationCheck stops a loop between iterations once the guard has tripped.
type iterationCheck struct {
	g  *guard
	at *tokens.Token
}

func (c *iterationCheck) Position() *tokens.Token { return c.at }
func (c *iterationCheck) String() string          { return "guard" }

func (c *iterationCheck) Execute(*exec.Renderer, *nodes.ControlStructureBlock) error {
	return c.g.err()
}

// filterPrint prints dicts and lists as Python's repr (gonja quotes strings inside them
// naively and prints None inside them as nothing), and a variable or dict key holding None as
// "None" where gonja prints nothing.
func filterPrint(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsNil() {
		switch len(params.Args) {
		case 1: // {{ name }}
			if e.Environment.Context.Has(params.Args[0].String()) {
				return exec.AsValue("None")
			}
		case 2: // {{ parent.key }}, {{ parent['key'] }} or {{ parent[3] }}
			parent, key := params.Args[0], params.Args[1]
			if d, ok := parent.Interface().(*exec.Dict); ok && key.IsString() {
				for _, p := range d.Pairs {
					if p.Key.String() == key.String() {
						return exec.AsValue("None")
					}
				}
			}
			if parent.IsList() && key.IsInteger() {
				if i := key.Integer(); i < parent.Len() && i >= -parent.Len() {
					return exec.AsValue("None")
				}
			}
		}
		return in
	}
	switch in.Interface().(type) {
	case *exec.Dict, exec.Dict, pyList, pyTuple, exec.ValuesList, []any, map[string]any:
		return exec.AsValue(repr(in.Interface()))
	}
	return in
}

// errTooBig is returned when an operator would build a string or list over the size cap.
var errTooBig = errors.New("result too large")

// opFilter returns the filter behind a * b, a + b and a ~ b: gonja's arithmetic, with strings
// capped at maxLen characters and lists at maxItems items.
func opFilterFunc(maxLen, maxItems int) exec.FilterFunction {
	return func(_ *exec.Evaluator, left *exec.Value, params *exec.VarArgs) *exec.Value {
		if left.IsError() {
			return left
		}
		if len(params.Args) != 2 {
			return exec.AsValue(errors.New("internal operator call"))
		}
		op, right := params.Args[0].String(), params.Args[1]
		switch op {
		case "~":
			return capString(left.String()+right.String(), maxLen)
		case "+":
			if left.IsList() {
				if !right.IsList() {
					return exec.AsValue(fmt.Errorf("unable to concatenate a list and %s", right.String()))
				}
				if left.Len()+right.Len() > maxItems {
					return exec.AsValue(fmt.Errorf("%w: a list over %d items", errTooBig, maxItems))
				}
				out := make(pyList, 0, left.Len()+right.Len())
				for _, l := range []*exec.Value{left, right} {
					for i := 0; i < l.Len(); i++ {
						out = append(out, l.Index(i).Interface())
					}
				}
				return exec.AsValue(out)
			}
			if left.IsFloat() || right.IsFloat() {
				return exec.AsValue(left.Float() + right.Float())
			}
			if left.IsString() || right.IsString() {
				return capString(left.String()+right.String(), maxLen)
			}
			return exec.AsValue(left.Integer() + right.Integer())
		case "*":
			if left.IsFloat() || right.IsFloat() {
				return exec.AsValue(left.Float() * right.Float())
			}
			if right.IsString() && !left.IsString() { // 3 * 'ab', as Python allows
				left, right = right, left
			}
			if right.IsList() && !left.IsList() {
				left, right = right, left
			}
			switch {
			case left.IsString():
				n := right.Integer()
				if n <= 0 {
					return exec.AsValue("")
				}
				if utf8.RuneCountInString(left.String()) > maxLen/n {
					return exec.AsValue(fmt.Errorf("%w: a string over %d characters", errTooBig, maxLen))
				}
				return exec.AsValue(strings.Repeat(left.String(), n))
			case left.IsList(): // [1, 2] * 3
				n := right.Integer()
				if n <= 0 || left.Len() == 0 {
					return exec.AsValue(pyList{})
				}
				if left.Len() > maxItems/n {
					return exec.AsValue(fmt.Errorf("%w: a list over %d items", errTooBig, maxItems))
				}
				out := make(pyList, 0, left.Len()*n)
				for range n {
					for i := 0; i < left.Len(); i++ {
						out = append(out, left.Index(i).Interface())
					}
				}
				return exec.AsValue(out)
			}
			return exec.AsValue(left.Integer() * right.Integer())
		}
		return exec.AsValue(fmt.Errorf("unknown operator %q", op))
	}
}

func capString(s string, maxLen int) *exec.Value {
	if len(s) > maxLen && utf8.RuneCountInString(s) > maxLen {
		return exec.AsValue(fmt.Errorf("%w: a string over %d characters", errTooBig, maxLen))
	}
	return exec.AsValue(s)
}
