// Package condition evaluates Dify's conditions: if-else cases, loop break conditions and the
// file sub-conditions of both. The operator semantics, type rules and error cases follow Dify's
// condition processor; see docs/workflow.md.
package condition

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Operators Dify supports, as they appear in DSL files.
const (
	OpContains    = "contains"
	OpNotContains = "not contains"
	OpStartWith   = "start with"
	OpEndWith     = "end with"
	OpIs          = "is"
	OpIsNot       = "is not"
	OpEmpty       = "empty"
	OpNotEmpty    = "not empty"
	OpIn          = "in"
	OpNotIn       = "not in"
	OpAllOf       = "all of"
	OpEqual       = "="
	OpNotEqual    = "≠"
	OpGreater     = ">"
	OpLess        = "<"
	OpGreaterEq   = "≥"
	OpLessEq      = "≤"
	OpNull        = "null"
	OpNotNull     = "not null"
	OpExists      = "exists"
	OpNotExists   = "not exists"
)

// Operators lists every supported operator.
var Operators = []string{OpContains, OpNotContains, OpStartWith, OpEndWith, OpIs, OpIsNot, OpEmpty, OpNotEmpty,
	OpIn, OpNotIn, OpAllOf, OpEqual, OpNotEqual, OpGreater, OpLess, OpGreaterEq, OpLessEq, OpNull, OpNotNull,
	OpExists, OpNotExists}

// ErrInvalid marks a condition that cannot be evaluated: an unknown operator, an operator that
// does not apply to the variable's type, a value that does not convert, a missing variable.
var ErrInvalid = errors.New("invalid condition")

// Condition is one comparison, in the DSL's shape.
type Condition struct {
	ID                   string                `json:"id,omitempty"`
	VarType              string                `json:"varType,omitempty"`
	VariableSelector     []string              `json:"variable_selector"`
	ComparisonOperator   string                `json:"comparison_operator"`
	Value                any                   `json:"value,omitempty"` // string (may hold {{#…#}}), []string, bool, []bool or nil
	SubVariableCondition *SubVariableCondition `json:"sub_variable_condition,omitempty"`
}

// SubVariableCondition filters the files of an array[file] variable by their attributes.
type SubVariableCondition struct {
	CaseID          string         `json:"case_id,omitempty"`
	LogicalOperator string         `json:"logical_operator"`
	Conditions      []SubCondition `json:"conditions"`
}

// SubCondition compares one file attribute (type, size, name, mime_type, transfer_method, url,
// extension, related_id).
type SubCondition struct {
	ID                 string `json:"id,omitempty"`
	Key                string `json:"key"`
	ComparisonOperator string `json:"comparison_operator"`
	Value              any    `json:"value,omitempty"`
}

// Case is an if-else branch: conditions joined by "and" or "or".
type Case struct {
	CaseID          string      `json:"case_id"`
	LogicalOperator string      `json:"logical_operator"`
	Conditions      []Condition `json:"conditions"`
}

// Input records one evaluated comparison as Dify reports it in a node's process data.
type Input struct {
	ActualValue        any    `json:"actual_value"`
	ExpectedValue      any    `json:"expected_value"`
	ComparisonOperator string `json:"comparison_operator"`
}

// Result is the outcome of a condition group.
type Result struct {
	Inputs       []Input
	GroupResults []bool
	Final        bool
}

// Evaluate runs conditions joined by logical ("and" or "or"; anything else counts as "and"),
// short-circuiting as Dify does: the first false under "and" or the first true under "or"
// decides, and later conditions are not evaluated. A condition whose variable does not exist is
// an error.
func Evaluate(conds []Condition, logical string, lookup template.Lookup) (Result, error) {
	var res Result
	isOr := logical == "or"
	for _, c := range conds {
		ok, in, err := evalOne(c, lookup)
		if err != nil {
			return res, err
		}
		if in != nil {
			res.Inputs = append(res.Inputs, *in)
		}
		res.GroupResults = append(res.GroupResults, ok)
		if isOr == ok {
			res.Final = ok
			return res, nil
		}
	}
	// Nothing decided early: every "and" condition held, or no "or" condition did.
	res.Final = !isOr
	return res, nil
}

// SelectCase evaluates if-else cases in order and returns the id of the first case that holds,
// or "false" when none does, with the result of the last case evaluated.
func SelectCase(cases []Case, lookup template.Lookup) (caseID string, last Result, err error) {
	for _, c := range cases {
		last, err = Evaluate(c.Conditions, c.LogicalOperator, lookup)
		if err != nil {
			return "", last, fmt.Errorf("case %s: %w", c.CaseID, err)
		}
		if last.Final {
			return c.CaseID, last, nil
		}
	}
	return "false", last, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func evalOne(c Condition, lookup template.Lookup) (bool, *Input, error) {
	actual, ok := lookup(c.VariableSelector)
	if !ok {
		return false, nil, invalid("variable %s not found", strings.Join(c.VariableSelector, "."))
	}
	op := c.ComparisonOperator
	if isFileArray(actual, c) && (op == OpContains || op == OpNotContains || op == OpAllOf) {
		if c.SubVariableCondition == nil {
			return false, nil, invalid("operator %q on a file list needs sub-variable conditions", op)
		}
		r, err := evalSub(actual.([]any), c.SubVariableCondition)
		return r, nil, err
	}
	if op == OpExists || op == OpNotExists {
		r, err := Compare(op, actual, nil)
		return r, nil, err
	}
	expected, err := prepareExpected(actual, c.Value, lookup)
	if err != nil {
		return false, nil, err
	}
	in := &Input{ActualValue: actual, ExpectedValue: expected, ComparisonOperator: op}
	r, err := Compare(op, actual, expected)
	return r, in, err
}

func isFileArray(v any, c Condition) bool {
	a, ok := v.([]any)
	if !ok {
		return false
	}
	if len(a) == 0 {
		return c.VarType == "array[file]" || c.SubVariableCondition != nil
	}
	return value.ArrayType(a) == "array[file]"
}

// prepareExpected renders a string value's references as text and converts it for boolean
// variables; other values pass through when they are strings, booleans or lists of either.
// Numbers in the DSL (Dify itself wants text) are accepted as their text.
func prepareExpected(actual, expected any, lookup template.Lookup) (any, error) {
	switch t := expected.(type) {
	case string:
		expected = template.Render(t, lookup, value.Text)
	case int64:
		expected = value.Text(t)
	case float64:
		// encoding/json reads every DSL number as a float; a whole number is written as
		// the integer the export holds.
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			expected = strconv.FormatInt(int64(t), 10)
		} else {
			expected = value.Text(t)
		}
	case []string:
		l := make([]any, len(t))
		for i, s := range t {
			l[i] = s
		}
		expected = l
	case []bool:
		l := make([]any, len(t))
		for i, s := range t {
			l[i] = s
		}
		expected = l
	}
	if expected == nil {
		return nil, nil
	}
	arr, isArr := actual.([]any)
	if _, isBool := actual.(bool); isBool || (isArr && value.ArrayType(arr) == "array[boolean]") {
		if l, ok := expected.([]any); ok {
			out := make([]any, len(l))
			for i, e := range l {
				b, err := toBool(e)
				if err != nil {
					return nil, err
				}
				out[i] = b
			}
			return out, nil
		}
		return toBool(expected)
	}
	switch t := expected.(type) {
	case string, bool:
		return t, nil
	case []any:
		allStr, allBool := true, true
		for _, e := range t {
			_, s := e.(string)
			_, b := e.(bool)
			allStr = allStr && s
			allBool = allBool && b
		}
		if allStr || allBool {
			return t, nil
		}
	}
	return nil, invalid("unexpected expected value %s", value.PyRepr(expected))
}

// toBool converts an expected value for a boolean variable: a boolean or integer, or a string
// holding JSON true, false or an integer.
func toBool(v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case int64:
		return t != 0, nil
	case string:
		d, err := value.Decode([]byte(t))
		if err == nil {
			switch n := d.(type) {
			case bool:
				return n, nil
			case int64:
				return n != 0, nil
			}
		}
	}
	return false, invalid("cannot convert %s to a boolean", value.PyRepr(v))
}

func evalSub(files []any, sub *SubVariableCondition) (bool, error) {
	results := make([]bool, 0, len(sub.Conditions))
	for _, c := range sub.Conditions {
		if !validAttr(c.Key) {
			return false, invalid("%q is not a file attribute", c.Key)
		}
		expected := c.Value
		if c.Key == "extension" {
			s, ok := expected.(string)
			if !ok {
				return false, invalid("the expected value for extension must be a string")
			}
			if s != "" && !strings.HasPrefix(s, ".") {
				expected = "." + s
			}
		}
		if l, ok := expected.([]string); ok {
			a := make([]any, len(l))
			for i, s := range l {
				a[i] = s
			}
			expected = a
		}
		all := strings.Contains(c.ComparisonOperator, "not")
		r := all
		for _, f := range files {
			got, _ := f.(*value.File).Attr(c.Key)
			if c.Key == "extension" {
				if s, ok := got.(string); ok && s != "" && !strings.HasPrefix(s, ".") {
					got = "." + s
				}
			}
			ok, err := Compare(c.ComparisonOperator, got, expected)
			if err != nil {
				return false, err
			}
			if all && !ok {
				r = false
			}
			if !all && ok {
				r = true
			}
		}
		results = append(results, r)
	}
	if sub.LogicalOperator == "or" {
		for _, r := range results {
			if r {
				return true, nil
			}
		}
		return false, nil
	}
	for _, r := range results {
		if !r {
			return false, nil
		}
	}
	return true, nil
}

func validAttr(k string) bool {
	for _, a := range value.FileAttributes {
		if a == k {
			return true
		}
	}
	return false
}
