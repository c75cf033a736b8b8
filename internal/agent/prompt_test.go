package agent

import "testing"

func TestPyJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"a":[1,{"x":"é<"},[]],"c":{}}`: `{"b": 1, "a": [1, {"x": "é<"}, []], "c": {}}`,
		` "text" `:                             `"text"`,
		`[]`:                                   `[]`,
		`1.50`:                                 `1.50`,
	} {
		got, ok := pyJSON(in)
		if !ok || string(got) != want {
			t.Errorf("pyJSON(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{`{"a":`, `{"a":1}}`, ``, `nope`, `1 2`, `{} []`} {
		if got, ok := pyJSON(in); ok {
			t.Errorf("pyJSON(%q) = %s, want not JSON", in, got)
		}
	}
}
