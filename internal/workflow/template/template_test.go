package template

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/workflow/value"
)

func TestParse(t *testing.T) {
	t.Parallel()
	got := Parse("Hi {{#sys.query#}}{{#1711528708924.text#}} and {{#llm.structured_output.name#}}!")
	want := []Part{
		{Text: "Hi "},
		{Text: "sys.query", Selector: []string{"sys", "query"}},
		{Text: "1711528708924.text", Selector: []string{"1711528708924", "text"}},
		{Text: " and "},
		{Text: "llm.structured_output.name", Selector: []string{"llm", "structured_output", "name"}},
		{Text: "!"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse = %#v", got)
	}
	if got[1].Raw() != "{{#sys.query#}}" || got[0].Raw() != "Hi " {
		t.Error("Raw")
	}
}

func TestParseRejectsWhatDifyRejects(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 51)
	for _, s := range []string{
		"{{#context#}}",        // no dot: handled by the LLM node itself
		"{{#histories#}}",      //
		"{{#a-b.c#}}",          // dash in node id (UUIDs)
		"{{#" + long + ".x#}}", // node id over 50
		"{{#n.1abc#}}",         // segment starting with a digit
		"{{#n." + strings.Repeat("b", 31) + "#}}", // segment over 30
		"{{#n.a.b.c.d.e.f.g.h.i.j.k#}}",           // 11 segments
		"{{ #n.a# }}", "{{n.a}}", "{#n.a#}",
	} {
		if HasReferences(s) {
			t.Errorf("%q parsed as a reference: %#v", s, Parse(s))
		}
	}
	for _, s := range []string{"{{#" + strings.Repeat("a", 50) + ".x#}}", "{{#n.a.b.c.d.e.f.g.h.i.j#}}", "{{#n._x" + strings.Repeat("b", 28) + "#}}", "{{#conversation.topic#}}", "{{#env.API_KEY#}}"} {
		if !HasReferences(s) {
			t.Errorf("%q not parsed as a reference", s)
		}
	}
}

func TestSelectorsDistinctInOrder(t *testing.T) {
	t.Parallel()
	got := Selectors("{{#b.x#}} {{#a.y#}} {{#b.x#}} {{#a.y.z#}}")
	want := [][]string{{"b", "x"}, {"a", "y"}, {"a", "y", "z"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Selectors = %v", got)
	}
	if Selectors("plain") != nil {
		t.Error("selectors in plain text")
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	pool := value.ObjectOf(
		"sys", value.ObjectOf("query", "what?", "files", []any{}),
		"llm", value.ObjectOf("text", "answer", "structured_output", value.ObjectOf("name", "Ann", "age", int64(3))),
		"code", value.ObjectOf("list", []any{value.ObjectOf("a", 1.0)}, "none", nil),
	)
	lookup := func(sel []string) (any, bool) { return value.Path(pool, sel) }
	cases := map[string]string{
		"Q: {{#sys.query#}} A: {{#llm.text#}}":            "Q: what? A: answer",
		"{{#llm.structured_output#}}":                     `{"name": "Ann", "age": 3}`,
		"{{#llm.structured_output.age#}}":                 "3",
		"{{#code.list#}}|{{#code.none#}}|{{#sys.files#}}": "[{'a': 1.0}]||",
		"missing {{#nope.x#}} and {{#llm.nope#}}":         "missing nope.x and llm.nope",
		"{{#context#}} stays":                             "{{#context#}} stays",
		"no refs":                                         "no refs",
	}
	for in, want := range cases {
		if got := Render(in, lookup, value.Text); got != want {
			t.Errorf("Render(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Render("{{#llm.structured_output#}}", lookup, value.Markdown); got != "{\n  \"name\": \"Ann\",\n  \"age\": 3\n}" {
		t.Errorf("markdown render = %q", got)
	}
}
