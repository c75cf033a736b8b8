package nodes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/sandbox"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// codeGraph is start → code → answer, the answer showing the code's outputs.
func codeGraph(code map[string]any, answer string) []any {
	return []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("code", "code", code),
		nodeOf("a", "answer", map[string]any{"answer": answer}),
	}
}

var codeEdges = []any{edgeOf("start", "source", "code"), edgeOf("code", "source", "a")}

// TestCodeNodePython: Python code in the sandbox receives the pool's values (an object in its
// order, a file as Dify's file dict, a number) and its outputs reach the pool with their types:
// an integer stays an integer, an object keeps the order the code built it in.
func TestCodeNodePython(t *testing.T) {
	t.Parallel()
	d := nodes.Deps{Code: codeSandbox(t)}
	pool := workflow.NewPool()
	pool.Set("src", "obj", value.ObjectOf("zeta", int64(1), "alpha", "two"))
	pool.Set("src", "n", int64(41))
	pool.Set("src", "doc", &value.File{Type: "document", TransferMethod: value.TransferRemoteURL, RemoteURL: "https://example.com/a.pdf", Filename: "a.pdf", Extension: ".pdf"})
	code := map[string]any{
		"code_language": "python3",
		"variables": []any{
			map[string]any{"variable": "obj", "value_selector": []any{"src", "obj"}},
			map[string]any{"variable": "n", "value_selector": []any{"src", "n"}},
			map[string]any{"variable": "doc", "value_selector": []any{"src", "doc"}},
		},
		"code": `import json
def main(obj: dict, n: int, doc: dict) -> dict:
    return {"keys": ",".join(obj.keys()), "next": n + 1, "meta": {"z": doc["filename"], "a": doc["transfer_method"]}}
`,
		"outputs": map[string]any{
			"keys": map[string]any{"type": "string", "children": nil},
			"next": map[string]any{"type": "number", "children": nil},
			"meta": map[string]any{"type": "object", "children": nil},
		},
	}
	rep, ev := execute(t, d, nil, pool, codeGraph(code, "{{#code.keys#}} {{#code.next#}}"), codeEdges)
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("%+v", rep)
	}
	if got := ev.answer.String(); got != "zeta,alpha 42" {
		t.Fatalf("answer %q", got)
	}
	if n, _ := pool.Get([]string{"code", "next"}); n != int64(42) {
		t.Fatalf("next %#v", n)
	}
	if js := ev.finished["code"]["_json"].(string); !strings.Contains(js, `"meta":{"z":"a.pdf","a":"remote_url"}`) {
		t.Fatalf("node_finished %s", js)
	}
}

// TestCodeNodeJavaScript: JavaScript runs on goja in the sandbox's worker, main(inputs).
func TestCodeNodeJavaScript(t *testing.T) {
	t.Parallel()
	d := nodes.Deps{Code: codeSandbox(t)}
	pool := workflow.NewPool()
	pool.Set("src", "items", []any{"a", "b", "c"})
	code := map[string]any{
		"code_language": "javascript",
		"variables":     []any{map[string]any{"variable": "items", "value_selector": []any{"src", "items"}}},
		"code":          "function main({items}) { return {joined: items.map(s => s.toUpperCase()).join('-'), count: items.length} }",
		"outputs": map[string]any{
			"joined": map[string]any{"type": "string"}, "count": map[string]any{"type": "number"},
		},
	}
	rep, ev := execute(t, d, nil, pool, codeGraph(code, "{{#code.joined#}}/{{#code.count#}}"), codeEdges)
	if rep.Status != workflow.StatusSucceeded || ev.answer.String() != "A-B-C/3" {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
}

// TestCodeNodeFailsWithDefaultValue: code that raises fails the node with the sandbox's Dify
// error type; with the default-value strategy the run goes on with the defaults and ends
// partial-succeeded. Without a strategy the same code fails the run.
func TestCodeNodeFailsWithDefaultValue(t *testing.T) {
	t.Parallel()
	d := nodes.Deps{Code: codeSandbox(t)}
	code := func(strategy bool) map[string]any {
		m := map[string]any{
			"code_language": "python3",
			"code":          "def main() -> dict:\n    raise ValueError('no luck')\n",
			"outputs":       map[string]any{"result": map[string]any{"type": "string"}},
		}
		if strategy {
			m["error_strategy"] = "default-value"
			m["default_value"] = []any{map[string]any{"key": "result", "type": "string", "value": "fallback"}}
		}
		return m
	}
	rep, ev := execute(t, d, nil, nil, codeGraph(code(true), "{{#code.result#}} ({{#code.error_type#}})"), codeEdges)
	if rep.Status != workflow.StatusPartialSucceeded || ev.answer.String() != "fallback (CodeExecutionError)" {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
	fin := ev.finished["code"]
	if fin["status"] != workflow.NodeException || !strings.Contains(fin["error"].(string), "ValueError: no luck") {
		t.Fatalf("node_finished %v", fin)
	}
	rep, _ = execute(t, d, nil, nil, codeGraph(code(false), "x"), codeEdges)
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "no luck") {
		t.Fatalf("%+v", rep)
	}
}

// TestCodeNodeOutputChecks: outputs that break the declaration fail with Dify's message and type.
func TestCodeNodeOutputChecks(t *testing.T) {
	t.Parallel()
	d := nodes.Deps{Code: codeSandbox(t)}
	code := map[string]any{
		"code_language": "python3", "code": "def main():\n    return {'n': 'not a number'}\n",
		"outputs":        map[string]any{"n": map[string]any{"type": "number"}},
		"error_strategy": "fail-branch",
	}
	ns := []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("code", "code", code),
		nodeOf("ok", "answer", map[string]any{"answer": "ok"}),
		nodeOf("bad", "answer", map[string]any{"answer": "{{#code.error_type#}}: {{#code.error_message#}}"}),
	}
	rep, ev := execute(t, d, nil, nil, ns, []any{edgeOf("start", "source", "code"), edgeOf("code", "source", "ok"), edgeOf("code", "fail-branch", "bad")})
	if rep.Status != workflow.StatusPartialSucceeded || !strings.HasPrefix(ev.answer.String(), "OutputValidationError: Output n is not a number, got <class 'str'> instead.") {
		t.Fatalf("%+v answer %q", rep, ev.answer.String())
	}
}

// TestCodeNodeNetworkOff: a node whose code calls out while the network is off (the default;
// Dify's sandbox reaches the network) fails as CodeExecutionError with a message that says the
// network is off and names the setting, followed by the code's own error; its error strategy
// sees that message.
func TestCodeNodeNetworkOff(t *testing.T) {
	t.Parallel()
	d := nodes.Deps{Code: codeSandbox(t)}
	code := map[string]any{
		"code_language": "python3",
		"code": `import urllib.request
def main() -> dict:
    return {"body": urllib.request.urlopen("http://api.example.com/v1", timeout=5).read().decode()}
`,
		"outputs":        map[string]any{"body": map[string]any{"type": "string"}},
		"error_strategy": "fail-branch",
	}
	ns := []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("code", "code", code),
		nodeOf("ok", "answer", map[string]any{"answer": "ok"}),
		nodeOf("bad", "answer", map[string]any{"answer": "{{#code.error_type#}}: {{#code.error_message#}}"}),
	}
	rep, ev := execute(t, d, nil, nil, ns, []any{edgeOf("start", "source", "code"), edgeOf("code", "source", "ok"), edgeOf("code", "fail-branch", "bad")})
	got := ev.answer.String()
	if rep.Status != workflow.StatusPartialSucceeded ||
		!strings.HasPrefix(got, "CodeExecutionError: The code failed on a network call, and the network is off for code nodes") ||
		!strings.Contains(got, "PARLEY_CODE_NETWORK=true") || !strings.Contains(got, "urllib.error.URLError") {
		t.Fatalf("%+v answer %q", rep, got)
	}
}

// TestCodeNodeWithoutSandbox: a server whose machine lacks the sandbox runs other nodes; a code
// node fails with the reason, naming what to install.
func TestCodeNodeWithoutSandbox(t *testing.T) {
	t.Parallel()
	missing := nodes.Deps{Code: func(ctx context.Context) (*sandbox.Runner, sandbox.Limits, error) {
		_, err := sandbox.New(ctx, sandbox.Options{Bubblewrap: "/nonexistent/bwrap"})
		return nil, sandbox.Limits{}, err
	}}
	code := map[string]any{"code_language": "python3", "code": "def main():\n    return {}\n", "outputs": map[string]any{}}
	rep, _ := execute(t, missing, nil, nil, codeGraph(code, "x"), codeEdges)
	if rep.Status != workflow.StatusFailed || !strings.Contains(rep.Err.Error(), "bubblewrap") || !strings.Contains(rep.Err.Error(), "Debian package bubblewrap") {
		t.Fatalf("%+v", rep)
	}
	rep, ev := execute(t, missing, nil, nil, []any{nodeOf("start", "start", map[string]any{}), nodeOf("a", "answer", map[string]any{"answer": "still here"})},
		[]any{edgeOf("start", "source", "a")})
	if rep.Status != workflow.StatusSucceeded || ev.answer.String() != "still here" {
		t.Fatalf("%+v", rep)
	}
}
