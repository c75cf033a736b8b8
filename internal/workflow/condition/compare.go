package condition

import (
	"math"
	"strings"

	"github.com/parleyhq/parley/internal/workflow/value"
)

// Compare applies one operator to an actual and an already prepared expected value with Dify's
// rules. Unary operators (empty, not empty, null, not null, exists, not exists) ignore expected.
func Compare(op string, actual, expected any) (bool, error) {
	switch op {
	case OpContains, OpNotContains:
		neg := op == OpNotContains
		if !truthy(actual) {
			return neg, nil
		}
		switch a := actual.(type) {
		case string:
			return strings.Contains(a, value.PyStr(expected)) != neg, nil
		case []any:
			return pyIn(expected, a) != neg, nil
		}
		return false, invalid("%q needs a string or an array, not %s", op, value.TypeOf(actual))
	case OpStartWith, OpEndWith:
		if !truthy(actual) {
			return false, nil
		}
		a, ok := actual.(string)
		if !ok {
			return false, invalid("%q needs a string, not %s", op, value.TypeOf(actual))
		}
		e, ok := expected.(string)
		if !ok {
			return false, invalid("%q needs a string to compare with, not %s", op, value.TypeOf(expected))
		}
		if op == OpStartWith {
			return strings.HasPrefix(a, e), nil
		}
		return strings.HasSuffix(a, e), nil
	case OpIs, OpIsNot:
		if actual == nil {
			return false, nil
		}
		switch actual.(type) {
		case string, bool:
			return pyEqual(actual, expected) != (op == OpIsNot), nil
		}
		return false, invalid("%q needs a string or a boolean, not %s", op, value.TypeOf(actual))
	case OpEmpty:
		return !truthy(actual), nil
	case OpNotEmpty:
		return truthy(actual), nil
	case OpNull, OpNotExists:
		return actual == nil, nil
	case OpNotNull, OpExists:
		return actual != nil, nil
	case OpEqual, OpNotEqual:
		if actual == nil {
			return false, nil
		}
		e, err := equalityExpected(actual, expected)
		if err != nil {
			return false, err
		}
		return pyEqual(actual, e) != (op == OpNotEqual), nil
	case OpGreater, OpLess, OpGreaterEq, OpLessEq:
		if actual == nil {
			return false, nil
		}
		return numericCompare(op, actual, expected)
	case OpIn, OpNotIn:
		if actual == nil {
			return op == OpNotIn, nil
		}
		l, ok := expected.([]any)
		if !ok {
			return false, invalid("%q needs an array to compare with, not %s", op, value.TypeOf(expected))
		}
		return pyIn(actual, l) != (op == OpNotIn), nil
	case OpAllOf:
		return allOf(actual, expected)
	}
	return false, invalid("unsupported operator %q", op)
}

func allOf(actual, expected any) (bool, error) {
	l, ok := expected.([]any)
	allStr, allBool := ok, ok
	for _, e := range l {
		_, s := e.(string)
		_, b := e.(bool)
		allStr = allStr && s
		allBool = allBool && b
	}
	if !allStr && !allBool {
		return false, invalid("%q needs a list of strings or a list of booleans", OpAllOf)
	}
	if !truthy(actual) {
		return false, nil
	}
	switch a := actual.(type) {
	case []any:
		for _, e := range l {
			if !pyIn(e, a) {
				return false, nil
			}
		}
		return true, nil
	case string:
		if !allStr {
			return false, nil
		}
		for _, e := range l {
			if !strings.Contains(a, e.(string)) {
				return false, nil
			}
		}
		return true, nil
	}
	return false, nil
}

// truthy is Python's truth value: None, "", 0, 0.0, False, [] and {} are false.
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
	case []any:
		return len(t) > 0
	case *value.Object:
		return t.Len() > 0
	}
	return true
}

// pyIn is Python's "x in list".
func pyIn(x any, l []any) bool {
	for _, e := range l {
		if pyEqual(x, e) {
			return true
		}
	}
	return false
}

// asNumber views a value as Python sees numbers: booleans are the integers 0 and 1.
func asNumber(v any) (i int64, f float64, isInt, ok bool) {
	switch t := v.(type) {
	case bool:
		if t {
			return 1, 1, true, true
		}
		return 0, 0, true, true
	case int64:
		return t, float64(t), true, true
	case float64:
		return 0, t, false, true
	}
	return 0, 0, false, false
}

// pyEqual is Python's == over the value model (1 == 1.0 == True; "1" != 1).
func pyEqual(a, b any) bool {
	ai, af, aInt, aNum := asNumber(a)
	bi, bf, bInt, bNum := asNumber(b)
	if aNum || bNum {
		if !aNum || !bNum {
			return false
		}
		if aInt && bInt {
			return ai == bi
		}
		return af == bf
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case *value.Object:
		y, ok := b.(*value.Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		eq := true
		x.Range(func(k string, v any) bool {
			w, ok := y.Get(k)
			eq = ok && pyEqual(v, w)
			return eq
		})
		return eq
	case *value.File:
		y, ok := b.(*value.File)
		return ok && (x == y || *x == *y)
	}
	return false
}

// equalityExpected converts expected to the actual value's kind for = and ≠: a boolean takes
// Python's bool(expected), an integer int(expected) (a non-integer string is an error), a float
// float(expected).
func equalityExpected(actual, expected any) (any, error) {
	switch actual.(type) {
	case bool:
		switch e := expected.(type) {
		case bool:
			return e, nil
		case int64:
			return e != 0, nil
		case string:
			return e != "", nil
		}
		return nil, invalid("cannot convert %s to a boolean", value.TypeOf(expected))
	case int64:
		switch e := expected.(type) {
		case bool:
			if e {
				return int64(1), nil
			}
			return int64(0), nil
		case int64:
			return e, nil
		case float64:
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return nil, invalid("cannot convert %s to an integer", value.PyFloat(e))
			}
			return int64(e), nil
		case string:
			n, err := pyInt(e)
			if err != nil {
				return nil, err
			}
			return n, nil
		}
		return nil, invalid("cannot convert %s to an integer", value.TypeOf(expected))
	case float64:
		switch e := expected.(type) {
		case bool, int64, float64:
			_, f, _, _ := asNumber(e)
			return f, nil
		case string:
			return pyFloatParse(e)
		}
		return nil, invalid("cannot convert %s to a number", value.TypeOf(expected))
	}
	return nil, invalid("%q needs a number or a boolean, not %s", OpEqual, value.TypeOf(actual))
}

func numericCompare(op string, actual, expected any) (bool, error) {
	ai, af, aInt, ok := asNumber(actual)
	if !ok {
		return false, invalid("%q needs a number, not %s", op, value.TypeOf(actual))
	}
	var ei int64
	var ef float64
	var eInt bool
	switch e := expected.(type) {
	case string:
		f, err := pyFloatParse(e)
		if err != nil {
			return false, err
		}
		ef = f
		// An integer compared with an integral expected value compares as integers.
		if aInt && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			ei, eInt = int64(f), true
			if n, err := pyInt(e); err == nil {
				ei = n
			}
		}
	case bool, int64, float64:
		ei, ef, eInt, _ = asNumber(e)
	default:
		return false, invalid("cannot convert %s to a number", value.TypeOf(expected))
	}
	var c int
	if aInt && eInt {
		c = cmpOrdered(ai, ei)
	} else {
		if math.IsNaN(af) || math.IsNaN(ef) {
			return false, nil
		}
		c = cmpOrdered(af, ef)
	}
	switch op {
	case OpGreater:
		return c > 0, nil
	case OpLess:
		return c < 0, nil
	case OpGreaterEq:
		return c >= 0, nil
	default:
		return c <= 0, nil
	}
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func pyInt(s string) (int64, error) {
	if n, ok := value.ParseInt(s); ok {
		return n, nil
	}
	return 0, invalid("cannot convert %s to an integer", value.PyQuote(s))
}

func pyFloatParse(s string) (float64, error) {
	if f, ok := value.ParseFloat(s); ok {
		return f, nil
	}
	return 0, invalid("cannot convert %s to a number", value.PyQuote(s))
}
