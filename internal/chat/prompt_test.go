package chat

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tokens"
)

func TestRender(t *testing.T) {
	in := map[string]any{"name": "Ada", "n": 2.5, "k": int64(3)}
	for tmpl, want := range map[string]string{
		"Hi {{name}}!":            "Hi Ada!",
		"{{n}} and {{k}}":         "2.5 and 3",
		"{{missing}} stays":       "{{missing}} stays",
		"{{ name }} is not a var": "{{ name }} is not a var",
		"":                        "",
	} {
		if got := render(tmpl, in); got != want {
			t.Errorf("render(%q) = %q, want %q", tmpl, got, want)
		}
	}
}

// TestHistoryTrimmedToContext: with a small context the oldest exchanges are dropped first and
// the prompt fits; with a large one everything is kept.
func TestHistoryTrimmedToContext(t *testing.T) {
	app := &apps.App{PrePrompt: "Be brief.", Model: apps.Model{Parameters: map[string]any{"max_tokens": 100}}}
	var history []store.Message
	for i := range 30 {
		history = append(history, store.Message{Query: strings.Repeat("question ", 20) + string(rune('A'+i)), Answer: strings.Repeat("answer ", 20)})
	}
	for _, tc := range []struct {
		ctx      int
		wantKeep int // exchanges kept; -1: fewer than all but some
	}{{100000, 30}, {1200, -1}, {150, 0}} {
		spec := models.ModelSpec{ContextSize: tc.ctx}
		msgs := buildPrompt(app, spec, nil, history, "now?")
		kept := (len(msgs) - 2) / 2
		if used := tokens.CountMessages(msgs); kept > 0 && used > tc.ctx-100 {
			t.Errorf("context %d: prompt takes %d tokens", tc.ctx, used)
		}
		switch {
		case tc.wantKeep >= 0 && kept != tc.wantKeep:
			t.Errorf("context %d: kept %d exchanges, want %d", tc.ctx, kept, tc.wantKeep)
		case tc.wantKeep < 0 && (kept == 0 || kept == 30):
			t.Errorf("context %d: kept %d exchanges, want some", tc.ctx, kept)
		}
		if msgs[0].Role != providers.RoleSystem || msgs[len(msgs)-1].Content != "now?" {
			t.Errorf("context %d: prompt ends %+v", tc.ctx, msgs[len(msgs)-1])
		}
		// The newest exchanges are the ones kept.
		if kept > 0 && !strings.HasSuffix(msgs[len(msgs)-3].Content, string(rune('A'+29))) {
			t.Errorf("context %d: newest exchange not kept: %q", tc.ctx, msgs[len(msgs)-3].Content)
		}
	}
}

func BenchmarkBuildPromptShort(b *testing.B) {
	app := &apps.App{PrePrompt: "You help {{name}}.", OpeningStatement: "Hi!"}
	spec := models.ModelSpec{ContextSize: 128000, MaxOutputTokens: 4096}
	history := []store.Message{{Query: "What is Go?", Answer: "A programming language."}}
	b.ReportAllocs()
	for b.Loop() {
		buildPrompt(app, spec, map[string]any{"name": "Ada"}, history, "And Rust?")
	}
}

// TestReplyBudgetImported: an imported app's max_tokens (a number as JSON gives it back from the
// store) sizes the history as an int would; without it, the model's output cap does.
func TestReplyBudgetImported(t *testing.T) {
	spec := models.ModelSpec{ContextSize: 16385, MaxOutputTokens: 4096}
	app := &apps.App{Model: apps.Model{Parameters: map[string]any{}}}
	for _, n := range []any{1000, int64(1000), float64(1000)} {
		app.Model.Parameters["max_tokens"] = n
		if got := ReplyBudget(app, spec); got != 1000 {
			t.Errorf("max_tokens %T: reply budget %d", n, got)
		}
	}
	delete(app.Model.Parameters, "max_tokens")
	if got := ReplyBudget(app, spec); got != 4096 {
		t.Errorf("without max_tokens: reply budget %d", got)
	}
}
