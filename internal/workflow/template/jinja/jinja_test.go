package jinja

import (
	"context"
	"errors"
	"strings"
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
		"l": []any{"a", int64(2), 2.0, value.ObjectOf("q", "w"), nil, false},
	}
	cases := map[string]string{
		"{{ o }}":                              "{'z': 1, 'a': 'x', 'm': {'k': ['s', 1.5, True]}}",
		"{{ l }}":                              "['a', 2, 2.0, {'q': 'w'}, None, False]",
		"{% for k in o %}{{ k }},{% endfor %}": "z,a,m,",
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
	if _, err := Render(cancelled, "{% for i in range(3) %}{{ i }}{% endfor %}", nil, Limits{}); !errors.Is(err, ErrTimeout) {
		t.Errorf("cancelled context: %v", err)
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
