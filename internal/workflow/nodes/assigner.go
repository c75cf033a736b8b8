package nodes

import (
	"context"
	"fmt"
	"math"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// assigner writes conversation variables, as Dify's variable assigner does. Version 1 has one
// target, a write mode (over-write, append, clear) and an input selector; version 2 has a list
// of items, each an operation on a target with a variable or constant value: over-write, set,
// clear, append, extend, +=, -=, *=, /=, remove-first, remove-last. The runner persists the
// conversation variables after the run.
type assigner struct{ items []assignItem }

type assignItem struct {
	target    []string
	operation string
	// input is a selector (input_type variable) or nil, with constant the value otherwise.
	input    []string
	constant any
}

// Assigner operations.
const (
	opOverwrite   = "over-write"
	opSet         = "set"
	opClear       = "clear"
	opAppend      = "append"
	opExtend      = "extend"
	opAdd         = "+="
	opSub         = "-="
	opMul         = "*="
	opDiv         = "/="
	opRemoveFirst = "remove-first"
	opRemoveLast  = "remove-last"
)

func newAssigner(n *workflow.Node) (workflow.NodeRunner, error) {
	a := &assigner{}
	if items, ok := n.Data["items"].([]any); ok || str(n.Data["version"]) == "2" {
		for i, it := range items {
			m := mapping(it)
			item := assignItem{target: workflow.Selector(m["variable_selector"]), operation: str(m["operation"])}
			if str(m["input_type"]) == "variable" {
				item.input = workflow.Selector(m["value"])
			} else {
				item.constant = fromGo(m["value"])
			}
			if err := checkTarget(item.target); err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			a.items = append(a.items, item)
		}
		return a, nil
	}
	item := assignItem{target: workflow.Selector(n.Data["assigned_variable_selector"]), operation: str(n.Data["write_mode"]),
		input: workflow.Selector(n.Data["input_variable_selector"])}
	if item.operation == "" {
		item.operation = opOverwrite
	}
	if err := checkTarget(item.target); err != nil {
		return nil, err
	}
	a.items = append(a.items, item)
	return a, nil
}

func checkTarget(sel []string) error {
	if len(sel) != 2 || sel[0] != workflow.ScopeConversation {
		return fmt.Errorf("the variable to assign must be a conversation variable, not %v", sel)
	}
	return nil
}

func (a *assigner) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	updated := make([]any, 0, len(a.items))
	for _, it := range a.items {
		cur, ok := x.Pool.Get(it.target)
		if !ok {
			return workflow.Result{}, workflow.Errorf("VariableOperatorNodeError", "conversation variable %s does not exist", it.target[1])
		}
		in := it.constant
		if it.input != nil {
			v, ok := x.Pool.Get(it.input)
			if !ok && it.operation != opClear && it.operation != opRemoveFirst && it.operation != opRemoveLast {
				return workflow.Result{}, workflow.Errorf("VariableOperatorNodeError", "input variable %v does not exist", it.input)
			}
			in = v
		}
		next, err := apply(it.operation, cur, in)
		if err != nil {
			return workflow.Result{}, workflow.Errorf("VariableOperatorNodeError", "%s on %s: %v", it.operation, it.target[1], err)
		}
		x.Pool.Set(it.target[0], it.target[1], next)
		updated = append(updated, value.ObjectOf("name", it.target[1], "selector", []any{it.target[0], it.target[1]},
			"value_type", value.TypeOf(next), "new_value", next))
	}
	return workflow.Result{Inputs: map[string]any{}, Outputs: map[string]any{},
		ProcessData: map[string]any{"updated_variables": updated}}, nil
}

// apply computes a variable's new value.
func apply(op string, cur, in any) (any, error) {
	switch op {
	case opOverwrite, opSet:
		return value.Clone(in), nil
	case opClear:
		return zero(cur), nil
	case opAppend:
		arr, ok := cur.([]any)
		if !ok && cur != nil {
			return nil, fmt.Errorf("the variable is not an array")
		}
		return append(append([]any{}, arr...), value.Clone(in)), nil
	case opExtend:
		arr, ok := cur.([]any)
		if !ok && cur != nil {
			return nil, fmt.Errorf("the variable is not an array")
		}
		more, ok := in.([]any)
		if !ok {
			return nil, fmt.Errorf("the value is not an array")
		}
		return append(append([]any{}, arr...), more...), nil
	case opRemoveFirst, opRemoveLast:
		arr, ok := cur.([]any)
		if !ok {
			return nil, fmt.Errorf("the variable is not an array")
		}
		if len(arr) == 0 {
			return arr, nil
		}
		if op == opRemoveFirst {
			return append([]any{}, arr[1:]...), nil
		}
		return append([]any{}, arr[:len(arr)-1]...), nil
	case opAdd, opSub, opMul, opDiv:
		return arithmetic(op, cur, in)
	}
	return nil, fmt.Errorf("unknown operation %q", op)
}

func zero(cur any) any {
	switch cur.(type) {
	case string:
		return ""
	case int64:
		return int64(0)
	case float64:
		return float64(0)
	case bool:
		return false
	case *value.Object:
		return value.NewObject()
	case []any:
		return []any{}
	}
	return nil
}

func arithmetic(op string, cur, in any) (any, error) {
	a, aInt, ok1 := number(cur)
	b, bInt, ok2 := number(in)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("both the variable and the value must be numbers")
	}
	var r float64
	switch op {
	case opAdd:
		r = a + b
	case opSub:
		r = a - b
	case opMul:
		r = a * b
	case opDiv:
		if b == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		r = a / b
	}
	if aInt && bInt && op != opDiv && r == math.Trunc(r) && math.Abs(r) < 1<<62 {
		return int64(r), nil
	}
	return r, nil
}

func number(v any) (float64, bool, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true, true
	case float64:
		return x, false, true
	}
	return 0, false, false
}
