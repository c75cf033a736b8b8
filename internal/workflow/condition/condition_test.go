package condition

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/value"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	strs := []any{"a", "b"}
	cases := []struct {
		op       string
		actual   any
		expected any
		want     bool
	}{
		{OpContains, "hello world", "lo w", true},
		{OpContains, "hello", "x", false},
		{OpContains, "", "", false}, // empty actual never contains
		{OpContains, nil, "a", false},
		{OpContains, "abc1", int64(1), true}, // str(expected)
		{OpContains, strs, "a", true},
		{OpContains, []any{int64(1), int64(2)}, "1", false}, // "1" != 1
		{OpContains, []any{int64(1), int64(2)}, 1.0, true},  // 1 == 1.0
		{OpNotContains, "hello", "x", true},
		{OpNotContains, "", "x", true},
		{OpNotContains, nil, "x", true},
		{OpNotContains, strs, "a", false},
		{OpStartWith, "hello", "he", true},
		{OpStartWith, "hello", "lo", false},
		{OpStartWith, "", "", false},
		{OpEndWith, "hello", "lo", true},
		{OpEndWith, nil, "lo", false},
		{OpIs, "x", "x", true},
		{OpIs, "x", "X", false},
		{OpIs, nil, "x", false},
		{OpIs, true, true, true},
		{OpIs, true, false, false},
		{OpIsNot, "x", "y", true},
		{OpIsNot, nil, "y", false},
		{OpEmpty, "", nil, true},
		{OpEmpty, nil, nil, true},
		{OpEmpty, []any{}, nil, true},
		{OpEmpty, value.NewObject(), nil, true},
		{OpEmpty, int64(0), nil, true}, // Python falsiness
		{OpEmpty, false, nil, true},
		{OpEmpty, " ", nil, false},
		{OpNotEmpty, strs, nil, true},
		{OpNotEmpty, int64(0), nil, false},
		{OpEqual, int64(5), "5", true},
		{OpEqual, int64(5), " 5 ", true},
		{OpEqual, int64(5), 5.9, true}, // int(5.9) truncates
		{OpEqual, 5.0, "5", true},
		{OpEqual, 0.1, "0.10", true},
		{OpEqual, nil, "5", false},
		{OpEqual, true, "x", true}, // bool("x")
		{OpEqual, true, "", false},
		{OpNotEqual, int64(5), "6", true},
		{OpNotEqual, nil, "6", false},
		{OpGreater, int64(10), "9", true},
		{OpGreater, int64(10), "9.5", true},
		{OpGreater, 2.5, "2.5", false},
		{OpGreater, nil, "1", false},
		{OpGreater, true, "0", true}, // True is 1
		{OpGreater, int64(9007199254740993), "9007199254740992", true},
		{OpLess, int64(1), "1e3", true},
		{OpLess, int64(1), "1_000", true},
		{OpGreaterEq, int64(3), "3", true},
		{OpGreaterEq, 2.9, "3", false},
		{OpLessEq, int64(3), "3.0", true},
		{OpLessEq, 3.1, int64(3), false},
		{OpIn, "a", strs, true},
		{OpIn, "c", strs, false},
		{OpIn, nil, strs, false},
		{OpNotIn, "c", strs, true},
		{OpNotIn, nil, strs, true},
		{OpAllOf, []any{"a", "b", "c"}, strs, true},
		{OpAllOf, []any{"a"}, strs, false},
		{OpAllOf, "a b", strs, true}, // substring on strings
		{OpAllOf, []any{}, strs, false},
		{OpAllOf, int64(3), strs, false},
		{OpAllOf, []any{true, false}, []any{true}, true},
		{OpNull, nil, nil, true},
		{OpNull, "", nil, false},
		{OpNotNull, "", nil, true},
		{OpExists, int64(0), nil, true},
		{OpNotExists, nil, nil, true},
	}
	for _, c := range cases {
		got, err := Compare(c.op, c.actual, c.expected)
		if err != nil {
			t.Errorf("%v %s %v: error %v", c.actual, c.op, c.expected, err)
			continue
		}
		if got != c.want {
			t.Errorf("%v %s %v = %v, want %v", c.actual, c.op, c.expected, got, c.want)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		op       string
		actual   any
		expected any
	}{
		{OpContains, int64(5), "5"},
		{OpContains, value.ObjectOf("a", int64(1)), "a"},
		{OpStartWith, int64(5), "5"},
		{OpStartWith, "abc", []any{"a"}},
		{OpIs, int64(5), "5"},
		{OpEqual, "5", "5"},        // = is for numbers and booleans
		{OpEqual, int64(5), "5.5"}, // int("5.5") fails in Python too
		{OpEqual, int64(5), "x"},
		{OpEqual, 1.5, "x"},
		{OpGreater, "10", "9"},
		{OpGreater, int64(10), "ten"},
		{OpGreater, int64(10), "0x10"},
		{OpIn, "a", "a"},
		{OpAllOf, strs(), "a"},
		{OpAllOf, strs(), []any{"a", true}},
		{"like", "a", "a"},
	}
	for _, c := range cases {
		if _, err := Compare(c.op, c.actual, c.expected); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v %s %v: err = %v, want ErrInvalid", c.actual, c.op, c.expected, err)
		}
	}
}

func strs() []any { return []any{"a"} }

func pool() func([]string) (any, bool) {
	p := value.ObjectOf(
		"sys", value.ObjectOf("query", "refund please", "files", []any{
			&value.File{Type: "image", TransferMethod: "local_file", Filename: "a.png", Extension: ".png", Size: 10},
			&value.File{Type: "document", TransferMethod: "remote_url", RemoteURL: "https://x/b.pdf", Filename: "b.pdf", Extension: "pdf", Size: 5000},
		}),
		"start", value.ObjectOf("n", int64(3), "flag", true, "flags", []any{true, true}, "limit", "2", "none", nil, "nofiles", []any{}),
	)
	return func(sel []string) (any, bool) { return value.Path(p, sel) }
}

func TestEvaluateTemplatesAndBooleans(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		c    Condition
		want bool
	}{
		{"value with reference", Condition{VariableSelector: []string{"start", "n"}, ComparisonOperator: ">", Value: "{{#start.limit#}}"}, true},
		{"boolean expected from text", Condition{VariableSelector: []string{"start", "flag"}, ComparisonOperator: "is", Value: "true"}, true},
		{"boolean expected false", Condition{VariableSelector: []string{"start", "flag"}, ComparisonOperator: "=", Value: "0"}, false},
		{"boolean DSL value", Condition{VariableSelector: []string{"start", "flag"}, ComparisonOperator: "is", Value: true}, true},
		{"array[boolean] all of text", Condition{VariableSelector: []string{"start", "flags"}, ComparisonOperator: "all of", Value: []any{"true"}}, true},
		{"number DSL value", Condition{VariableSelector: []string{"start", "n"}, ComparisonOperator: "=", Value: int64(3)}, true},
		{"number decoded from JSON", Condition{VariableSelector: []string{"start", "n"}, ComparisonOperator: "=", Value: 3.0}, true},
		{"fraction decoded from JSON", Condition{VariableSelector: []string{"start", "n"}, ComparisonOperator: "<", Value: 3.5}, true},
		{"string list value", Condition{VariableSelector: []string{"sys", "query"}, ComparisonOperator: "in", Value: []string{"refund please"}}, true},
		{"not exists on None", Condition{VariableSelector: []string{"start", "none"}, ComparisonOperator: "not exists"}, true},
	}
	for _, c := range cases {
		r, err := Evaluate([]Condition{c.c}, "and", pool())
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.Final != c.want {
			t.Errorf("%s = %v, want %v", c.name, r.Final, c.want)
		}
	}
	if _, err := Evaluate([]Condition{{VariableSelector: []string{"start", "flag"}, ComparisonOperator: "is", Value: "yes"}}, "and", pool()); !errors.Is(err, ErrInvalid) {
		t.Errorf("non-JSON boolean text: err = %v", err)
	}
	if _, err := Evaluate([]Condition{{VariableSelector: []string{"start", "missing"}, ComparisonOperator: "exists"}}, "and", pool()); !errors.Is(err, ErrInvalid) {
		t.Errorf("missing variable: err = %v", err)
	}
}

func TestEvaluateShortCircuitAndInputs(t *testing.T) {
	t.Parallel()
	bad := Condition{VariableSelector: []string{"start", "n"}, ComparisonOperator: "start with", Value: "x"} // would error
	f := Condition{VariableSelector: []string{"sys", "query"}, ComparisonOperator: "contains", Value: "nope"}
	tr := Condition{VariableSelector: []string{"sys", "query"}, ComparisonOperator: "contains", Value: "refund"}
	r, err := Evaluate([]Condition{f, bad}, "and", pool())
	if err != nil || r.Final || len(r.GroupResults) != 1 {
		t.Errorf("and short circuit: %+v %v", r, err)
	}
	r, err = Evaluate([]Condition{tr, bad}, "or", pool())
	if err != nil || !r.Final || len(r.GroupResults) != 1 {
		t.Errorf("or short circuit: %+v %v", r, err)
	}
	if _, err := Evaluate([]Condition{tr, bad}, "and", pool()); !errors.Is(err, ErrInvalid) {
		t.Errorf("and reaches the bad condition: %v", err)
	}
	r, _ = Evaluate([]Condition{tr, tr}, "and", pool())
	if !r.Final || len(r.Inputs) != 2 || r.Inputs[0].ExpectedValue != "refund" || r.Inputs[0].ActualValue != "refund please" {
		t.Errorf("inputs = %+v", r.Inputs)
	}
	if r, _ := Evaluate(nil, "and", pool()); !r.Final {
		t.Error("empty and should hold")
	}
	if r, _ := Evaluate(nil, "or", pool()); r.Final {
		t.Error("empty or should not hold")
	}
}

func TestFileSubConditions(t *testing.T) {
	t.Parallel()
	files := []string{"sys", "files"}
	sub := func(logical string, conds ...SubCondition) *SubVariableCondition {
		return &SubVariableCondition{LogicalOperator: logical, Conditions: conds}
	}
	cases := []struct {
		name string
		c    Condition
		want bool
	}{
		{"contains image", Condition{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("and", SubCondition{Key: "type", ComparisonOperator: "in", Value: []any{"image"}})}, true},
		{"extension without dot matches", Condition{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("and", SubCondition{Key: "extension", ComparisonOperator: "is", Value: "pdf"})}, true},
		{"not in needs every file", Condition{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("and", SubCondition{Key: "type", ComparisonOperator: "not in", Value: []any{"image"}})}, false},
		{"size and name", Condition{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("and",
			SubCondition{Key: "size", ComparisonOperator: ">", Value: "1000"},
			SubCondition{Key: "name", ComparisonOperator: "end with", Value: ".pdf"})}, true},
		{"or", Condition{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("or",
			SubCondition{Key: "type", ComparisonOperator: "is", Value: "video"},
			SubCondition{Key: "transfer_method", ComparisonOperator: "is", Value: "remote_url"})}, true},
		{"empty file list, not-operator holds", Condition{VariableSelector: []string{"start", "nofiles"}, VarType: "array[file]", ComparisonOperator: "contains", SubVariableCondition: sub("and", SubCondition{Key: "type", ComparisonOperator: "not in", Value: []any{"image"}})}, true},
		{"single file attribute selector", Condition{VariableSelector: []string{"sys", "query"}, ComparisonOperator: "start with", Value: "refund"}, true},
		{"file list empty check", Condition{VariableSelector: files, ComparisonOperator: "not empty"}, true},
	}
	for _, c := range cases {
		r, err := Evaluate([]Condition{c.c}, "and", pool())
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.Final != c.want {
			t.Errorf("%s = %v, want %v", c.name, r.Final, c.want)
		}
	}
	if _, err := Evaluate([]Condition{{VariableSelector: files, ComparisonOperator: "contains"}}, "and", pool()); !errors.Is(err, ErrInvalid) {
		t.Errorf("contains on files without sub-conditions: %v", err)
	}
	// An empty sub-condition list holds under "and" and fails under "or", as Python's all/any.
	if r, err := Evaluate([]Condition{{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("and")}}, "and", pool()); err != nil || !r.Final {
		t.Errorf("empty and: %+v %v", r, err)
	}
	if r, err := Evaluate([]Condition{{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("or")}}, "and", pool()); err != nil || r.Final {
		t.Errorf("empty or: %+v %v", r, err)
	}
	if _, err := Evaluate([]Condition{{VariableSelector: files, ComparisonOperator: "contains", SubVariableCondition: sub("and", SubCondition{Key: "colour", ComparisonOperator: "is", Value: "x"})}}, "and", pool()); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown file attribute: %v", err)
	}
}

func TestSelectCaseFromDSL(t *testing.T) {
	t.Parallel()
	var cases []Case
	dsl := `[
	 {"case_id": "c1", "logical_operator": "and", "conditions": [
	   {"id": "x", "varType": "string", "variable_selector": ["sys", "query"], "comparison_operator": "contains", "value": "cancel"}]},
	 {"case_id": "c2", "logical_operator": "or", "conditions": [
	   {"id": "y", "varType": "number", "variable_selector": ["start", "n"], "comparison_operator": "≥", "value": "5"},
	   {"id": "z", "varType": "string", "variable_selector": ["sys", "query"], "comparison_operator": "start with", "value": "refund"}]}]`
	if err := json.Unmarshal([]byte(dsl), &cases); err != nil {
		t.Fatal(err)
	}
	id, last, err := SelectCase(cases, pool())
	if err != nil || id != "c2" || !last.Final || len(last.GroupResults) != 2 {
		t.Errorf("SelectCase = %q %+v %v", id, last, err)
	}
	id, _, err = SelectCase(cases[:1], pool())
	if err != nil || id != "false" {
		t.Errorf("no case holds: %q %v", id, err)
	}
}
