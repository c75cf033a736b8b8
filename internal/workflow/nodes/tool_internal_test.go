package nodes

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolOutput: how a tool's answer splits into text and json by the tool's kind.
func TestToolOutput(t *testing.T) {
	for _, tc := range []struct{ kind, in, sent, text, json string }{
		{"api", `{"a":1}`, ``, `{"a":1}`, `[{"a":1}]`},
		{"api", `[{"a":1}]`, ``, `[{"a":1}]`, `[{"data":[]}]`},
		{"api", `plain`, ``, `plain`, `[{"data":[]}]`},
		{"mcp", `{"a":1}`, ``, ``, `[{"a":1}]`},
		{"mcp", `[{"a":1},{"b":2},3]`, ``, ``, `[{"a":1},{"b":2}]`},
		{"mcp", `found`, ``, `found`, `[{"data":[]}]`},
		{"builtin", `{"a":1}`, ``, `{"a":1}`, `[{"data":[]}]`},
		// A JSON object the tool sent besides its text (a plugin's JSON message).
		{"builtin", `3`, `{"page1":1}`, `3`, `[{"page1":1}]`},
		{"builtin", `3`, `[1]`, `3`, `[{"data":[]}]`},
	} {
		var sent json.RawMessage
		if tc.sent != "" {
			sent = json.RawMessage(tc.sent)
		}
		text, objs := toolOutput(tc.kind, tc.in, sent)
		b, _ := json.Marshal(objs)
		if text != tc.text || string(b) != tc.json {
			t.Errorf("%s %s: text %q json %s", tc.kind, tc.in, text, b)
		}
	}
}

// TestThinkSplitterChunking: however the answer is cut into chunks, the text and the reasoning
// are the same, and what was streamed is what was kept.
func TestThinkSplitterChunking(t *testing.T) {
	const answer = "<think>a <b> c</think>\n  x <thin y </think> z<think>more</think>!"
	for size := 1; size <= len(answer); size++ {
		var text, reasoning strings.Builder
		s := &thinkSplitter{onText: func(p string) { text.WriteString(p) }, onReasoning: func(p string) { reasoning.WriteString(p) }}
		for i := 0; i < len(answer); i += size {
			s.write(answer[i:min(i+size, len(answer))])
		}
		s.end()
		if text.String() != "x <thin y </think> z!" || reasoning.String() != "a <b> cmore" ||
			s.text.String() != text.String() || s.reasoning.String() != reasoning.String() {
			t.Fatalf("chunks of %d: text %q reasoning %q", size, text.String(), reasoning.String())
		}
	}
}
