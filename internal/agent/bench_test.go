package agent

import (
	"testing"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// BenchmarkAgentTurn measures a whole agent turn through the run engine on SQLite, with the
// OpenAI client and the fake upstream in the same process: "answer" is one step (the model
// answers at once, as a Chatbot would), "tool" is two (a tool round, then the answer). The
// difference between them is the cost of one tool step.
func BenchmarkAgentTurn(b *testing.B) {
	for _, tc := range []struct {
		name    string
		replies []openaitest.Reply
	}{
		{"answer", []openaitest.Reply{{Chunks: []string{"a", " b", " c"}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 3}}}},
		{"tool", []openaitest.Reply{
			{ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"6*7"}`}}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 8}},
			{Chunks: []string{"a", " b", " c"}, Usage: &providers.Usage{PromptTokens: 30, CompletionTokens: 3}},
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			env := newEnv(b, storetest.Engine{Name: storetest.SQLite, DataDir: b.TempDir()}, mathsTool)
			b.ReportAllocs()
			const q = "bench turn"
			for b.Loop() {
				// A fresh script per turn (Reset also drops the recorded requests).
				env.upstream.Reset()
				env.upstream.OnEach(q, tc.replies...)
				rn, err := env.engine.Start(b.Context(), run.Request{App: env.app, User: "u1", Query: q,
					Inputs: map[string]any{"name": "Ada"}, Streaming: true})
				if err != nil {
					b.Fatal(err)
				}
				for ev := range rn.Events() {
					if ev.Kind == run.EventError {
						b.Fatal(ev.Err)
					}
				}
				<-rn.Done()
			}
		})
	}
}
