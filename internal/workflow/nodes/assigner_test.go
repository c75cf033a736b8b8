package nodes

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// TestAssignerOperations applies each operation of the variable assigner, versions 1 and 2, to a
// conversation variable and reads the result back from the pool.
func TestAssignerOperations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		data    map[string]any
		initial any
		want    string
		fails   bool
	}{
		{"v1 over-write", v1("over-write"), "old", `"new"`, false},
		{"v1 append", v1("append"), []any{"a"}, `["a","new"]`, false},
		{"v1 clear string", v1("clear"), "old", `""`, false},
		{"v2 clear array", v2("clear", "constant", nil), []any{"a"}, `[]`, false},
		{"v2 clear object", v2("clear", "constant", nil), value.ObjectOf("k", "v"), `{}`, false},
		{"v2 set", v2("set", "constant", "x"), "old", `"x"`, false},
		{"v2 extend", v2("extend", "constant", []any{"b", "c"}), []any{"a"}, `["a","b","c"]`, false},
		{"v2 +=", v2("+=", "constant", 2), int64(3), `5`, false},
		{"v2 -= float", v2("-=", "constant", 0.5), int64(3), `2.5`, false},
		{"v2 *=", v2("*=", "constant", 3), int64(3), `9`, false},
		{"v2 /=", v2("/=", "constant", 2), int64(3), `1.5`, false},
		{"v2 /= 0", v2("/=", "constant", 0), int64(3), ``, true},
		{"v2 += on text", v2("+=", "constant", 1), "x", ``, true},
		{"v2 remove-first", v2("remove-first", "constant", nil), []any{"a", "b"}, `["b"]`, false},
		{"v2 remove-last", v2("remove-last", "constant", nil), []any{"a", "b"}, `["a"]`, false},
		{"v2 from a variable", v2("over-write", "variable", []any{"sys", "query"}), "old", `"new"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newAssigner(&workflow.Node{ID: "a", Type: "assigner", Data: tc.data})
			if err != nil {
				t.Fatal(err)
			}
			pool := workflow.NewPool()
			pool.Set(workflow.ScopeSys, workflow.SysQuery, "new")
			pool.Set(workflow.ScopeConversation, "v", tc.initial)
			_, err = r.Run(context.Background(), &workflow.Exec{Node: &workflow.Node{ID: "a"}, Pool: pool})
			if tc.fails != (err != nil) {
				t.Fatalf("error %v", err)
			}
			if tc.fails {
				return
			}
			got, _ := pool.Get([]string{workflow.ScopeConversation, "v"})
			raw, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if s := string(raw); s != tc.want {
				t.Fatalf("got %s, want %s", s, tc.want)
			}
		})
	}
	// Only conversation variables can be assigned.
	if _, err := newAssigner(&workflow.Node{Data: map[string]any{"assigned_variable_selector": []any{"llm", "text"}}}); err == nil {
		t.Fatal("a node output was accepted as a target")
	}
}

func v1(mode string) map[string]any {
	return map[string]any{"assigned_variable_selector": []any{"conversation", "v"}, "write_mode": mode,
		"input_variable_selector": []any{"sys", "query"}}
}

func v2(op, inputType string, v any) map[string]any {
	if n, ok := v.(int); ok {
		v = int64(n)
	}
	return map[string]any{"version": "2", "items": []any{map[string]any{"variable_selector": []any{"conversation", "v"},
		"input_type": inputType, "operation": op, "value": v}}}
}
