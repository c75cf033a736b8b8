package jinja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/workflow/value"
)

func render(t *testing.T, tpl string, vars map[string]any) string {
	t.Helper()
	out, err := Render(context.Background(), tpl, vars, Limits{})
	if err != nil {
		t.Fatalf("Render(%q): %v", tpl, err)
	}
	return out
}

func TestDictOrderAndPrinting(t *testing.T) {
	t.Parallel()
	vars := map[string]any{
		"o": value.ObjectOf("z", int64(1), "a", "x", "m", value.ObjectOf("k", []any{"s", 1.5, true})),
		"q": value.ObjectOf("s", "it's", "n", nil, "nl", "a\nb"),
		"l": []any{"a", int64(2), 2.0, value.ObjectOf("q", "w"), nil, false},
	}
	cases := map[string]string{
		"{{ o }}": "{'z': 1, 'a': 'x', 'm': {'k': ['s', 1.5, True]}}",
		"{{ l }}": "['a', 2, 2.0, {'q': 'w'}, None, False]",
		"{{ q }}": `{'s': "it's", 'n': None, 'nl': 'a\nb'}`,
		"{% for k, v in q.items() %}{{ v }}|{% endfor %}":         "it's|None|a\nb|",
		"{{ q.n }}|{{ q.missing }}|{{ {'b': [1, none]} }}":        "None||{'b': [1, None]}",
		"{{ q['n'] }}|{{ q['missing'] }}|{{ l[4] }}|{{ l[9] }}":   "None||None|",
		"{% for k in o %}{{ k }},{% endfor %}":                    "z,a,m,",
		"{% for k, v in o.items() %}{{ k }}={{ v }};{% endfor %}": "z=1;a=x;m={'k': ['s', 1.5, True]};",
		"{{ o.keys() | list }}|{{ o.values() | list }}":           "['z', 'a', 'm']|[1, 'x', {'k': ['s', 1.5, True]}]",
		"{{ o.z }} {{ o['a'] }} {{ o.m.k[1] }} {{ o.get('z') }}":  "1 x 1.5 1",
		"{{ o | tojson }}": `{"a": "x", "m": {"k": ["s", 1.5, true]}, "z": 1}`,
		"{{ {'b': '<é>', 'a': \"it's\"} | tojson }}":                         `{"a": "it\u0027s", "b": "\u003c\u00e9\u003e"}`,
		"{{ l | length }} {{ o | length }} {{ 1.0 }} {{ 7 // 2 }}":           "6 3 1.0 3",
		"{{ 'hello'.replace('l', 'L') }} {{ 'a-b-c'.replace('-', '+', 1) }}": "heLLo a+b-c",
	}
	for tpl, want := range cases {
		if got := render(t, tpl, vars); got != want {
			t.Errorf("%s\n got %q\nwant %q", tpl, got, want)
		}
	}
}

// Templates taken from public Dify exports.
func TestPublicExportTemplates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tpl  string
		vars map[string]any
		want string
	}{
		{"{{ index + 1 }}/{{ depth }}回目の検索を実行しました。\n", map[string]any{"index": int64(0), "depth": int64(3)}, "1/3回目の検索を実行しました。"},
		{"{{ step_answer | join(\"\\n\")}}", map[string]any{"step_answer": []any{"one", "two"}}, "one\ntwo"},
		{"{% for item in my_list %}\n<docs>\n<doc id=\"{{ loop.index }}\">\n{{ item }}\n</doc>\n</docs>\n{% endfor %}",
			map[string]any{"my_list": []any{"A", "B"}},
			"\n<docs>\n<doc id=\"1\">\nA\n</doc>\n</docs>\n\n<docs>\n<doc id=\"2\">\nB\n</doc>\n</docs>\n"},
		{"{% if status == \"200\" %}\n## 下記のデータに追加しました\n{{ llm_output }}\n{% else %}\n## 下記のエラーが発生しました\n{{ message }}\n{% endif %}",
			map[string]any{"status": "200", "llm_output": "ok", "message": "bad"}, "\n## 下記のデータに追加しました\nok\n"},
		{"|URL|Summary|\n|---|---|\n{% for data in arg1 -%}\n|{{data.url}}|{{data.text}}|\n{% endfor -%}",
			map[string]any{"arg1": []any{value.ObjectOf("url", "u1", "text", "t1"), value.ObjectOf("url", "u2", "text", "t2")}},
			"|URL|Summary|\n|---|---|\n|u1|t1|\n|u2|t2|\n"},
		{"属于 {{ arg1 }} 的问题\n结果：\n{{ arg2[0].content }}\n", map[string]any{"arg1": "x", "arg2": []any{value.ObjectOf("content", "c")}}, "属于 x 的问题\n结果：\nc"},
		{"{{ translated_text | join(' ') }}", map[string]any{"translated_text": []any{"a", "b"}}, "a b"},
		{"{% for summary in summaries %}\n{{ summary.output }}\n{% endfor %}", map[string]any{"summaries": []any{value.ObjectOf("output", "s1")}}, "\ns1\n"},
	}
	for _, c := range cases {
		if got := render(t, c.tpl, c.vars); got != c.want {
			t.Errorf("%q\n got %q\nwant %q", c.tpl, got, c.want)
		}
	}
}

func TestFilesAreDicts(t *testing.T) {
	t.Parallel()
	f := &value.File{Type: "image", TransferMethod: "remote_url", RemoteURL: "https://e/x.png", Filename: "x.png", Size: 3}
	got := render(t, "{{ f.filename }} {{ f.type }} {{ f.url }} {{ fs | length }}", map[string]any{"f": f, "fs": []any{f, f}})
	if got != "x.png image https://e/x.png 2" {
		t.Errorf("got %q", got)
	}
}

func TestBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := Render(ctx, "{% for i in range(100) %}{{ 'x' * 100 }}{% endfor %}", nil, Limits{MaxOutput: 5000}); !errors.Is(err, ErrOutputTooLong) {
		t.Errorf("output cap: %v", err)
	}
	out, err := Render(ctx, "{% for i in range(50) %}{{ 'x' * 100 }}{% endfor %}", nil, Limits{MaxOutput: 5000})
	if err != nil || len(out) != 5000 {
		t.Errorf("exactly at the cap: %d %v", len(out), err)
	}
	if _, err := Render(ctx, "{% for i in range(100001) %}{% endfor %}", nil, Limits{}); !errors.Is(err, ErrRender) || !strings.Contains(err.Error(), "range too big") {
		t.Errorf("range cap: %v", err)
	}
	if got := render(t, "{{ range(2, 10, 3) | list }}{{ range(3, 0, -1) | list }}{{ range(0) | list }}", nil); got != "[2, 5, 8][3, 2, 1][]" {
		t.Errorf("range = %q", got)
	}
	// Ten billion empty iterations cannot finish; the deadline stops them.
	bomb := "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
	if _, err := Render(ctx, bomb, nil, Limits{Timeout: 50 * time.Millisecond}); !errors.Is(err, ErrTimeout) {
		t.Errorf("loop bomb: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Render(cancelled, "{% for i in range(3) %}{{ i }}{% endfor %}", nil, Limits{}); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("cancelled context: %v", err)
	}
	expired, cancel2 := context.WithDeadline(ctx, time.Unix(0, 0))
	defer cancel2()
	if _, err := Render(expired, "{{ 1 }}", nil, Limits{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller's deadline: %v", err)
	}
}

func TestNoTemplateLoadingAndErrors(t *testing.T) {
	t.Parallel()
	for _, tpl := range []string{`{% include "/etc/passwd" %}`, `{% import "x" as y %}`, `{% extends "/etc/hosts" %}`, `{% from "x" import y %}`, "{% for %}", "{{ x "} {
		if _, err := Render(context.Background(), tpl, nil, Limits{}); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err = %v, want ErrSyntax", tpl, err)
		}
		if err := Check(tpl); !errors.Is(err, ErrSyntax) {
			t.Errorf("Check(%q) = %v", tpl, err)
		}
	}
	if err := Check("{{ a }}{% for x in y %}{% endfor %}"); err != nil {
		t.Errorf("Check valid: %v", err)
	}
	// A template that makes the engine panic fails the render instead of the process.
	if _, err := Render(context.Background(), "{{ '%s-%d' % ('a', 3) }}", nil, Limits{}); err == nil {
		t.Error("expected an error")
	}
}

func TestNonePrintsAsPython(t *testing.T) {
	t.Parallel()
	vars := map[string]any{"x": nil, "s": "v", "l": []any{nil, "a"}}
	cases := map[string]string{
		"[{{ x }}]":                                       "[None]",
		"[{{ undefined_name }}]":                          "[]",
		"{% for e in l %}{{ e }},{% endfor %}":            "None,a,",
		"{% if x is none %}none{% endif %}{{ x or 'd' }}": "noned",
		"{{ s }}{% set y = none %}{{ y }}":                "vNone",
		"{% if true %}{{ x }}{% endif %}":                 "None",
	}
	for tpl, want := range cases {
		if got := render(t, tpl, vars); got != want {
			t.Errorf("%s = %q, want %q", tpl, got, want)
		}
	}
}

func TestOperatorsAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Arithmetic still works through the rewrite.
	cases := map[string]string{
		"{{ 1 + 2 }} {{ 1.5 + 1 }} {{ 'a' + 'b' }} {{ [1] + [2, 'x'] }} {{ 2 * 3 }} {{ 'ab' * 2 }} {{ 'x' * 0 }}|{{ 'x' * -1 }}|{{ 1 ~ 'a' }}": "3 2.5 ab [1, 2, 'x'] 6 abab ||1a",
		"{% for i in range(3) %}{{ i * 2 + 1 }}{% endfor %}":            "135",
		"{{ 2 * 'ab' }} {{ [1, 'x'] * 2 }} {{ 2 * [0] }} {{ [1] * 0 }}": "abab [1, 'x', 1, 'x'] [0, 0] []",
		"{{ (1 + 2) * 3 }} {% if 1 + 1 == 2 %}ok{% endif %}":            "9 ok",
	}
	for tpl, want := range cases {
		if got := render(t, tpl, nil); got != want {
			t.Errorf("%s = %q, want %q", tpl, got, want)
		}
	}
	bombs := []string{
		"{{ 'x' * 1000000000000 }}",
		"{{ [1] * 1000000000000 }}",
		"{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
		"{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
		"{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}",
	}
	for _, tpl := range bombs {
		if _, err := Render(ctx, tpl, nil, Limits{MaxOutput: 1000}); !errors.Is(err, ErrRender) || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%s: %v", tpl, err)
		}
	}
	// A single long loop is stopped between iterations, not only at its start.
	slow := "{% set ns = namespace(n=0) %}{% for i in range(100000) %}{% for j in range(100000) %}{% set ns.n = ns.n + 1 %}{% endfor %}{% endfor %}"
	if _, err := Render(ctx, slow, nil, Limits{Timeout: 50 * time.Millisecond}); !errors.Is(err, ErrTimeout) {
		t.Errorf("slow loop: %v", err)
	}
}

func TestWidthArgumentsAreBounded(t *testing.T) {
	t.Parallel()
	if got := render(t, "[{{ 'ab' | center(6) }}][{{ 'ab'.ljust(4) }}][{{ '7'.zfill(3) }}][{{ 'a\nb' | indent(2) }}]", nil); got != "[  ab  ][ab  ][007][a\n  b]" {
		t.Errorf("padding = %q", got)
	}
	for _, tpl := range []string{"{{ 'x' | center(10000000000) }}", "{{ 'x'.ljust(10000000000) }}", "{{ '7'.zfill(10000000000) }}", "{{ 'a\nb' | indent(10000000000) }}", "{{ 'a' | indent(width=10000000000) }}"} {
		if _, err := Render(context.Background(), tpl, nil, Limits{}); !errors.Is(err, ErrRender) || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%s: %v", tpl, err)
		}
	}
}

func TestDictAndListFilters(t *testing.T) {
	t.Parallel()
	vars := map[string]any{
		"o":  value.ObjectOf("z", int64(1), "a", "x", "B", int64(0)),
		"us": []any{value.ObjectOf("name", "Bo", "age", int64(30)), value.ObjectOf("name", "Al", "age", int64(20))},
	}
	cases := map[string]string{
		"{{ o.items() | list }}":                                 "[('z', 1), ('a', 'x'), ('B', 0)]",
		"{{ o | items | list }}":                                 "[('z', 1), ('a', 'x'), ('B', 0)]",
		"{{ o | dictsort }}":                                     "[('a', 'x'), ('B', 0), ('z', 1)]",
		"{{ o | dictsort(true) }}":                               "[('B', 0), ('a', 'x'), ('z', 1)]",
		"{{ o | dictsort(reverse=true) }}":                       "[('z', 1), ('B', 0), ('a', 'x')]",
		"{% for k, v in o | dictsort %}{{ k }}{% endfor %}":      "aBz",
		"{{ us | reverse | map(attribute='name') | join(',') }}": "Al,Bo",
		"{{ [1, 2] | reverse | list }} {{ 'abc' | reverse }}":    "[2, 1] cba",
		"{{ us | map(attribute='name') | join(', ') }}":          "Bo, Al",
		"{{ us | sort(attribute='age') | first }}":               "{'name': 'Al', 'age': 20}",
		"{{ us | sum(attribute='age') }}":                        "50",
		"{{ us | tojson }}":                                      `[{"age": 30, "name": "Bo"}, {"age": 20, "name": "Al"}]`,
	}
	for tpl, want := range cases {
		if got := render(t, tpl, vars); got != want {
			t.Errorf("%s\n got %q\nwant %q", tpl, got, want)
		}
	}
}

// TestRenderReusesParsedTemplates: a text is parsed once and its parsed template serves the
// renders after it, each with its own variables, macros, set values and guard: a render that
// ran out of time or hit the macro depth leaves nothing behind for the next, and renders of one
// text at once each get their own template.
func TestRenderReusesParsedTemplates(t *testing.T) {
	const tpl = `{% macro deep(n) %}{% if n > 0 %}{{ deep(n - 1) }}{% else %}{{ who }}{% endif %}{% endmacro %}` +
		`{% set greeting = "hi " ~ who %}{{ greeting }}:{{ deep(depth) }}`
	if got := render(t, tpl, map[string]any{"who": "ann", "depth": 3}); got != "hi ann:ann" {
		t.Fatalf("first render %q", got)
	}
	key := parseKey{text: tpl, maxOutput: Limits{}.withDefaults().MaxOutput, maxItems: DefaultMaxRange}
	if _, ok := parsed.m.Load(key); !ok {
		t.Fatal("the parsed template was not kept")
	}
	if got := render(t, tpl, map[string]any{"who": "bob", "depth": 1}); got != "hi bob:bob" {
		t.Fatalf("second render %q: the first one's values leaked", got)
	}
	// Too deep: the macro guard stops it; the next render starts from depth 0 again.
	if out, err := Render(context.Background(), tpl, map[string]any{"who": "x", "depth": maxMacroDepth + 5}, Limits{}); err == nil && !strings.Contains(out, "nested deeper") {
		t.Fatalf("a render past the macro depth gave %q", out)
	}
	if got := render(t, tpl, map[string]any{"who": "cy", "depth": maxMacroDepth - 10}); got != "hi cy:cy" {
		t.Fatalf("render after a too-deep one %q", got)
	}

	// A render that runs out of time does not stop the next one.
	const slow = `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}done {{ who }}`
	if _, err := Render(context.Background(), slow, map[string]any{"who": "a"}, Limits{Timeout: 20 * time.Millisecond}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("slow render: %v, want a timeout", err)
	}
	const quick = `{% for i in range(3) %}{{ i }}{% endfor %} {{ who }}`
	if got := render(t, quick, map[string]any{"who": "z"}); got != "012 z" {
		t.Fatalf("quick render %q", got)
	}
	if got := render(t, quick, map[string]any{"who": "y"}); got != "012 y" {
		t.Fatalf("quick render again %q", got)
	}

	// Renders of one text at once.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			who := fmt.Sprintf("u%d", i)
			out, err := Render(context.Background(), tpl, map[string]any{"who": who, "depth": i % 5}, Limits{})
			if err != nil || out != "hi "+who+":"+who {
				errs <- fmt.Errorf("render %d: %q, %v", i, out, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
