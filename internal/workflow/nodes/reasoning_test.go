package nodes_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/workflow"
)

// TestLLMReasoningSeparated: with reasoning_format separated, the model's <think> block (its
// tags split across chunks) streams as reasoning_chunk events ending with is_final, and is
// reasoning_content; the answer and text have the rest, a "<" that begins no tag included. By
// default (tagged) the block stays in the text.
func TestLLMReasoningSeparated(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	up.On("think first", openaitest.Reply{Chunks: []string{"<thi", "nk>I should", " greet.</th", "ink>\n\nHel", "lo <b", "> there <"}})
	for _, format := range []string{"separated", "tagged"} {
		g := parse(t, []any{
			nodeOf("start", "start", map[string]any{}),
			nodeOf("llm", "llm", map[string]any{"reasoning_format": format,
				"model":           map[string]any{"provider": "openai", "name": "gpt-4o-mini", "mode": "chat"},
				"prompt_template": []any{map[string]any{"role": "user", "text": "{{#sys.query#}}"}}}),
			nodeOf("a", "answer", map[string]any{"answer": "{{#llm.text#}}"}),
		}, []any{edgeOf("start", "source", "llm"), edgeOf("llm", "source", "a")})
		rep, s, pool := runGraph(t, d, g, "think first")
		if rep.Status != workflow.StatusSucceeded {
			t.Fatalf("%s: %+v", format, rep)
		}
		var reasoning strings.Builder
		var chunks, finals int
		for _, ev := range s.all {
			if ev.Kind != run.EventReasoningChunk {
				continue
			}
			b, _ := json.Marshal(ev.Data)
			var c struct {
				Reasoning string `json:"reasoning"`
				NodeID    string `json:"node_id"`
				IsFinal   bool   `json:"is_final"`
			}
			_ = json.Unmarshal(b, &c)
			if c.NodeID != "llm" || finals > 0 {
				t.Fatalf("%s: reasoning chunk %s after the final one", format, b)
			}
			if c.IsFinal {
				finals++
			}
			chunks++
			reasoning.WriteString(c.Reasoning)
		}
		text, _ := pool.Get([]string{"llm", "text"})
		rc, _ := pool.Get([]string{"llm", "reasoning_content"})
		switch format {
		case "separated":
			if s.answer() != "Hello <b> there <" || text != "Hello <b> there <" || rc != "I should greet." ||
				reasoning.String() != "I should greet." || finals != 1 || chunks < 3 {
				t.Fatalf("separated: answer %q text %q reasoning %q streamed %q (%d chunks, %d final)", s.answer(), text, rc, reasoning.String(), chunks, finals)
			}
		default:
			if s.answer() != "<think>I should greet.</think>\n\nHello <b> there <" || rc != "" || chunks != 0 {
				t.Fatalf("tagged: answer %q reasoning %q, %d chunks", s.answer(), rc, chunks)
			}
		}
	}
}

// TestLLMReasoningContent: reasoning a provider streams apart from the text (reasoning_content)
// is a <think> block at the start of the text by default, as Dify writes it, and with
// reasoning_format separated the reasoning_content output and reasoning_chunk events.
func TestLLMReasoningContent(t *testing.T) {
	t.Parallel()
	d, up := deps(t)
	up.On("reason apart", openaitest.Reply{Reasoning: []string{"Let me", " think."}, Chunks: []string{"Hi", "!"}})
	for format, want := range map[string]string{"separated": "Hi!", "tagged": "<think>\nLet me think.\n</think>Hi!"} {
		g := parse(t, []any{
			nodeOf("start", "start", map[string]any{}),
			nodeOf("llm", "llm", map[string]any{"reasoning_format": format,
				"model":           map[string]any{"provider": "openai", "name": "gpt-4o-mini", "mode": "chat"},
				"prompt_template": []any{map[string]any{"role": "user", "text": "{{#sys.query#}}"}}}),
			nodeOf("a", "answer", map[string]any{"answer": "{{#llm.text#}}"}),
		}, []any{edgeOf("start", "source", "llm"), edgeOf("llm", "source", "a")})
		rep, s, pool := runGraph(t, d, g, "reason apart")
		rc, _ := pool.Get([]string{"llm", "reasoning_content"})
		chunks := 0
		for _, ev := range s.all {
			if ev.Kind == run.EventReasoningChunk {
				chunks++
			}
		}
		wantRC, wantChunks := "Let me think.", 3
		if format == "tagged" {
			wantRC, wantChunks = "", 0
		}
		if rep.Status != workflow.StatusSucceeded || s.answer() != want || rc != wantRC || chunks < wantChunks || (wantChunks == 0 && chunks != 0) {
			t.Fatalf("%s: %+v answer %q reasoning %q, %d chunks", format, rep, s.answer(), rc, chunks)
		}
	}
}
