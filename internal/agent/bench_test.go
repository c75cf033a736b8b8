package agent

import (
	"testing"

	"github.com/parleyhq/parley/internal/parleytest"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// turnCases are the agent turns the benchmark measures and the budgets pin: "answer" is one
// step (the model answers at once, as a Chatbot would), "tool" is two (a tool round, then the
// answer). The difference between them is the cost of one tool step.
var turnCases = []struct {
	name    string
	replies []openaitest.Reply
	budget  parleytest.Budget
}{
	// Measured on 2026-11-28 (SQLite; the fake upstream's allocations included), the same in
	// every run: answer 720 allocations and 9 statements; tool 1,389 and 12 (a tool step: 3
	// statements, its step stored as it starts, once the model called the tool and once the
	// tool answered). The allocation budgets leave about 10%; the statements are exact.
	{"answer", []openaitest.Reply{{Chunks: []string{"a", " b", " c"}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 3}}},
		parleytest.Budget{Allocs: 775, Statements: 8}},
	{"tool", []openaitest.Reply{
		{ToolCalls: []providers.ToolCall{{Name: "eval_expression", Arguments: `{"expression":"6*7"}`}}, Usage: &providers.Usage{PromptTokens: 20, CompletionTokens: 8}},
		{Chunks: []string{"a", " b", " c"}, Usage: &providers.Usage{PromptTokens: 30, CompletionTokens: 3}},
	}, parleytest.Budget{Allocs: 1515, Statements: 11}},
}

// turn runs one agent turn through the run engine, the upstream scripted with replies, and
// waits for it to be stored.
func (e *env) turn(tb testing.TB, replies []openaitest.Reply) {
	const q = "bench turn"
	// A fresh script per turn (Reset also drops the recorded requests).
	e.upstream.Reset()
	e.upstream.OnEach(q, replies...)
	rn, err := e.engine.Start(tb.Context(), run.Request{App: e.app, User: "u1", Query: q,
		Inputs: map[string]any{"name": "Ada"}, Streaming: true})
	if err != nil {
		tb.Fatal(err)
	}
	for ev := range rn.Events() {
		if ev.Kind == run.EventError {
			tb.Fatal(ev.Err)
		}
	}
	<-rn.Done()
}

// BenchmarkAgentTurn measures a whole agent turn through the run engine on SQLite, with the
// OpenAI client and the fake upstream in the same process.
func BenchmarkAgentTurn(b *testing.B) {
	for _, tc := range turnCases {
		b.Run(tc.name, func(b *testing.B) {
			env := newEnv(b, storetest.Engine{Name: storetest.SQLite, DataDir: b.TempDir()}, mathsTool)
			b.ReportAllocs()
			for b.Loop() {
				env.turn(b, tc.replies)
			}
		})
	}
}

// TestAgentTurnBudgets pins what an agent turn costs in allocations and SQL statements
// (parleytest.CheckBudget), a tool step included: a change that adds work to the agent's path
// fails here.
func TestAgentTurnBudgets(t *testing.T) {
	for _, tc := range turnCases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, storetest.Engine{Name: storetest.SQLite, DataDir: t.TempDir()}, mathsTool)
			parleytest.CheckBudget(t, tc.budget, 20, env.store.Statements, func() { env.turn(t, tc.replies) })
		})
	}
}
