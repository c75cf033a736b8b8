package chat

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

func sys(s string) providers.Message {
	return providers.Message{Role: providers.RoleSystem, Content: s}
}
func user(s string) providers.Message { return providers.Message{Role: providers.RoleUser, Content: s} }
func asst(s string) providers.Message {
	return providers.Message{Role: providers.RoleAssistant, Content: s}
}

// lines shows a prompt as "role: text" lines, for comparisons with readable failures.
func lines(ms []providers.Message) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Text())
	}
	return b.String()
}

func samePrompt(t *testing.T, what string, got, want []providers.Message) {
	t.Helper()
	if lines(got) != lines(want) {
		t.Errorf("%s:\n got:\n%s\nwant:\n%s", what, lines(got), lines(want))
	}
}

func TestFill(t *testing.T) {
	values := map[string]string{"name": "Ada", "evil": "{{name}} and {{#context#}}", "#context#": "CTX"}
	for tmpl, want := range map[string]string{
		"Hi {{name}}!":                   "Hi Ada!",
		"{{missing}} and {{#query#}}":    "{missing} and {#query#}",
		"{{evil}}":                       "{name} and {#context#}",
		"<|im_start|>{{#context#}}<|x|>": "CTX",
		"{{ name }} is not a variable":   "{{ name }} is not a variable",
		"{{#histories#}}":                "{#histories#}",
		"":                               "",
	} {
		if got := fill(tmpl, values); got != want {
			t.Errorf("fill(%q) = %q, want %q", tmpl, got, want)
		}
	}
}

// difyPlaceholder is the expression of Dify's template parser, the oracle of the scanner.
var difyPlaceholder = regexp.MustCompile(`\{\{([a-zA-Z_][a-zA-Z0-9_]{0,29}|#histories#|#query#|#context#)\}\}`)

// TestPlaceholdersAsDify: the scanner finds the placeholders Dify's regular expression finds, on
// tricky templates and on random ones built from the characters that matter.
func TestPlaceholdersAsDify(t *testing.T) {
	long := strings.Repeat("a", 30)
	cases := []string{
		"{{{name}}}", "{{name}}}}", "{{{{x}}", "{{9x}}", "{{x9}}", "{{" + long + "}}", "{{" + long + "b}}", "{{ x }}",
		"{{#query#}}", "{{#query}}", "{{#other#}}", "{{#context#}}{{#histories#}}", "{{a}}{{b}}", "{{", "}}", "{{a}", "é{{é}}{{x}}",
		"{{#query#}", "{{_}}", "{{#}}",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"{", "}", "{{", "}}", "a", "9", "_", "#", "#query#", "#context", " ", "é"}
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		want := difyPlaceholder.ReplaceAllString(s, "<${1}>")
		if got := replacePlaceholders(s, func(key, _ string) string { return "<" + key + ">" }); got != want {
			t.Fatalf("%q: %q, want %q", s, got, want)
		}
	}
}

// advancedBot is a Chatbot with an advanced chat prompt of every shape Dify's allows: a system
// message with an input and the context, one that is empty without a context, a user and an
// assistant message (an example exchange), and a tool message, which Dify skips.
func advancedBot() *apps.App {
	return &apps.App{Mode: apps.ModeChat, PromptType: apps.PromptAdvanced, OpeningStatement: "Not part of an advanced prompt.",
		PrePrompt: "Not used either.",
		Model:     apps.Model{Provider: "openai", Name: "gpt-4o", Mode: "chat"},
		ChatPrompt: []apps.PromptMessage{
			{Role: "system", Text: "You help {{name}}. Known: {{#context#}}"},
			{Role: "system", Text: "{{#context#}}"},
			{Role: "user", Text: "Example question about {{#query#}}"},
			{Role: "assistant", Text: "Example answer."},
			{Role: "tool", Text: "skipped"},
		}}
}

// advancedWriter is an app whose model is a completion model, with Dify's usual completion
// prompt.
func advancedWriter(mode string) *apps.App {
	return &apps.App{Mode: mode, PromptType: apps.PromptAdvanced,
		Model: apps.Model{Provider: "openai", Name: "gpt-4o", Mode: "completion"},
		CompletionPrompt: &apps.CompletionPrompt{
			Text: "Context: {{#context#}}\nYou help {{name}}.\n<histories>\n{{#histories#}}\n</histories>\nHuman: {{#query#}}\nAssistant: ",
		}}
}

var bigModel = models.ModelSpec{Name: "gpt-4o", ContextSize: 100000, MaxOutputTokens: 512, Mode: "chat"}

// TestAdvancedChatModelChatbot: the prompt messages filled in (the context in place of
// {{#context#}}, {{#query#}} left as text as Dify leaves it in chat messages), then the history,
// then the query.
func TestAdvancedChatModelChatbot(t *testing.T) {
	in := map[string]any{"name": "Ada"}
	history := []store.Message{{Query: "First?", Answer: "One."}, {Query: "Second?", Answer: "Two."}}

	p, err := advancedChatbot(advancedBot(), bigModel, in, nil, true, "Why?")
	if err != nil {
		t.Fatal(err)
	}
	samePrompt(t, "new conversation, no context", p.messages(""), []providers.Message{
		sys("You help Ada. Known: "), user("Example question about {#query#}"), asst("Example answer."), user("Why?")})
	samePrompt(t, "new conversation, a context", p.messages("chunk one\nchunk two"), []providers.Message{
		sys("You help Ada. Known: chunk one\nchunk two"), sys("chunk one\nchunk two"),
		user("Example question about {#query#}"), asst("Example answer."), user("Why?")})

	p, err = advancedChatbot(advancedBot(), bigModel, in, history, false, "Why?")
	if err != nil {
		t.Fatal(err)
	}
	samePrompt(t, "continued", p.messages("CTX"), []providers.Message{
		sys("You help Ada. Known: CTX"), sys("CTX"), user("Example question about {#query#}"), asst("Example answer."),
		user("First?"), asst("One."), user("Second?"), asst("Two."), user("Why?")})
}

// TestAdvancedHistoryTrimmed: the history beside an advanced prompt follows the simple prompt's
// rules: the newest exchanges that fit.
func TestAdvancedHistoryTrimmed(t *testing.T) {
	var history []store.Message
	for i := range 30 {
		history = append(history, store.Message{Query: strings.Repeat("question ", 20) + string(rune('A'+i)), Answer: strings.Repeat("answer ", 20)})
	}
	spec := models.ModelSpec{Name: "gpt-4o", ContextSize: 1200, MaxOutputTokens: 100}
	app := advancedBot()
	p, err := advancedChatbot(app, spec, nil, history, false, "now?")
	if err != nil {
		t.Fatal(err)
	}
	msgs := p.messages("")
	kept := (len(msgs) - 4) / 2 // three prompt messages and the query
	if kept == 0 || kept == 30 || !strings.HasSuffix(msgs[len(msgs)-3].Content, string(rune('A'+29))) {
		t.Fatalf("kept %d exchanges:\n%s", kept, lines(msgs))
	}
	if msgs[len(msgs)-1].Content != "now?" || msgs[0].Content != "You help {name}. Known: " {
		t.Fatalf("prompt:\n%s", lines(msgs))
	}

	w := advancedWriter(apps.ModeChat)
	w.CompletionPrompt.UserPrefix, w.CompletionPrompt.AssistantPrefix = "Q", "A"
	p, err = advancedChatbot(w, spec, nil, history, false, "now?")
	if err != nil {
		t.Fatal(err)
	}
	text := p.messages("")[0].Content
	turns := strings.Count(text, "\nQ: question")
	if turns == 0 || turns == 30 || !strings.Contains(text, "question "+string(rune('A'+29))+"\nA: answer") {
		t.Fatalf("%d turns kept:\n%s", turns, text)
	}
}

// TestAdvancedCompletionModelChatbot: one user message, the completion prompt filled in with the
// context, the query and the history as text with the turn prefixes (Human and Assistant by
// default). A conversation's first message has no memory in Dify, so {{#histories#}} stays as
// text.
func TestAdvancedCompletionModelChatbot(t *testing.T) {
	in := map[string]any{"name": "Ada"}
	p, err := advancedChatbot(advancedWriter(apps.ModeChat), bigModel, in, nil, true, "Why?")
	if err != nil {
		t.Fatal(err)
	}
	samePrompt(t, "new conversation", p.messages("CTX"), []providers.Message{
		user("Context: CTX\nYou help Ada.\n<histories>\n{#histories#}\n</histories>\nHuman: Why?\nAssistant: ")})

	history := []store.Message{{Query: "First?", Answer: "One."}, {Query: "Unanswered", Answer: ""}, {Query: "Second {{name}}?", Answer: "Two."}}
	p, err = advancedChatbot(advancedWriter(apps.ModeChat), bigModel, in, history, false, "Why?")
	if err != nil {
		t.Fatal(err)
	}
	samePrompt(t, "continued", p.messages(""), []providers.Message{
		user("Context: \nYou help Ada.\n<histories>\nHuman: First?\nAssistant: One.\nHuman: Unanswered\nHuman: Second {name}?\nAssistant: Two.\n</histories>\nHuman: Why?\nAssistant: ")})

	w := advancedWriter(apps.ModeChat)
	w.CompletionPrompt.UserPrefix, w.CompletionPrompt.AssistantPrefix = "User", "Bot"
	p, err = advancedChatbot(w, bigModel, in, history[:1], false, "Why?")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.messages("")[0].Content; !strings.Contains(got, "<histories>\nUser: First?\nBot: One.\n</histories>") {
		t.Errorf("custom prefixes: %q", got)
	}
}

// TestAdvancedCompletionApp: a Completion has no conversation; with a chat model the query,
// when there is one, follows the prompt messages; with a completion model an absent query
// leaves {{#query#}} as text, as Dify does.
func TestAdvancedCompletionApp(t *testing.T) {
	in := map[string]any{"name": "Ada"}
	chatApp := advancedBot()
	chatApp.Mode = apps.ModeCompletion
	for _, tc := range []struct {
		name  string
		app   *apps.App
		query string
		want  []providers.Message
	}{
		{"chat model, no query", chatApp, "", []providers.Message{sys("You help Ada. Known: K"), sys("K"),
			user("Example question about {#query#}"), asst("Example answer.")}},
		{"chat model, a query", chatApp, "Go", []providers.Message{sys("You help Ada. Known: K"), sys("K"),
			user("Example question about {#query#}"), asst("Example answer."), user("Go")}},
		{"completion model, no query", advancedWriter(apps.ModeCompletion), "", []providers.Message{
			user("Context: K\nYou help Ada.\n<histories>\n{#histories#}\n</histories>\nHuman: {#query#}\nAssistant: ")}},
		{"completion model, a query", advancedWriter(apps.ModeCompletion), "Go", []providers.Message{
			user("Context: K\nYou help Ada.\n<histories>\n{#histories#}\n</histories>\nHuman: Go\nAssistant: ")}},
	} {
		p, err := advancedCompletion(tc.app, bigModel, in, tc.query)
		if err != nil {
			t.Fatal(err)
		}
		samePrompt(t, tc.name, p.messages("K"), tc.want)
	}
}

// TestAdvancedModelMode: the app's model mode picks the template; without one in the app, the
// configured model's; a template missing for that mode is an error, not a silent other prompt.
func TestAdvancedModelMode(t *testing.T) {
	both := advancedBot()
	both.CompletionPrompt = advancedWriter(apps.ModeChat).CompletionPrompt
	both.Model.Mode = ""
	completionSpec := bigModel
	completionSpec.Mode = "completion"
	p, err := advancedChatbot(both, completionSpec, nil, nil, true, "Q")
	if err != nil || len(p.messages("")) != 1 || !strings.HasPrefix(p.messages("")[0].Content, "Context: ") {
		t.Fatalf("configured completion model: %v %+v", err, p)
	}
	p, err = advancedChatbot(both, bigModel, nil, nil, true, "Q")
	if err != nil || len(p.messages("")) != 4 {
		t.Fatalf("configured chat model: %v %+v", err, p)
	}

	noChat := advancedWriter(apps.ModeChat)
	noChat.Model.Mode = "chat"
	if _, err := advancedChatbot(noChat, bigModel, nil, nil, true, "Q"); !errors.Is(err, ErrNoPrompt) {
		t.Errorf("chat model without chat prompt: %v", err)
	}
	noText := advancedBot()
	noText.Model.Mode = "completion"
	if _, err := advancedCompletion(noText, bigModel, nil, "Q"); !errors.Is(err, ErrNoPrompt) {
		t.Errorf("completion model without completion prompt: %v", err)
	}
}

// chunkKnowledge answers every retrieval with two chunks.
type chunkKnowledge struct {
	mu      sync.Mutex
	queries []string
}

func (k *chunkKnowledge) RetrieveForChat(_ context.Context, _ []string, query string) (knowledge.ChatContext, error) {
	k.mu.Lock()
	k.queries = append(k.queries, query)
	k.mu.Unlock()
	rs := []store.RetrieverResource{
		{Position: 1, DatasetID: store.NewID(), DatasetName: "notes", DocumentID: store.NewID(), DocumentName: "a.txt",
			SegmentID: store.NewID(), Content: "Tides follow the moon.", Score: 0.9},
		{Position: 2, DatasetID: store.NewID(), DatasetName: "notes", DocumentID: store.NewID(), DocumentName: "b.txt",
			SegmentID: store.NewID(), Content: "Waves are wind.", Score: 0.8},
	}
	text := rs[0].Content + "\n" + rs[1].Content
	return knowledge.ChatContext{Resources: rs, Text: text, Prompt: "<context>" + text + "</context>"}, nil
}

// TestAdvancedRuns runs imported-style apps through the engine against the fake upstream: what
// the model receives, and whether the answer cites its chunks (retriever_resource).
func TestAdvancedRuns(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		kb := &chunkKnowledge{}
		env := newEnv(t, e, func(o *envOptions) { o.chat.Knowledge = kb })
		ctx := context.Background()
		lastRequest := func() openaitest.Request {
			t.Helper()
			reqs := env.upstream.Requests()
			for i := len(reqs) - 1; i >= 0; i-- {
				if strings.HasSuffix(reqs[i].Path, "/chat/completions") && !strings.Contains(lines(reqs[i].Messages), "name conversations") {
					return reqs[i]
				}
			}
			t.Fatal("no chat request")
			return openaitest.Request{}
		}
		end := func(evs []run.Event) *run.End {
			t.Helper()
			last := evs[len(evs)-1]
			if last.Kind != run.EventMessageEnd {
				t.Fatalf("last event %+v", last)
			}
			return last.End
		}

		// A Chatbot with an advanced chat prompt and knowledge bases, citations off.
		bot := *env.app
		bot.PromptType, bot.ChatPrompt = apps.PromptAdvanced, advancedBot().ChatPrompt
		bot.KnowledgeBases = []string{"notes"}
		bot.Features.RetrieverResource.Enabled = false
		bot.Model.Parameters = map[string]any{"temperature": 0.3, "stop": []any{}, "max_tokens": float64(200)}
		r, err := env.engine.Start(ctx, run.Request{App: &bot, User: "u1", Query: "Why tides?", Inputs: map[string]any{"name": "Ada"}})
		if err != nil {
			t.Fatal(err)
		}
		evs := collect(t, r)
		if rs := end(evs).Resources; len(rs) != 0 {
			t.Fatalf("citations off, but the answer cites %+v", rs)
		}
		wait(t, r)
		req := lastRequest()
		samePrompt(t, "advanced chatbot", req.Messages, []providers.Message{
			sys("You help Ada. Known: Tides follow the moon.\nWaves are wind."), sys("Tides follow the moon.\nWaves are wind."),
			user("Example question about {#query#}"), asst("Example answer."), user("Why tides?")})
		if _, ok := req.Params["stop"]; ok || req.Params["max_tokens"] != float64(200) || req.Params["temperature"] != 0.3 {
			t.Errorf("parameters %v", req.Params)
		}
		if m := env.message(t, r, "u1"); len(m.Metadata) == 0 || strings.Contains(string(m.Metadata), "Tides follow") {
			t.Errorf("stored metadata %s", m.Metadata)
		}

		// The same app with citations on cites both chunks; the second message carries the
		// history.
		bot.Features.RetrieverResource.Enabled = true
		r2, err := env.engine.Start(ctx, run.Request{App: &bot, User: "u1", Query: "And waves?", ConversationID: r.ConversationID})
		if err != nil {
			t.Fatal(err)
		}
		if rs := end(collect(t, r2)).Resources; len(rs) != 2 || rs[0].Content != "Tides follow the moon." {
			t.Fatalf("citations on: %+v", rs)
		}
		wait(t, r2)
		if got := lastRequest().Messages; len(got) != 7 || got[4].Text() != "Why tides?" || got[6].Text() != "And waves?" {
			t.Fatalf("second message:\n%s", lines(got))
		}

		// A Completion app with a completion model: one user message; the dataset query
		// variable is the query.
		w := *env.writer
		w.PromptType = apps.PromptAdvanced
		w.Model.Mode = "completion"
		w.CompletionPrompt = &apps.CompletionPrompt{Text: "{{#context#}}\nWrite about {{topic}} for {{reader}}: {{#query#}}"}
		w.Features.RetrieverResource.Enabled = true
		r3, err := env.engine.Start(ctx, run.Request{App: &w, User: "u1", Query: "ignored", Inputs: map[string]any{"topic": "tides", "reader": "kids"}})
		if err != nil {
			t.Fatal(err)
		}
		if rs := end(collect(t, r3)).Resources; len(rs) != 2 {
			t.Fatalf("completion citations: %+v", rs)
		}
		wait(t, r3)
		samePrompt(t, "advanced completion", lastRequest().Messages, []providers.Message{
			user("Tides follow the moon.\nWaves are wind.\nWrite about tides for kids: tides")})
		if q := kb.queries[len(kb.queries)-1]; q != "tides" {
			t.Errorf("searched with %q", q)
		}
	})
}

func BenchmarkAdvancedChatbot(b *testing.B) {
	app := advancedBot()
	spec := models.ModelSpec{ContextSize: 128000, MaxOutputTokens: 4096}
	history := []store.Message{{Query: "What is Go?", Answer: "A programming language."}}
	in := map[string]any{"name": "Ada"}
	b.ReportAllocs()
	for b.Loop() {
		p, _ := advancedChatbot(app, spec, in, history, false, "And Rust?")
		p.messages("Go was designed at Google.")
	}
}
