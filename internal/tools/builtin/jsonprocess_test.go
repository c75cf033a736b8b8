package builtin

import (
	"encoding/json"
	"strings"
	"testing"
)

func jsonArgs(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJSONParse(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	doc := `{"name":"Zoë","n":12345678901234567890,"i":3,"ok":true,"none":null,"items":[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]}]}`
	parse := func(filter string, extra ...any) string {
		m := map[string]any{"content": doc, "json_filter": filter}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return jsonArgs(t, m)
	}
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.name")), "Zoë")
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.i")), "3")
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.ok")), "True")
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.none")), "None")
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.items[*].id")), "[1, 2]")
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.items[0]")), `{"id": 1, "tags": ["a", "b"]}`)
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.items[?(@.id == 2)].tags")), `[]`)
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$.missing")), `[]`)
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$..tags[1]")), `b`)
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$[\"name\",\"i\"]", "ensure_ascii", true)), `["Zo\u00eb", 3]`)
	wantText(t, call(t, s, "json_process", "parse", nil, parse("$[\"name\",\"i\"]", "ensure_ascii", false)), `["Zoë", 3]`)
	// The app's configured filter (as Dify exports it, ensure_ascii as 1) and the model's content.
	wantText(t, call(t, s, "json_process", "parse", map[string]any{"json_filter": "$.i", "ensure_ascii": 1}, jsonArgs(t, map[string]any{"content": doc})), "3")

	for args, why := range map[string]string{
		jsonArgs(t, map[string]any{"content": `{"a":`, "json_filter": "$.a"}):                                           "not valid JSON",
		jsonArgs(t, map[string]any{"content": `{"a":1} {"b":2}`, "json_filter": "$.a"}):                                 "more than one value",
		jsonArgs(t, map[string]any{"content": `{"a":1}`, "json_filter": "$.[[["}):                                       "not a JSONPath",
		jsonArgs(t, map[string]any{"content": `{"a":1}`}):                                                               "json_filter is required",
		jsonArgs(t, map[string]any{"json_filter": "$.a"}):                                                               "content is required",
		jsonArgs(t, map[string]any{"content": strings.Repeat("[", 300) + strings.Repeat("]", 300), "json_filter": "$"}): "nested deeper",
		jsonArgs(t, map[string]any{"content": `"` + strings.Repeat("x", maxJSONBytes) + `"`, "json_filter": "$"}):       "larger than",
		jsonArgs(t, map[string]any{"content": `{}`, "json_filter": "$." + strings.Repeat("a", maxQueryLen)}):            "longer than",
	} {
		wantError(t, call(t, s, "json_process", "parse", nil, args), why)
	}
}

func TestJSONInsertReplaceDelete(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	doc := `{"a":{"b":[1,2]},"s":"hello world","t":"x"}`
	run := func(name string, m map[string]any) string {
		m["content"] = doc
		return jsonArgs(t, m)
	}
	wantText(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.a.b", "new_value": "3"})),
		`{"a": {"b": [1, 2, "3"]}, "s": "hello world", "t": "x"}`)
	wantText(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.a.b", "new_value": "3", "value_decode": true, "index": 0})),
		`{"a": {"b": [3, 1, 2]}, "s": "hello world", "t": "x"}`)
	wantText(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.a", "new_value": `{"c":null}`, "value_decode": true})),
		`{"a": {"b": [1, 2], "c": null}, "s": "hello world", "t": "x"}`)
	wantText(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.x.y", "new_value": "new", "create_path": true})),
		`{"a": {"b": [1, 2]}, "s": "hello world", "t": "x", "x": {"y": "new"}}`)
	wantError(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.x.y", "new_value": "new"})), "matches nothing")
	wantError(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.s", "new_value": "new"})), "neither an array nor an object")
	wantError(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.a", "new_value": "new"})), "only an object")
	wantError(t, call(t, s, "json_process", "insert", nil, run("insert", map[string]any{"query": "$.a.b", "new_value": "{", "value_decode": true})), "not valid JSON")

	wantText(t, call(t, s, "json_process", "replace", nil, run("replace", map[string]any{"query": "$.s", "replace_model": "pattern", "replace_pattern": "world", "replace_value": "there"})),
		`{"a": {"b": [1, 2]}, "s": "hello there", "t": "x"}`)
	wantText(t, call(t, s, "json_process", "replace", nil, run("replace", map[string]any{"query": "$.t", "replace_model": "key", "replace_value": "u"})),
		`{"a": {"b": [1, 2]}, "s": "hello world", "u": "x"}`)
	wantText(t, call(t, s, "json_process", "replace", nil, run("replace", map[string]any{"query": "$.a.b[*]", "replace_model": "value", "replace_value": "[0]", "value_decode": true})),
		`{"a": {"b": [[0], [0]]}, "s": "hello world", "t": "x"}`)
	wantError(t, call(t, s, "json_process", "replace", nil, run("replace", map[string]any{"query": "$.s", "replace_model": "regex", "replace_value": "x"})), "replace_model")

	wantText(t, call(t, s, "json_process", "delete", nil, run("delete", map[string]any{"query": "$.a.b[0]"})),
		`{"a": {"b": [2]}, "s": "hello world", "t": "x"}`)
	wantText(t, call(t, s, "json_process", "delete", nil, run("delete", map[string]any{"query": "$.s", "ensure_ascii": false})),
		`{"a": {"b": [1, 2]}, "t": "x"}`)
	wantError(t, call(t, s, "json_process", "delete", nil, run("delete", map[string]any{"query": "$"})), "whole document")
}
