package template

import (
	"testing"

	"github.com/parleyhq/parley/internal/workflow/value"
)

func BenchmarkRender(b *testing.B) {
	pool := value.ObjectOf("sys", value.ObjectOf("query", "what is the weather"), "llm", value.ObjectOf("text", "It is sunny.", "structured_output", value.ObjectOf("a", int64(1), "b", []any{"x", "y"})))
	lookup := func(sel []string) (any, bool) { return value.Path(pool, sel) }
	text := "Question: {{#sys.query#}}\nAnswer: {{#llm.text#}}\nData: {{#llm.structured_output#}}\n"
	b.ReportAllocs()
	for b.Loop() {
		Render(text, lookup, value.Text)
	}
}
