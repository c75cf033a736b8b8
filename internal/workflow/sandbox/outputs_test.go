package sandbox_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/sandbox"
)

func spec(name, typ string, children ...sandbox.OutputSpec) sandbox.OutputSpec {
	return sandbox.OutputSpec{Name: name, Type: typ, Children: children}
}

// obj declares an object whose children are declared (an empty, non-nil list when none).
func obj(name string, children ...sandbox.OutputSpec) sandbox.OutputSpec {
	if children == nil {
		children = []sandbox.OutputSpec{}
	}
	return sandbox.OutputSpec{Name: name, Type: sandbox.TypeObject, Children: children}
}

func TestCheckOutputsAccepts(t *testing.T) {
	declared := []sandbox.OutputSpec{
		spec("b", sandbox.TypeString),
		spec("n", sandbox.TypeNumber),
		spec("flag", sandbox.TypeNumber),
		spec("f", sandbox.TypeNumber),
		spec("obj", sandbox.TypeObject), // children: null, unchecked
		obj("typed", spec("z", sandbox.TypeString), spec("a", sandbox.TypeArrayNumber)),
		spec("strs", sandbox.TypeArrayString),
		spec("objs", sandbox.TypeArrayObject, spec("k", sandbox.TypeBoolean)),
		spec("bools", sandbox.TypeArrayBoolean),
		spec("none", sandbox.TypeString),
		spec("sci", sandbox.TypeNumber),
	}
	result := `{"sci": "1.5E-3", "none": null, "bools": [true, null], "objs": [{"k": 1}, null],
		"strs": ["x\u0000y", null], "typed": {"a": [1, true, 2.5], "z": "q"}, "obj": {"deep": {"list": [1, 2], "s": "a\u0000"}},
		"f": 0.125, "flag": true, "n": 9223372036854775807, "b": "<b>"}`
	out, err := sandbox.CheckOutputs([]byte(result), declared, sandbox.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	// Declared order, NULs dropped from typed strings only, booleans as numbers become 0/1, a
	// string in scientific notation a number.
	want := `{"b":"<b>","n":9223372036854775807,"flag":1,"f":0.125,"obj":{"deep":{"list":[1,2],"s":"a\u0000"}},` +
		`"typed":{"z":"q","a":[1,1,2.5]},"strs":["xy",null],"objs":[{"k":1},null],"bools":[true,null],"none":null,"sci":1.5E-3}`
	if string(out.JSON) != want {
		t.Fatalf("JSON\n%s\nwant\n%s", out.JSON, want)
	}
	wantVals := map[string]any{
		"b": "<b>", "n": int64(9223372036854775807), "flag": int64(1), "f": 0.125,
		"obj":   map[string]any{"deep": map[string]any{"list": []any{int64(1), int64(2)}, "s": "a\x00"}},
		"typed": map[string]any{"z": "q", "a": []any{int64(1), int64(1), 2.5}},
		"strs":  []any{"xy", nil}, "objs": []any{map[string]any{"k": int64(1)}, nil}, "bools": []any{true, nil},
		"none": nil, "sci": 0.0015,
	}
	if !reflect.DeepEqual(out.Values, wantVals) {
		t.Fatalf("values\n%#v\nwant\n%#v", out.Values, wantVals)
	}
}

// TestCheckOutputsRejects pins Dify's messages, word for word.
func TestCheckOutputsRejects(t *testing.T) {
	lim := sandbox.DefaultLimits()
	long := `"` + strings.Repeat("é", lim.MaxStringLength+1) + `"`
	many := func(n int, elem string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]"
	}
	deep := `{"a": {"b": {"c": {"d": {"e": 1}}}}}`
	cases := []struct {
		name     string
		result   string
		declared []sandbox.OutputSpec
		typ      string
		want     string
	}{
		{"missing", `{}`, []sandbox.OutputSpec{spec("x", sandbox.TypeString)}, sandbox.TypeOutputValidation, "Output x is missing."},
		{"extra", `{"x": "a", "y": 1}`, []sandbox.OutputSpec{spec("x", sandbox.TypeString)}, sandbox.TypeCodeNode, "Not all output parameters are validated."},
		{"not a string", `{"x": 1}`, []sandbox.OutputSpec{spec("x", sandbox.TypeString)}, sandbox.TypeOutputValidation, "Output x must be a string, got int instead."},
		{"long string", `{"x": ` + long + `}`, []sandbox.OutputSpec{spec("x", sandbox.TypeString)}, sandbox.TypeOutputValidation,
			"The length of output variable `x` must be less than 400000 characters"},
		{"not a number", `{"x": "1"}`, []sandbox.OutputSpec{spec("x", sandbox.TypeNumber)}, sandbox.TypeOutputValidation, "Output x is not a number, got <class 'str'> instead."},
		{"too big", `{"x": 9223372036854775808}`, []sandbox.OutputSpec{spec("x", sandbox.TypeNumber)}, sandbox.TypeOutputValidation,
			"Output variable `x` is out of range, it must be between -9223372036854775807 and 9223372036854775807."},
		{"too small", `{"x": -9223372036854775808}`, []sandbox.OutputSpec{spec("x", sandbox.TypeNumber)}, sandbox.TypeOutputValidation,
			"Output variable `x` is out of range, it must be between -9223372036854775807 and 9223372036854775807."},
		{"float too big", `{"x": 9.3e18}`, []sandbox.OutputSpec{spec("x", sandbox.TypeNumber)}, sandbox.TypeOutputValidation, "is out of range"},
		{"precision", `{"x": 1.5e-21}`, []sandbox.OutputSpec{spec("x", sandbox.TypeNumber)}, sandbox.TypeOutputValidation,
			"Output variable `x` has too high precision, it must be less than 20 digits."},
		{"not an object", `{"x": [1]}`, []sandbox.OutputSpec{spec("x", sandbox.TypeObject)}, sandbox.TypeOutputValidation, "Output x is not an object, got <class 'list'> instead."},
		{"nested missing", `{"x": {"y": {}}}`, []sandbox.OutputSpec{obj("x", obj("y", spec("z", sandbox.TypeNumber)))}, sandbox.TypeOutputValidation, "Output x.y.z is missing."},
		{"not an array", `{"x": "a"}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayString)}, sandbox.TypeOutputValidation, "Output x is not an array, got <class 'str'> instead."},
		{"string array length", `{"x": ` + many(31, `"a"`) + `}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayString)}, sandbox.TypeOutputValidation,
			"The length of output variable `x` must be less than 30 elements."},
		{"object array length", `{"x": ` + many(31, `{}`) + `}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayObject)}, sandbox.TypeOutputValidation,
			"The length of output variable `x` must be less than 30 elements."},
		{"number array length", `{"x": ` + many(1001, `1`) + `}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayNumber)}, sandbox.TypeOutputValidation,
			"The length of output variable `x` must be less than 1000 elements."},
		{"number element", `{"x": [1, null]}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayNumber)}, sandbox.TypeOutputValidation,
			"The element at index 1 of output variable `x` must be a number."},
		{"string element", `{"x": ["a", 2]}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayString)}, sandbox.TypeOutputValidation, "Output x[1] must be a string, got int instead."},
		{"object element", `{"x": [{}, 2]}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayObject)}, sandbox.TypeOutputValidation,
			"Output x[1] is not an object, got <class 'int'> instead at index 1."},
		{"boolean element", `{"x": [true, "no"]}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayBoolean)}, sandbox.TypeOutputValidation,
			"Output x[1] is not a boolean, got <class 'str'> instead."},
		{"object element field", `{"x": [{"k": 1}, {}]}`, []sandbox.OutputSpec{spec("x", sandbox.TypeArrayObject, spec("k", sandbox.TypeNumber))}, sandbox.TypeOutputValidation,
			"Output x[1].k is missing."},
		{"mixed untyped array", `{"x": {"l": [1, "a"]}}`, []sandbox.OutputSpec{spec("x", sandbox.TypeObject)}, sandbox.TypeOutputValidation,
			"Output x.l is not a valid array. make sure all elements are of the same type."},
		{"untyped string length", `{"x": {"l": ["a", ` + long + `]}}`, []sandbox.OutputSpec{spec("x", sandbox.TypeObject)}, sandbox.TypeOutputValidation,
			"The length of output variable `x.l[1]` must be less than 400000 characters"},
		{"untyped number range", `{"x": {"n": 1e300}}`, []sandbox.OutputSpec{spec("x", sandbox.TypeObject)}, sandbox.TypeOutputValidation,
			"Output variable `x.n` is out of range"},
		{"depth", `{"x": ` + deep + `}`, []sandbox.OutputSpec{spec("x", sandbox.TypeObject)}, sandbox.TypeDepthLimit, "Depth limit 5 reached, object too deep."},
		{"unsupported type", `{"x": 1}`, []sandbox.OutputSpec{spec("x", "array[file]")}, sandbox.TypeOutputValidation, "Output type array[file] is not supported."},
		{"not a dict", `[1]`, nil, sandbox.TypeExecution, "Result must be a dict, got list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := sandbox.CheckOutputs([]byte(c.result), c.declared, lim)
			var se *sandbox.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *sandbox.Error", err)
			}
			if se.Type != c.typ || !strings.Contains(se.Message, c.want) {
				t.Fatalf("got %s %q, want %s %q", se.Type, se.Message, c.typ, c.want)
			}
		})
	}
	// One level less deep passes.
	if _, err := sandbox.CheckOutputs([]byte(`{"x": {"a": {"b": {"c": {"d": 1}}}}}`), []sandbox.OutputSpec{spec("x", sandbox.TypeObject)}, lim); err != nil {
		t.Fatalf("depth 5: %v", err)
	}
}

// TestCheckOutputsOfRuns runs both languages and checks their results as the engine will.
func TestCheckOutputsOfRuns(t *testing.T) {
	t.Parallel()
	r := newRunner(t, sandbox.Options{})
	declared := []sandbox.OutputSpec{spec("result", sandbox.TypeString), spec("n", sandbox.TypeNumber)}
	for lang, code := range map[string]string{
		sandbox.Python3:    "def main(a):\n    return {'n': len(a), 'result': a.upper()}\n",
		sandbox.JavaScript: "function main({a}) { return {n: a.length, result: a.toUpperCase()} }",
	} {
		out, serr := run(t, r, lang, code, map[string]any{"a": "abc"})
		if serr != nil {
			t.Fatal(serr)
		}
		got, err := sandbox.CheckOutputs([]byte(out), declared, sandbox.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if string(got.JSON) != `{"result":"ABC","n":3}` || got.Values["n"] != int64(3) {
			t.Fatalf("%s: %s %#v", lang, got.JSON, got.Values)
		}
		// An output the code does not return is Dify's error.
		_, err = sandbox.CheckOutputs([]byte(out), append(declared, spec("other", sandbox.TypeString)), sandbox.DefaultLimits())
		if err == nil || err.Error() != "Output other is missing." {
			t.Fatalf("%s: %v", lang, err)
		}
	}
}
