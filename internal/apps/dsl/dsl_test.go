package dsl

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/tools/builtin"

	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/workflow/nodes"
)

var update = flag.Bool("update", false, "rewrite the golden exports")

// testEnv is a server with two providers, as a config file would declare them, and two knowledge
// bases: one that exists, one the config file declares.
func testEnv() Env {
	return Env{
		Providers: []config.Provider{
			{Name: "openai", Type: config.ProviderTypeOpenAICompatible, Models: []config.Model{
				{Name: "gpt-4o-mini", Type: config.ModelTypeLLM, Mode: config.ModelModeChat, Enabled: true},
				{Name: "gpt-3.5-turbo", Type: config.ModelTypeLLM, Enabled: false},
			}},
			{Name: "local", Type: config.ProviderTypeOpenAICompatible, Models: []config.Model{
				{Name: "llama3", Type: config.ModelTypeLLM, Mode: config.ModelModeCompletion, Enabled: true},
				{Name: "bge-reranker", Type: config.ModelTypeRerank, Enabled: true},
			}},
		},
		KnowledgeBases: []KnowledgeBase{{ID: "kb-1111", Name: "handbook"}, {Name: "faq"}},
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// roundTrip exports the app, imports the export and exports again, and fails unless both
// exports are the same bytes and the app read back is the app exported. It returns the export.
func roundTrip(t *testing.T, a *apps.App, env Env, opts Options) []byte {
	t.Helper()
	first, err := Export(a, env)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Import(first, env, Options{Modes: opts.Modes, Lenient: opts.Lenient, NodeTypes: opts.NodeTypes})
	if err != nil {
		t.Fatalf("the export does not import: %v\n%s", err, first)
	}
	second, err := Export(again.App, env)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("export → import → export changed the bytes:\n--- first\n%s\n--- second\n%s", first, second)
	}
	return first
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := read(t, path)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (go test -update to rewrite):\n%s", path, got)
	}
}

// TestOwnFiles imports one file per version family, written from Dify's format, and checks what
// each field became, that the canonical export matches its golden file and that it round-trips.
func TestOwnFiles(t *testing.T) {
	t.Parallel()
	env := testEnv()
	for _, tc := range []struct {
		file  string
		opts  Options
		check func(t *testing.T, a *apps.App)
		notes []string
	}{
		{
			file: "chat-0.1.3.yml",
			opts: Options{Datasets: map[string]string{"6c1f6c1e-aaaa-4000-8000-000000000001": "handbook"}},
			check: func(t *testing.T, a *apps.App) {
				want := &apps.App{
					Source: apps.SourceImport, Name: "Handbook Helper", Mode: apps.ModeChat, Enabled: true, DSLVersion: "0.1.3",
					Description: "Answers questions about the staff handbook.",
					Icon:        apps.Icon{Icon: "📘", Background: "#E0F2FE"},
					Model: apps.Model{Provider: "openai", Name: "gpt-4o-mini", Mode: "chat",
						Parameters: map[string]any{"max_tokens": 512, "stop": []any{}, "temperature": 0.2}},
					PromptType: apps.PromptSimple, PrePrompt: "Answer from the handbook. Be brief, {{name}}.",
					OpeningStatement: "Ask me about the handbook.", SuggestedQuestions: []string{"How many days off do I get?"},
					SuggestedQuestionsAfterAnswer: true,
					Features: apps.Features{RetrieverResource: apps.Toggle{Enabled: true},
						FileUpload: apps.FileUpload{Image: apps.ImageUpload{Detail: "high", NumberLimits: 3, TransferMethods: []string{"remote_url", "local_file"}}}},
					UserInputForm: []apps.InputField{
						{Type: "text-input", Variable: "name", Label: "Your name", MaxLength: 48},
						{Type: "select", Variable: "tone", Label: "Tone", Required: true, Default: "warm", Options: []string{"warm", "dry"}},
						{Type: "number", Variable: "years", Label: "Years of service", Default: "2"},
					},
					KnowledgeBases: []string{"handbook"},
					Retrieval:      apps.Retrieval{Mode: "single"},
					Extra: map[string]map[string]any{
						"model_config":                          {"agent_mode": map[string]any{"enabled": false, "strategy": "router", "tools": []any{}}},
						"model_config.sensitive_word_avoidance": {"configs": []any{}},
					},
				}
				if !reflect.DeepEqual(a, want) {
					t.Fatalf("imported\n %#v\nwant\n %#v", a, want)
				}
			},
			notes: []string{"changed: model_config.agent_mode.tools[0]: an old-style dataset entry; it is a knowledge base of the app now"},
		},
		{
			file: "chat-0.6.0.yml",
			check: func(t *testing.T, a *apps.App) {
				if a.Model.Provider != "openai" || a.Model.Name != "gpt-4o-mini" || a.Model.Mode != "chat" ||
					!reflect.DeepEqual(a.Model.Parameters, map[string]any{"temperature": 0.3, "top_p": 0.9}) {
					t.Errorf("model %+v", a.Model)
				}
				if a.PromptType != apps.PromptAdvanced || len(a.ChatPrompt) != 1 || a.ChatPrompt[0].Role != "system" ||
					a.ChatPrompt[0].Text != "You support {{company}} customers.\n{{#context#}}" || a.ChatPrompt[0].Extra["id"] != "4f7c2d1e" {
					t.Errorf("chat prompt %+v", a.ChatPrompt)
				}
				if !slices.Equal(a.KnowledgeBases, []string{"handbook", "faq"}) {
					t.Errorf("knowledge bases %v", a.KnowledgeBases)
				}
				r := a.Retrieval
				if r.Mode != "multiple" || r.TopK != 4 || *r.ScoreThreshold != 0.5 || !r.ScoreThresholdEnabled || !r.RerankingEnabled ||
					*r.RerankingModel != (apps.ModelRef{Provider: "local", Name: "bge-reranker"}) {
					t.Errorf("retrieval %+v", r)
				}
				f := a.Features
				if f.TextToSpeech != (apps.TextToSpeech{Enabled: true, Voice: "alloy", Language: "en-US", AutoPlay: "disabled"}) ||
					!f.SensitiveWordAvoidance.Enabled || f.SensitiveWordAvoidance.Type != "keywords" ||
					f.SensitiveWordAvoidance.Config["keywords"] != "badword" || !f.FileUpload.Enabled ||
					!slices.Equal(f.FileUpload.AllowedFileTypes, []string{"image", "document"}) || f.FileUpload.NumberLimits != 3 {
					t.Errorf("features %+v", f)
				}
				if !a.Icon.UseAsAnswerIcon || a.UserInputForm[0].Extra["placeholder"] != "ACME" || a.UserInputForm[1].Default != "false" {
					t.Errorf("icon %+v, form %+v", a.Icon, a.UserInputForm)
				}
				if a.Extra["model_config.file_upload"]["fileUploadConfig"] == nil || a.Extra["model_config.dataset_configs"]["metadata_filtering_mode"] != "disabled" {
					t.Errorf("kept %+v", a.Extra)
				}
			},
			notes: []string{
				"not run: model_config.text_to_speech: text to speech is enabled, but Parley does not offer it yet; the setting is kept",
			},
		},
		{
			file: "completion-0.3.0.yml",
			check: func(t *testing.T, a *apps.App) {
				if a.Mode != apps.ModeCompletion || a.Model.Provider != "local" || a.Model.Mode != "completion" ||
					*a.CompletionPrompt != (apps.CompletionPrompt{Text: "Write three taglines for {{product}}.", UserPrefix: "Human", AssistantPrefix: "Assistant"}) ||
					!a.Features.MoreLikeThis.Enabled {
					t.Errorf("imported %+v", a)
				}
			},
			notes: []string{
				"not run: model_config.more_like_this: more like this is enabled, but Parley does not offer it yet; the setting is kept",
			},
		},
		{
			file: "completion-0.7.0.yml",
			opts: Options{Datasets: map[string]string{"9d2e7f0c3b1a==": "kb-1111", "unused": "faq"}},
			check: func(t *testing.T, a *apps.App) {
				// openai_api_compatible is a provider type: the first openai-compatible
				// provider with llama3 is local.
				if a.Model.Provider != "local" || a.Model.Name != "llama3" || a.DatasetQueryVariable != "product" ||
					!slices.Equal(a.KnowledgeBases, []string{"handbook"}) || a.Retrieval.TopK != 3 || a.Icon.Type != "emoji" {
					t.Errorf("imported %+v", a)
				}
			},
			notes: []string{`changed: --dataset: the file does not use dataset "unused"`},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res, err := Import(read(t, filepath.Join("testdata", "own", tc.file)), env, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, res.App)
			var notes []string
			for _, n := range res.Notes {
				notes = append(notes, n.String())
			}
			if !slices.Equal(notes, tc.notes) {
				t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(tc.notes, "\n"))
			}
			out := roundTrip(t, res.App, env, tc.opts)
			golden(t, filepath.Join("testdata", "own", strings.TrimSuffix(tc.file, ".yml")+".export.golden"), out)
		})
	}
}

func importErr(t *testing.T, doc string, env Env, opts Options) *Error {
	t.Helper()
	res, err := Import([]byte(doc), env, opts)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Import succeeded or failed oddly: %v %+v", err, res)
	}
	if res != nil {
		t.Fatal("a failed import returned an app")
	}
	return e
}

const chatBody = `
kind: app
app: {name: Bot, mode: chat}
model_config:
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {}}
`

func TestVersions(t *testing.T) {
	t.Parallel()
	env := testEnv()
	for _, tc := range []struct {
		version string // the line as written; "" for none
		want    string // problem text; "" for success
		dsl     string // the version the app records
	}{
		{"", "", "0.1.0"},
		{"version: 0.1.0", "", "0.1.0"},
		{"version: 0.1.5", "", "0.1.5"},
		{"version: '0.5.0'", "", "0.5.0"},
		{"version: 0.7.0", "", "0.7.0"},
		{"version: 0.5", "version: must be a string such as '0.6.0', found the number 0.5 (line 1); quote it", ""},
		{"version: 1", "version: must be a string such as '0.6.0', found the number 1", ""},
		{"version: [0, 1]", "version: must be a string such as '0.6.0', found a list", ""},
		{"version: 0.8.0", "version: DSL version 0.8.0 is newer than Parley reads (0.1.0 through 0.7.0)", ""},
		{"version: 0.7.1", "version: DSL version 0.7.1 is newer", ""},
		{"version: 1.0.0", "version: DSL version 1.0.0 is not supported: Parley reads versions 0.1.0 through 0.7.0", ""},
		{"version: 0.0.9", "version: DSL version 0.0.9 is older than Parley reads", ""},
		{"version: latest", `version: "latest" is not a DSL version (X.Y.Z)`, ""},
		{"version: 0.1.x", `version: "0.1.x" is not a DSL version`, ""},
	} {
		t.Run(tc.version, func(t *testing.T) {
			doc := tc.version + chatBody
			if tc.want == "" {
				res, err := Import([]byte(doc), env, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if res.App.DSLVersion != tc.dsl {
					t.Fatalf("version %q, want %q", res.App.DSLVersion, tc.dsl)
				}
				return
			}
			e := importErr(t, doc, env, Options{})
			if len(e.Problems) != 1 || !strings.Contains(e.Problems[0].String(), tc.want) {
				t.Fatalf("problems %v, want %q", e.Problems, tc.want)
			}
		})
	}
}

func TestModelResolution(t *testing.T) {
	t.Parallel()
	env := testEnv()
	env.Providers = append(env.Providers, config.Provider{Name: "langgenius/anthropic/anthropic", Type: config.ProviderTypeOpenAICompatible,
		Models: []config.Model{{Name: "claude-3-5-sonnet", Type: config.ModelTypeLLM, Enabled: true}}})
	for _, tc := range []struct{ provider, model, want string }{
		{"openai", "gpt-4o-mini", "openai"},                                  // exact name
		{"langgenius/openai/openai", "gpt-4o-mini", "openai"},                // plugin id, by last segment
		{"acme/openai/openai", "gpt-4o-mini", "openai"},                      // any organisation
		{"anthropic", "claude-3-5-sonnet", "langgenius/anthropic/anthropic"}, // old name, provider configured under the plugin id
		{"langgenius/anthropic/anthropic", "claude-3-5-sonnet", "langgenius/anthropic/anthropic"},
		{"openai_api_compatible", "llama3", "local"},                                        // by type: the first that has the model
		{"langgenius/openai_api_compatible/openai_api_compatible", "gpt-4o-mini", "openai"}, // by type, config order
		{"openai", "gpt-3.5-turbo", ""},                                                     // disabled
		{"openai", "llama3", ""},                                                            // another provider's model, not reached by name
		{"local", "bge-reranker", ""},                                                       // not an llm
		{"google", "gemini-pro", ""},                                                        // no such provider
	} {
		m, why := env.resolveModel(modelLLM, tc.provider, tc.model)
		switch {
		case tc.want == "" && why == "":
			t.Errorf("%s/%s resolved to %s; want a failure", tc.provider, tc.model, m.provider.Name)
		case tc.want != "" && (why != "" || m.provider.Name != tc.want):
			t.Errorf("%s/%s resolved to %q (%s); want %q", tc.provider, tc.model, m.provider.Name, why, tc.want)
		}
	}
}

// TestSubstitution: an unresolvable model fails the import with the path and the reference;
// with --model-fallback it is replaced, and the replacement is reported.
func TestSubstitution(t *testing.T) {
	t.Parallel()
	doc := `version: '0.6.0'
app: {name: Claude Bot, mode: chat}
model_config:
  model: {provider: langgenius/anthropic/anthropic, name: claude-3, mode: chat, completion_params: {temperature: 1}}
`
	e := importErr(t, doc, testEnv(), Options{})
	want := `cannot import the DSL file: model_config.model: provider "langgenius/anthropic/anthropic" model "claude-3" is not configured (no provider of this server matches "anthropic")`
	if e.Error() != want {
		t.Fatalf("error\n%s\nwant\n%s", e, want)
	}
	res, err := Import([]byte(doc), testEnv(), Options{ModelFallback: "openai:gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.App.Model; m.Provider != "openai" || m.Name != "gpt-4o-mini" || m.Parameters["temperature"] != 1 {
		t.Fatalf("model %+v", m)
	}
	if len(res.Notes) != 1 || res.Notes[0].Kind != NoteSubstituted || res.Notes[0].Path != "model_config.model" ||
		!strings.Contains(res.Notes[0].Message, `"claude-3" is not configured`) || !strings.HasSuffix(res.Notes[0].Message, "using openai:gpt-4o-mini (--model-fallback)") {
		t.Fatalf("notes %v", res.Notes)
	}
	roundTrip(t, res.App, testEnv(), Options{})

	// A fallback that is not a configured llm fails the import; so does a malformed one.
	for fb, want := range map[string]string{
		"openai:gpt-5":       `--model-fallback: provider "openai" model "gpt-5" is not configured`,
		"gpt-4o-mini":        `--model-fallback: "gpt-4o-mini" is not PROVIDER:MODEL`,
		"local:bge-reranker": `--model-fallback: provider "local" model "bge-reranker" is not configured`,
	} {
		e := importErr(t, doc, testEnv(), Options{ModelFallback: fb})
		if !strings.Contains(e.Error(), want) {
			t.Errorf("fallback %s: %v", fb, e)
		}
	}
	// A model missing altogether is a problem too, and the fallback fills it.
	noModel := "version: '0.6.0'\napp: {name: x, mode: chat}\nmodel_config: {pre_prompt: hi}\n"
	if e := importErr(t, noModel, testEnv(), Options{}); !strings.Contains(e.Error(), "model_config.model: missing") {
		t.Errorf("no model: %v", e)
	}
	if res, err := Import([]byte(noModel), testEnv(), Options{ModelFallback: "local:llama3"}); err != nil || res.App.Model.Name != "llama3" {
		t.Errorf("no model with fallback: %v", err)
	}
}

// TestEveryProblemAtOnce: a file with many problems fails with one error that lists them all, in
// file order, each with its path.
func TestEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	doc := `version: 0.6.0
app: {mode: completion}
model_config:
  model: {provider: cohere, name: command-r, mode: chat}
  prompt_type: fancy
  user_input_form:
  - text-input: {label: Topic, variable: topic, max_length: lots}
  - text-input: {label: Again, variable: topic}
  - {}
  - select: {label: No variable}
  suggested_questions: not a list
  dataset_configs:
    retrieval_model: multiple
    reranking_enable: true
    reranking_mode: reranking_model
    reranking_model: {reranking_provider_name: cohere, reranking_model_name: rerank-english-v3}
    datasets:
      datasets:
      - dataset: {enabled: true, id: 0f3c-unknown}
      - dataset: {enabled: true, id: kb-1111}
      - dataset: {enabled: true}
  dataset_query_variable: nope
`
	e := importErr(t, doc, testEnv(), Options{Datasets: map[string]string{"kb-1111": "missing-kb"}})
	want := []string{
		`app.name: missing: give the app a name with --name`,
		`model_config.model: provider "cohere" model "command-r" is not configured (no provider of this server matches "cohere")`,
		`model_config.prompt_type: unknown prompt type "fancy" (simple or advanced)`,
		`model_config.user_input_form[0].text-input.max_length: expected a whole number, found the text "lots"`,
		`model_config.user_input_form[1].text-input.variable: "topic" is also the variable of user_input_form[0]`,
		`model_config.user_input_form[2]: expected a mapping with one key, the input's type (text-input, paragraph, select, number, …)`,
		`model_config.user_input_form[3].select.variable: missing`,
		`model_config.suggested_questions: expected a list, found the text "not a list"`,
		`model_config.dataset_configs.datasets.datasets[1].dataset.id: --dataset kb-1111=missing-kb: there is no knowledge base "missing-kb"`,
		`model_config.dataset_configs.datasets.datasets[2].dataset.id: missing`,
		`model_config.dataset_query_variable: "nope" is not a variable of user_input_form`,
	}
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(e.Error(), fmt.Sprintf("cannot import the DSL file, %d problems:\n  app.name: missing", len(want))) {
		t.Fatalf("message:\n%s", e)
	}

}

// TestRerankModelNotHere: a rerank model no provider serves does not stop an import, as it does
// not stop Dify's: retrieval follows each knowledge base's own settings, so the app's model is
// kept as written, with a note.
func TestRerankModelNotHere(t *testing.T) {
	t.Parallel()
	doc := "version: 0.6.0\n" + chatBody + `  dataset_configs:
    retrieval_model: multiple
    reranking_enable: true
    reranking_mode: reranking_model
    reranking_model: {reranking_provider_name: cohere, reranking_model_name: rerank-english-v3}
    datasets:
      datasets:
      - dataset: {enabled: true, id: faq}
`
	res, err := Import([]byte(doc), testEnv(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rm := res.App.Retrieval.RerankingModel; rm == nil || *rm != (apps.ModelRef{Provider: "cohere", Name: "rerank-english-v3"}) {
		t.Fatalf("rerank model %+v, want it as written", rm)
	}
	if len(res.Notes) != 1 || res.Notes[0].Kind != NoteNotRun || res.Notes[0].Path != "model_config.dataset_configs.reranking_model" ||
		!strings.Contains(res.Notes[0].Message, `provider "cohere" model "rerank-english-v3" is not configured`) {
		t.Fatalf("notes %v", res.Notes)
	}
	roundTrip(t, res.App, testEnv(), Options{})
}

func TestMissingPieces(t *testing.T) {
	t.Parallel()
	env := testEnv()
	for name, tc := range map[string]struct{ doc, want string }{
		"empty":            {"", "the file is empty"},
		"comment only":     {"# nothing\n", "the file is empty"},
		"scalar":           {"just text\n", "expected a mapping at the top of the file"},
		"not yaml":         {"app: [", "not a YAML document"},
		"list":             {"- a\n- b\n", "expected a mapping at the top of the file"},
		"two documents":    {chatBody + "---\n" + chatBody, "the file holds more than one YAML document"},
		"no app":           {"version: '0.6.0'\nmodel_config: {}\n", "app: missing: the file has no app section"},
		"app not a map":    {"app: chat\n", "app: expected a mapping, found the text \"chat\""},
		"no mode":          {"app: {name: x}\nmodel_config: {}\n", "app.mode: missing"},
		"unknown mode":     {"app: {name: x, mode: chatbot}\n", `app.mode: unknown app mode "chatbot"`},
		"no model_config":  {"app: {name: x, mode: chat}\n", "model_config: missing: a chat app is defined by its model_config section"},
		"pipeline":         {"kind: rag_pipeline\napp: {name: x, mode: chat}\n", "kind: this is a knowledge pipeline"},
		"duplicate key":    {"app: {name: x, mode: chat, name: y}\nmodel_config: {}\n", "app.name: defined twice (line 1)"},
		"advanced empty":   {strings.Replace(chatBody, "completion_params: {}}", "completion_params: {}}\n  prompt_type: advanced", 1), "model_config.prompt_type: advanced, but neither"},
		"completion no qv": {"app: {name: x, mode: completion}\nmodel_config:\n  model: {provider: local, name: llama3}\n  dataset_configs: {datasets: {datasets: [{dataset: {id: faq}}]}}\n", "model_config.dataset_query_variable: missing"},
	} {
		t.Run(name, func(t *testing.T) {
			e := importErr(t, tc.doc, env, Options{})
			if !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("error %q, want %q", e, tc.want)
			}
		})
	}
}

// TestAdvancedPromptProblems: an advanced prompt must hold the template its model's mode runs
// (the configured model's mode), with Dify's roles.
func TestAdvancedPromptProblems(t *testing.T) {
	t.Parallel()
	advanced := func(rest string) string {
		return strings.Replace(chatBody, "completion_params: {}}", "completion_params: {}}\n  prompt_type: advanced\n"+rest, 1)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"chat model, completion prompt only": {advanced("  completion_prompt_config: {prompt: {text: 'Human: {{#query#}}'}}"),
			"model_config.chat_prompt_config.prompt: missing: the prompt is advanced and openai:gpt-4o-mini is a chat model, which needs prompt messages"},
		"completion model, chat prompt only": {"app: {name: x, mode: completion}\nmodel_config:\n  model: {provider: local, name: llama3}\n  prompt_type: advanced\n  chat_prompt_config: {prompt: [{role: user, text: hi}]}\n",
			"model_config.completion_prompt_config.prompt.text: missing: the prompt is advanced and local:llama3 is a completion model, which needs a prompt text"},
		"unknown role": {advanced("  chat_prompt_config: {prompt: [{role: narrator, text: hi}]}"),
			`model_config.chat_prompt_config.prompt[0].role: unknown role "narrator" (system, user or assistant)`},
	} {
		t.Run(name, func(t *testing.T) {
			e := importErr(t, tc.doc, testEnv(), Options{})
			if len(e.Problems) != 1 || !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("error %q, want only %q", e, tc.want)
			}
		})
	}
	// Both templates, and a tool message (which Dify skips), import.
	if _, err := Import([]byte(advanced("  chat_prompt_config: {prompt: [{role: system, text: hi}, {role: tool, text: x}]}\n  completion_prompt_config: {prompt: {text: hi}}")), testEnv(), Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestWorkflowGraphRules: a Workflow app's graph needs an end node and has no answer node; a
// valid one imports with its start node's form.
func TestWorkflowGraphRules(t *testing.T) {
	t.Parallel()
	opts := Options{NodeTypes: nodes.Registry(nodes.Deps{}).Supports}
	doc := func(nodes string) string {
		return "version: 0.6.0\napp: {name: x, mode: workflow}\nworkflow: {graph: {edges: [], nodes: [" + nodes + "]}}\n"
	}
	start := `{id: s, data: {type: start, title: Start, variables: [{variable: q, label: Q, type: text-input, required: true}]}}`
	for name, tc := range map[string]struct{ nodes, want string }{
		"no end":      {start, "the graph has no end node"},
		"answer node": {start + `, {id: e, data: {type: end, outputs: []}}, {id: a, data: {type: answer, answer: hi}}`, "node a: an answer node belongs to Chatflow"},
		"no start":    {`{id: e, data: {type: end, outputs: []}}`, "no start node"},
	} {
		if e := importErr(t, doc(tc.nodes), testEnv(), opts); len(e.Problems) != 1 || !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%s: %v", name, e)
		}
	}
	res, err := Import([]byte(doc(start+`, {id: e, data: {type: end, outputs: [{variable: out, value_selector: [s, q]}]}}`)), testEnv(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.App; a.Mode != apps.ModeWorkflow || a.Workflow == nil || len(a.UserInputForm) != 1 || a.UserInputForm[0].Variable != "q" {
		t.Fatalf("imported %+v", a)
	}
}

func TestOversizedFile(t *testing.T) {
	t.Parallel()
	doc := []byte(chatBody + "# " + strings.Repeat("x", MaxSize) + "\n")
	_, err := Import(doc, testEnv(), Options{})
	if err == nil || !strings.Contains(err.Error(), "DSL files are limited to 10 MB") {
		t.Fatalf("err %v", err)
	}
	// Just under the limit is read.
	fits := []byte(chatBody + "# " + strings.Repeat("x", MaxSize-len(chatBody)-3) + "\n")
	if len(fits) != MaxSize {
		t.Fatalf("test file is %d bytes", len(fits))
	}
	if _, err := Import(fits, testEnv(), Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestYAMLHazards: aliases cannot make a small file huge; merge keys and timestamps read as a
// YAML reader would, and come back unchanged.
func TestYAMLHazards(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	bomb := b.String() + chatBody
	if _, err := Import([]byte(bomb), testEnv(), Options{}); err == nil || !strings.Contains(err.Error(), "expands to more than") && !strings.Contains(err.Error(), "excessive aliasing") {
		t.Fatalf("alias bomb: %v", err)
	}

	doc := `version: 0.6.0
base: &base {temperature: 0.5, top_p: 1}
app: {name: Dated, mode: chat, released: 2024-05-01}
model_config:
  model:
    provider: openai
    name: gpt-4o-mini
    completion_params:
      <<: *base
      temperature: 0.1
`
	res, err := Import([]byte(doc), testEnv(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.App.Model.Parameters; p["temperature"] != 0.1 || p["top_p"] != 1 {
		t.Fatalf("merged parameters %v", p)
	}
	out := roundTrip(t, res.App, testEnv(), Options{})
	if !bytes.Contains(out, []byte("released: \"2024-05-01\"")) {
		t.Fatalf("timestamp not kept as written:\n%s", out)
	}
}

// TestDatasetResolution: mapped ids, Parley ids and names resolve; a disabled entry is left out.
func TestNameTrimmed(t *testing.T) {
	t.Parallel()
	res, err := Import([]byte(strings.Replace(chatBody, "name: Bot,", "name: ' Bot  ',", 1)), testEnv(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.App.Name != "Bot" || len(res.Notes) != 1 || res.Notes[0].String() != `changed: app.name: " Bot  " read as "Bot"` {
		t.Fatalf("name %q, notes %v", res.App.Name, res.Notes)
	}
}

func TestDatasetResolution(t *testing.T) {
	t.Parallel()
	doc := chatBody + `  dataset_configs:
    datasets:
      datasets:
      - dataset: {enabled: true, id: dify-id-1}
      - dataset: {enabled: true, id: kb-1111}
      - dataset: {enabled: true, id: handbook}
      - dataset: {enabled: true, id: faq}
      - dataset: {enabled: false, id: gone}
`
	res, err := Import([]byte(doc), testEnv(), Options{Datasets: map[string]string{"dify-id-1": "faq"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.App.KnowledgeBases, []string{"faq", "handbook"}) {
		t.Fatalf("knowledge bases %v", res.App.KnowledgeBases)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0].String(), `datasets[4].dataset: dataset "gone" is disabled and was left out`) {
		t.Fatalf("notes %v", res.Notes)
	}
	out := roundTrip(t, res.App, testEnv(), Options{})
	if !bytes.Contains(out, []byte("id: faq")) || !bytes.Contains(out, []byte("id: handbook")) {
		t.Fatalf("export does not name the knowledge bases:\n%s", out)
	}
}

// TestTools exercises tool resolution on a Legacy Agent file, a kind the default options refuse:
// a missing tool fails the import, --lenient keeps it with a note, a tool the server has passes.
func TestTools(t *testing.T) {
	t.Parallel()
	doc := `version: 0.6.0
app: {name: Clock Agent, mode: agent-chat}
model_config:
  model: {provider: langgenius/openai/openai, name: gpt-4o-mini, mode: chat, completion_params: {temperature: 0.2}}
  agent_mode:
    enabled: true
    strategy: function_call
    max_iteration: 5
    tools:
    - enabled: true
      provider_type: builtin
      provider_id: time
      provider_name: time
      tool_name: current_time
      tool_label: Current Time
      tool_parameters: {format: '%Y-%m-%d %H:%M:%S', timezone: UTC}
    - enabled: false
      provider_type: api
      provider_id: 0b1c
      tool_name: unused
      tool_parameters: {}
    - dataset: {enabled: true, id: faq}
`
	agents := Options{Modes: []string{apps.ModeAgentChat}}
	e := importErr(t, doc, testEnv(), agents)
	if len(e.Problems) != 1 || e.Problems[0].String() !=
		`model_config.agent_mode.tools[0]: tool "current_time" of provider "time" (builtin) is not available on this server; import without --strict to keep it anyway` {
		t.Fatalf("problems %v", e.Problems)
	}
	lenient := agents
	lenient.Lenient = true
	res, err := Import([]byte(doc), testEnv(), lenient)
	if err != nil {
		t.Fatal(err)
	}
	ag := res.App.Agent
	if ag == nil || !ag.Enabled || ag.Strategy != "function_call" || ag.MaxIteration != 5 || len(ag.Tools) != 2 ||
		!ag.Tools[0].Missing || ag.Tools[0].Parameters["timezone"] != "UTC" || ag.Tools[1].Missing || ag.Tools[1].Enabled {
		t.Fatalf("agent %+v", ag)
	}
	if !slices.Equal(res.App.KnowledgeBases, []string{"faq"}) {
		t.Fatalf("knowledge bases %v", res.App.KnowledgeBases)
	}
	if len(res.Notes) != 1 || res.Notes[0].Kind != NoteMissingTool || res.Notes[0].Path != "model_config.agent_mode.tools[0]" {
		t.Fatalf("notes %v", res.Notes)
	}
	roundTrip(t, res.App, testEnv(), lenient)

	withTime := testEnv()
	withTime.Tool = func(tool apps.Tool) bool { return tool.ProviderID == "time" && tool.Name == "current_time" }
	res, err = Import([]byte(doc), withTime, agents)
	if err != nil || res.App.Agent.Tools[0].Missing || len(res.Notes) != 0 {
		t.Fatalf("with the tool: %v %+v", err, res)
	}
}

// builtinTool reports whether the tool is one of Parley's built-in tools.
func builtinTool(t apps.Tool) bool {
	_, err := builtin.Lookup(t.ProviderID, t.Name, t.Parameters)
	return err == nil
}

// TestPublicAgentWithBuiltinTool: a public Legacy Agent export with one built-in tool and three
// others: each missing tool is a problem naming it and its path; --lenient imports them marked
// missing, and the built-in one resolved.
func TestPublicAgentWithBuiltinTool(t *testing.T) {
	t.Parallel()
	data := read(t, filepath.Join("testdata", "public", "agent-chat", "dslmaker-youtube-analysis.yml"))
	env := testEnv()
	env.Tool = builtinTool
	opts := Options{ModelFallback: "openai:gpt-4o-mini"}
	e := importErr(t, string(data), env, opts)
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`model_config.agent_mode.tools[0]: tool "bar_chart" of provider "chart" (builtin) is not available on this server; import without --strict to keep it anyway`,
		`model_config.agent_mode.tools[2]: tool "youtube_video_statistics" of provider "youtube" (builtin) is not available on this server; import without --strict to keep it anyway`,
		`model_config.agent_mode.tools[3]: tool "wikipedia_search" of provider "wikipedia" (builtin) is not available on this server; import without --strict to keep it anyway`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems\n%s", strings.Join(got, "\n"))
	}
	opts.Lenient = true
	res, err := Import(data, env, opts)
	if err != nil {
		t.Fatal(err)
	}
	ag := res.App.Agent
	if res.App.Mode != apps.ModeAgentChat || ag == nil || ag.Strategy != "function_call" || len(ag.Tools) != 4 ||
		!ag.Tools[0].Missing || ag.Tools[1].Missing || ag.Tools[1].Name != "current_time" || !ag.Tools[2].Missing || !ag.Tools[3].Missing {
		t.Fatalf("agent %+v", ag)
	}
	roundTrip(t, res.App, env, opts)
}

// TestExportConfigApp: a config app exports, and its export imports as the same app.
func TestExportConfigApp(t *testing.T) {
	t.Parallel()
	file, err := config.ParseFile([]byte(`
providers:
  - {name: openai, base_url: "http://x/v1", requires_api_key: false, models: [{name: gpt-4o-mini, type: llm, context_size: 1000}]}
apps:
  - name: chatbot
    mode: chat
    description: A friendly bot.
    model: {provider: openai, name: gpt-4o-mini, parameters: {temperature: 0.7}}
    pre_prompt: "Be nice to {{name}}."
    opening_statement: Hello!
    suggested_questions_after_answer: true
    user_input_form:
      - {type: text-input, variable: name, label: Name, max_length: 48}
      - {type: number, variable: age, default: "30"}
      - {type: checkbox, variable: ok, default: "true"}
    knowledge_bases: [handbook]
knowledge_bases:
  - name: handbook
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Providers: file.Providers, KnowledgeBases: []KnowledgeBase{{Name: "handbook"}}}
	cfg := apps.FromConfig(file.Apps[0])
	out := roundTrip(t, cfg, env, Options{})
	golden(t, filepath.Join("testdata", "own", "config-app.export.golden"), out)
	res, err := Import(out, env, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := res.App
	if a.Name != "chatbot" || a.PrePrompt != cfg.PrePrompt || a.Model.Parameters["temperature"] != 0.7 || !a.SuggestedQuestionsAfterAnswer ||
		!slices.Equal(a.KnowledgeBases, []string{"handbook"}) || !a.Features.RetrieverResource.Enabled ||
		!reflect.DeepEqual(a.UserInputForm, cfg.UserInputForm) || a.DSLVersion != ExportVersion {
		t.Fatalf("config app came back as %+v", a)
	}
	if _, err := Export(&apps.App{Name: "flow", Mode: apps.ModeWorkflow}, env); err == nil {
		t.Fatal("exported a workflow app with no graph")
	}
}

// publicOptions are the options a public file needs: a mapping for the one that names a dataset.
var publicOptions = map[string]Options{
	"rosehill-preparedness-helper-dataset.yml": {Datasets: map[string]string{"02f3eff0-ce59-4c38-ab3d-aecbb33c6e2c": "handbook"}},
}

// TestPublicExports imports the public Dify exports collected in testdata/public (files Parley's
// authors did not write): every Chatbot and Completion app, and every Chatflow whose nodes
// Parley runs, imports (with a model fallback, as their providers are not configured here),
// round-trips byte for byte, and loses nothing but empty values, Dify's plugin dependencies and
// the references it resolved; every file of another kind is refused with the reason.
func TestPublicExports(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "public", "*", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv()
	env.Tool = builtinTool
	imported, refused := map[string]int{}, map[string]int{}
	var mu sync.Mutex
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(filepath.Base(filepath.Dir(path))+"/"+name, func(t *testing.T) {
			data := read(t, path)
			var head struct {
				App struct{ Mode string } `yaml:"app"`
			}
			if err := yaml.Unmarshal(data, &head); err != nil {
				t.Fatal(err)
			}
			opts := publicOptions[name]
			opts.ModelFallback = "openai:gpt-4o-mini"
			opts.NodeTypes = nodes.Registry(nodes.Deps{}).Supports
			res, err := Import(data, env, opts)
			if head.App.Mode == apps.ModeAdvancedChat || head.App.Mode == apps.ModeWorkflow {
				// A Chatflow or a Workflow app imports when Parley runs every node of its graph; otherwise every
				// problem names a node whose type it does not run yet, or a dataset to map.
				var e *Error
				if errors.As(err, &e) {
					for _, p := range e.Problems {
						if !strings.Contains(p.String(), "is not supported yet") &&
							!strings.Contains(p.String(), "agent strategy") &&
							!strings.Contains(p.String(), "is not available on this server; import without --strict") {
							t.Fatalf("problem %s", p)
						}
					}
					mu.Lock()
					refused[head.App.Mode]++
					mu.Unlock()
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				imported[head.App.Mode]++
				mu.Unlock()
				out := roundTrip(t, res.App, env, Options{NodeTypes: opts.NodeTypes})
				for _, lost := range lostValues(t, data, out) {
					t.Errorf("the export lost %s", lost)
				}
				return
			}
			if head.App.Mode == apps.ModeAgentChat {
				// A tool the server lacks is a problem naming it; --lenient keeps it with a note.
				missing := 0
				var e *Error
				if errors.As(err, &e) {
					for _, p := range e.Problems {
						if !strings.Contains(p.String(), "is not available on this server; import without --strict") {
							t.Fatalf("problem %s", p)
						}
					}
					missing = len(e.Problems)
					opts.Lenient = true
					res, err = Import(data, env, opts)
				}
				if err != nil {
					t.Fatal(err)
				}
				notes := 0
				for _, n := range res.Notes {
					if n.Kind == NoteMissingTool {
						notes++
					}
				}
				if notes != missing {
					t.Fatalf("%d missing tools noted, %d refused: %v", notes, missing, res.Notes)
				}
			}
			if !slices.Contains(ImportModes(), head.App.Mode) {
				if err == nil || !strings.Contains(err.Error(), "cannot be imported yet") {
					t.Fatalf("%s app: %v", head.App.Mode, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			imported[head.App.Mode]++
			out := roundTrip(t, res.App, env, Options{Lenient: opts.Lenient})
			for _, lost := range lostValues(t, data, out) {
				t.Errorf("the export lost %s", lost)
			}
		})
	}
	if imported[apps.ModeChat] < 5 || imported[apps.ModeCompletion] < 1 || imported[apps.ModeAgentChat] < 10 || imported[apps.ModeAdvancedChat] < 10 ||
		imported[apps.ModeWorkflow] < 10 {
		t.Fatalf("imported %v public files; the corpus should have Chatbot and Completion apps", imported)
	}
	t.Logf("public exports imported: %v; Chatflows refused for node types not run yet: %v", imported, refused)

	// Without its mapping, the file that names a dataset imports, as Dify imports it: the
	// dataset is noted, with how to map it, and left out of retrieval. The export writes it
	// back, and importing the export with the mapping maps it.
	const ref = "02f3eff0-ce59-4c38-ab3d-aecbb33c6e2c"
	data := read(t, filepath.Join("testdata", "public", "chat", "rosehill-preparedness-helper-dataset.yml"))
	res, err := Import(data, env, Options{ModelFallback: "openai:gpt-4o-mini"})
	if err != nil || len(res.App.KnowledgeBases) != 0 || !slices.Equal(res.App.UnmappedDatasets, []string{ref}) {
		t.Fatalf("unmapped dataset: %v %+v", err, res)
	}
	if !slices.ContainsFunc(res.Notes, func(n Note) bool {
		return n.Kind == NoteUnmappedDataset && strings.Contains(n.Message, "--dataset "+ref+"=KNOWLEDGE_BASE")
	}) {
		t.Fatalf("no note says how to map the dataset: %v", res.Notes)
	}
	out := roundTrip(t, res.App, env, Options{})
	mapped, err := Import(out, env, Options{Datasets: map[string]string{ref: "handbook"}})
	if err != nil || !slices.Equal(mapped.App.KnowledgeBases, []string{"handbook"}) || len(mapped.App.UnmappedDatasets) != 0 {
		t.Fatalf("the export imported with --dataset: %v %+v", err, mapped)
	}
}

// lostValues lists the values of the original file that the export does not have at the same
// path, except empty ones, the dependencies, and the model and dataset references an import
// rewrites to this server's names.
func lostValues(t *testing.T, original, export []byte) []string {
	t.Helper()
	var a, b any
	if err := yaml.Unmarshal(original, &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(export, &b); err != nil {
		t.Fatal(err)
	}
	la, lb := map[string]any{}, map[string]any{}
	leaves("", a, la)
	leaves("", b, lb)
	var lost []string
	for path, v := range la {
		if v == nil || v == "" || strings.HasPrefix(path, ".dependencies") ||
			path == ".model_config.model.provider" || path == ".model_config.model.name" ||
			strings.HasSuffix(path, ".dataset.id") || rewrittenNodeRef(path) {
			continue
		}
		if w, ok := lb[path]; !ok || fmt.Sprint(w) != fmt.Sprint(v) {
			lost = append(lost, fmt.Sprintf("%s = %q (export: %q)", path, v, w))
		}
	}
	slices.Sort(lost)
	return lost
}

// nodeRef matches the references in a workflow graph that an import rewrites to this server's
// names: a node's model, an agent node's model and a knowledge-retrieval node's datasets.
var nodeRef = regexp.MustCompile(`^\.workflow\.graph\.nodes\[\d+\]\.data\.(model\.(provider|name)|agent_parameters\.model\.value\.(provider|model)|dataset_ids\[\d+\])$`)

func rewrittenNodeRef(path string) bool { return nodeRef.MatchString(path) }

func leaves(prefix string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			leaves(prefix+"."+k, e, out)
		}
	case []any:
		for i, e := range x {
			leaves(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	default:
		out[prefix] = v
	}
}

// agentTools has the two built-in tools the own agent export uses.
func agentTools(t apps.Tool) bool {
	return t.ProviderID == "time" && t.Name == "current_time" || t.ProviderID == "maths" && t.Name == "eval_expression"
}

// TestAgentApp imports an Agent app export (DSL 0.7.0): the app keeps its identity, the package
// becomes the bound agent's unpublished draft with the soul's model, prompt, tools, knowledge,
// features and variables; the export gives the same shape back and round-trips.
func TestAgentApp(t *testing.T) {
	t.Parallel()
	env := testEnv()
	env.Tool = agentTools
	path := filepath.Join("testdata", "own", "agent-0.7.0.yml")
	data := read(t, path)
	res, err := Import(data, env, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := res.App
	if a.Mode != apps.ModeAgent || a.Name != "Research Agent" || a.Agent != nil || a.Model.Name != "" || a.UserInputForm != nil {
		t.Fatalf("app %+v: the app itself holds no agent settings", a)
	}
	if a.Bound == nil || a.Bound.Draft == nil || a.Bound.Published != nil {
		t.Fatalf("bound %+v: want an unpublished draft", a.Bound)
	}
	d := a.Bound.Draft
	want := &apps.AgentConfig{
		Name: "Researcher", Description: "A careful researcher.", Role: "Researcher",
		Icon:         apps.Icon{Type: "emoji", Icon: "🔎", Background: "#FFEAD5"},
		Model:        apps.Model{Provider: "openai", Name: "gpt-4o-mini", Mode: "chat", Parameters: map[string]any{"temperature": 0.3, "max_tokens": 1024}},
		SystemPrompt: "You research {{topic}} carefully and cite the time when it matters.",
		Tools: []apps.Tool{
			{ProviderType: "builtin", ProviderID: "time", Name: "current_time", Label: "Current Time", Parameters: map[string]any{"timezone": "UTC"},
				Enabled: true, Extra: map[string]any{"credential_ref": nil, "credential_type": "unauthorized"}},
			{ProviderID: "maths", Name: "eval_expression", Parameters: map[string]any{}, Enabled: true,
				Extra: map[string]any{"credential_type": "unauthorized", "plugin_id": "langgenius/maths"}},
		},
		KnowledgeBases:                []string{"handbook"},
		OpeningStatement:              "What should I look into?",
		SuggestedQuestions:            []string{"What time is it in UTC?"},
		SuggestedQuestionsAfterAnswer: true,
		Features: apps.Features{RetrieverResource: apps.Toggle{Enabled: true}, FileUpload: apps.FileUpload{Enabled: true,
			AllowedFileTypes: []string{"document"}, AllowedUploadMethods: []string{"remote_url", "local_file"}, NumberLimits: 2}},
		UserInputForm: []apps.InputField{
			{Type: apps.InputText, Variable: "topic", Label: "topic", Required: true, Extra: map[string]any{"type": "string"}},
			{Type: apps.InputNumber, Variable: "depth", Label: "depth", Default: "2"},
		},
	}
	d2 := *d
	d2.Extra = nil
	if !reflect.DeepEqual(&d2, want) {
		t.Fatalf("draft\n %#v\nwant\n %#v", &d2, want)
	}
	for _, key := range []string{"", "soul", "soul.knowledge", "soul.model"} {
		if d.Extra[key] == nil {
			t.Errorf("draft Extra[%q] missing; kept: %v", key, slices.Sorted(maps.Keys(d.Extra)))
		}
	}
	if len(res.Notes) != 0 {
		t.Fatalf("notes %v", res.Notes)
	}
	out := roundTrip(t, a, env, Options{})
	golden(t, filepath.Join("testdata", "own", "agent-0.7.0.export.golden"), out)
	back, err := Import(out, env, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.App.Bound.Draft, d) {
		t.Fatalf("the export reads back as\n %#v\nnot\n %#v", back.App.Bound.Draft, d)
	}

	// The published configuration is what an Agent app runs.
	if _, err := a.PublishedAgent(); !errors.Is(err, apps.ErrAgentNotPublished) {
		t.Fatalf("PublishedAgent of a draft err = %v", err)
	}
	a.Bound.Published = d
	run, err := a.PublishedAgent()
	if err != nil || run.Model.Name != "gpt-4o-mini" || run.PrePrompt != want.SystemPrompt || len(run.Agent.Tools) != 2 ||
		run.Features.RetrieverResource.Enabled || len(run.UserInputForm) != 2 || !slices.Equal(run.KnowledgeBases, []string{"handbook"}) {
		t.Fatalf("PublishedAgent = %+v, %v", run, err)
	}
}

// TestAgentAppProblems: missing tools (and --lenient), a model to substitute, a package the
// app does not name.
func TestAgentAppProblems(t *testing.T) {
	t.Parallel()
	data := string(read(t, filepath.Join("testdata", "own", "agent-0.7.0.yml")))
	env := testEnv() // no tools at all
	e := importErr(t, strings.Replace(data, "model: gpt-4o-mini", "model: gpt-5", 1), env, Options{})
	var got []string
	for _, p := range e.Problems {
		got = append(got, p.String())
	}
	const pkg = "agent_packages.agent-4f1c2a9e0b7d3e55.soul"
	wantProblems := []string{
		pkg + `.model: provider "langgenius/openai/openai" model "gpt-5" is not configured`,
		pkg + `.tools.dify_tools[0]: tool "current_time" of provider "time" (builtin) is not available on this server; import without --strict to keep it anyway`,
		pkg + `.tools.dify_tools[1]: tool "eval_expression" of provider "maths" () is not available on this server; import without --strict to keep it anyway`,
	}
	if len(got) != len(wantProblems) {
		t.Fatalf("problems\n%s", strings.Join(got, "\n"))
	}
	for i := range got {
		if !strings.HasPrefix(got[i], wantProblems[i]) {
			t.Errorf("problem %d = %s\nwant %s…", i, got[i], wantProblems[i])
		}
	}
	opts := Options{Lenient: true, ModelFallback: "openai:gpt-4o-mini"}
	res, err := Import([]byte(strings.Replace(data, "model: gpt-4o-mini", "model: gpt-5", 1)), env, opts)
	if err != nil {
		t.Fatal(err)
	}
	d := res.App.Bound.Draft
	if !d.Tools[0].Missing || !d.Tools[1].Missing || d.Model.Name != "gpt-4o-mini" {
		t.Fatalf("draft %+v", d)
	}
	var kinds []NoteKind
	for _, n := range res.Notes {
		kinds = append(kinds, n.Kind)
	}
	if !slices.Equal(kinds, []NoteKind{NoteSubstituted, NoteMissingTool, NoteMissingTool}) {
		t.Fatalf("notes %v", res.Notes)
	}
	roundTrip(t, res.App, env, opts)

	noPkg := "version: 0.7.0\napp: {name: x, mode: agent}\nagent: {package_ref: a}\nagent_packages: {b: {}}\n"
	if e := importErr(t, noPkg, env, Options{}); len(e.Problems) != 1 || e.Problems[0].Path != "agent_packages.a" {
		t.Fatalf("a package the file does not hold: %v", e)
	}
	if e := importErr(t, "version: 0.7.0\napp: {name: x, mode: agent}\n", env, Options{}); len(e.Problems) != 1 || e.Problems[0].Path != "agent" {
		t.Fatalf("no agent section: %v", e)
	}

	// The smallest package: a soul without a model needs --model-fallback; it round-trips.
	bare := `version: "0.7.0"
kind: app
app: {name: Agent, mode: agent}
agent: {package_ref: agent_1}
agent_packages:
  agent_1:
    schema_version: 1
    metadata: {name: Agent, description: "", role: ""}
    soul: {schema_version: 1}
    omitted_assets: []
dependencies: []
`
	if e := importErr(t, bare, env, Options{}); len(e.Problems) != 1 || e.Problems[0].String() != "agent_packages.agent_1.soul.model: missing: the agent has no model" {
		t.Fatalf("a soul without a model: %v", e)
	}
	res, err = Import([]byte(bare), env, Options{ModelFallback: "openai:gpt-4o-mini"})
	if err != nil || res.App.Bound.Draft.Model.Name != "gpt-4o-mini" {
		t.Fatalf("with a fallback: %v", err)
	}
	roundTrip(t, res.App, env, Options{})
	// Knowledge grouped in sets, as some versions of Dify write it: the sets' datasets resolve,
	// and the sets are kept (with Parley's names) for the export.
	sets := strings.Replace(bare, "soul: {schema_version: 1}", `soul:
      schema_version: 1
      knowledge:
        sets:
        - {id: set-1, name: Handbook, datasets: [{id: kb-1111, name: Staff handbook}], query: {mode: generated_query}}`, 1)
	res, err = Import([]byte(sets), env, Options{ModelFallback: "openai:gpt-4o-mini"})
	if err != nil || !slices.Equal(res.App.Bound.Draft.KnowledgeBases, []string{"handbook"}) {
		t.Fatalf("knowledge sets: %v %+v", err, res)
	}
	if out := roundTrip(t, res.App, env, Options{}); !strings.Contains(string(out), "mode: generated_query") ||
		!strings.Contains(string(out), "sets:") || strings.Contains(string(out), "kb-1111") {
		t.Fatalf("knowledge sets exported as\n%s", out)
	}
	// A dataset of a set that is not here imports unmapped, and the export keeps it; a mapping
	// to a knowledge base that does not exist is still refused.
	unknown := strings.Replace(sets, "id: kb-1111", "id: kb-9", 1)
	res, err = Import([]byte(unknown), env, Options{ModelFallback: "openai:gpt-4o-mini"})
	if err != nil || len(res.App.Bound.Draft.KnowledgeBases) != 0 || !slices.Equal(res.App.UnmappedDatasets, []string{"kb-9"}) ||
		len(res.Notes) != 2 || res.Notes[1].Kind != NoteUnmappedDataset || res.Notes[1].Path != "agent_packages.agent_1.soul.knowledge.sets[0].datasets[0].id" {
		t.Fatalf("an unknown dataset in a set: %v %+v", err, res)
	}
	if out := roundTrip(t, res.App, env, Options{}); !strings.Contains(string(out), "id: kb-9") {
		t.Fatalf("an unmapped dataset exported as\n%s", out)
	}
	if e := importErr(t, unknown, env, Options{ModelFallback: "openai:gpt-4o-mini", Datasets: map[string]string{"kb-9": "nowhere"}}); len(e.Problems) != 1 ||
		e.Problems[0].Path != "agent_packages.agent_1.soul.knowledge.sets[0].datasets[0].id" {
		t.Fatalf("a mapping to a knowledge base that does not exist: %v", e)
	}
	if e := importErr(t, strings.Replace(bare, "soul: {schema_version: 1}", "soul: {schema_version: 2}", 1), env, Options{ModelFallback: "openai:gpt-4o-mini"}); len(e.Problems) != 1 ||
		!strings.Contains(e.Error(), "agent soul schema version 2 is not supported") {
		t.Fatalf("a newer soul: %v", e)
	}
}

// TestExportChatflows exports the example Chatflows (docs/examples, conformance/testdata): the
// export imports back to the same app (graph, features, environment and conversation
// variables), round-trips byte for byte and loses nothing of the file but the references an
// import rewrites.
func TestExportChatflows(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pattern := range []string{
		filepath.Join("..", "..", "..", "docs", "examples", "chatflow-*.yml"),
		filepath.Join("..", "..", "..", "conformance", "testdata", "chatflow-*.yml"),
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 7 {
		t.Fatalf("found %d example Chatflows", len(files))
	}
	env := testEnv()
	env.Tool = builtinTool
	opts := Options{NodeTypes: nodes.Registry(nodes.Deps{}).Supports, Lenient: true, ModelFallback: "openai:gpt-4o-mini"}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			data := read(t, path)
			res, err := Import(data, env, opts)
			if err != nil {
				t.Fatal(err)
			}
			out := roundTrip(t, res.App, env, opts)
			for _, lost := range lostValues(t, data, out) {
				t.Errorf("the export lost %s", lost)
			}
			back, err := Import(out, env, opts)
			if err != nil {
				t.Fatal(err)
			}
			a, b := res.App, back.App
			// An empty list of file types or methods is written as no list.
			for _, l := range []*[]string{&a.Features.FileUpload.AllowedFileTypes, &a.Features.FileUpload.AllowedFileExtensions,
				&a.Features.FileUpload.AllowedUploadMethods, &a.Features.FileUpload.Image.TransferMethods} {
				if len(*l) == 0 {
					*l = nil
				}
			}
			if !reflect.DeepEqual(a.Workflow, b.Workflow) || !reflect.DeepEqual(a.Features, b.Features) ||
				!reflect.DeepEqual(a.UserInputForm, b.UserInputForm) || a.OpeningStatement != b.OpeningStatement ||
				!slices.Equal(a.SuggestedQuestions, b.SuggestedQuestions) || a.SuggestedQuestionsAfterAnswer != b.SuggestedQuestionsAfterAnswer {
				t.Fatalf("the export read back as another app:\n%+v\n%+v", a, b)
			}
			if a.Workflow.ConversationVariables == nil && strings.Contains(string(data), "conversation_variables: [{") {
				t.Fatal("conversation variables were not read")
			}
		})
	}
	if _, err := Export(&apps.App{Name: "flow", Mode: apps.ModeAdvancedChat}, env); err == nil {
		t.Fatal("exported a Chatflow with no graph")
	}
}

// TestUnmappedNodeDatasets: the knowledge-retrieval nodes of public Chatflow and Workflow exports
// name datasets of their authors' workspaces. They import unmapped, as Dify imports them: the
// node retrieves from the knowledge bases that resolved (here none), the app lists the
// references, and the export writes them back into the node's dataset_ids.
func TestUnmappedNodeDatasets(t *testing.T) {
	t.Parallel()
	env := testEnv()
	env.Tool = builtinTool
	opts := Options{ModelFallback: "openai:gpt-4o-mini", NodeTypes: nodes.Registry(nodes.Deps{}).Supports, Lenient: true}
	checked := 0
	for _, name := range []string{"advanced-chat/amypg-contextual-rag.yml", "advanced-chat/svcvit-thinking-assistant.yml",
		"workflow/svcvit-document-chat-template.yml", "workflow/svcvit-intent-reply.yml"} {
		data := read(t, filepath.Join("testdata", "public", name))
		res, err := Import(data, env, opts)
		if err != nil {
			t.Logf("%s does not import: %v", name, err)
			continue
		}
		var want []string
		for _, n := range list(res.App.Workflow.Graph["nodes"]) {
			d, _ := n.(map[string]any)["data"].(map[string]any)
			if d["type"] != "knowledge-retrieval" {
				continue
			}
			if len(list(d["dataset_ids"])) != 0 || len(list(d[unmappedDatasetIDs])) == 0 {
				t.Fatalf("%s: node data %v", name, d)
			}
			for _, id := range list(d[unmappedDatasetIDs]) {
				want = append(want, id.(string))
			}
		}
		if len(want) == 0 || !slices.Equal(slices.Compact(slices.Sorted(slices.Values(want))), slices.Sorted(slices.Values(res.App.UnmappedDatasets))) {
			t.Fatalf("%s: the nodes hold %v, the app lists %v", name, want, res.App.UnmappedDatasets)
		}
		out := roundTrip(t, res.App, env, Options{NodeTypes: opts.NodeTypes, Lenient: true})
		if strings.Contains(string(out), unmappedDatasetIDs) {
			t.Fatalf("%s: the export shows Parley's key", name)
		}
		for _, id := range want {
			if !strings.Contains(string(out), id) {
				t.Fatalf("%s: the export lost dataset %s", name, id)
			}
		}
		checked++
	}
	if checked < 2 {
		t.Fatalf("only %d public files with knowledge-retrieval nodes imported", checked)
	}
}
