package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// validBase is a minimal valid file; error cases append to it or build on
// its parts.
const validBase = validProviders + validKnowledgeBases + validApps

const validProviders = `
providers:
  - name: openai
    base_url: https://api.example.com/v1/
    api_key_env: OPENAI_API_KEY
    models:
      - {name: gpt, type: llm, context_size: 1000}
      - {name: emb, type: text-embedding, context_size: 8191, max_chunks: 32}
      - {name: old, type: llm, context_size: 1000, enabled: false}
  - name: local
    base_url: http://127.0.0.1:11434/v1
    requires_api_key: false
    models:
      - {name: llama, type: llm, context_size: 8192, mode: completion}
`

const validKnowledgeBases = `knowledge_bases:
  - name: handbook
    embedding: {provider: openai, model: emb}
`

const validApps = `apps:
  - name: bot
    mode: chat
    model: {provider: openai, name: gpt}
    knowledge_bases: [handbook]
`

func TestExpandString(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{"A": "alpha", "EMPTY": "", "TRICKY": "p@ss:w0rd#${B}$$"})
	tests := map[string]string{
		"plain":                 "plain",
		"${A}":                  "alpha",
		"x-${A}-y":              "x-alpha-y",
		"${MISSING}":            "",
		"${MISSING:-def}":       "def",
		"${EMPTY:-def}":         "def",
		"${A:-def}":             "alpha",
		"${MISSING:-}":          "",
		"${MISSING:-a:-b}":      "a:-b",
		"${MISSING:-http://x/}": "http://x/",
		"$$":                    "$",
		"$${A}":                 "${A}",
		"cost $5":               "cost $5",
		"trailing $":            "trailing $",
		"$A":                    "$A",
		"${TRICKY}":             "p@ss:w0rd#${B}$$",
		"${A}${A}":              "alphaalpha",
	}
	for in, want := range tests {
		got, err := expandString(in, env)
		if err != nil || got != want {
			t.Errorf("expandString(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${A", "${}", "${1A}", "${A-B}", "${A:def}"} {
		if got, err := expandString(in, env); err == nil {
			t.Errorf("expandString(%q) = %q, want error", in, got)
		}
	}
}

func TestSampleConfig(t *testing.T) {
	t.Parallel()
	f, err := LoadFile("", envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := f.Provider("openai")
	if !ok || p.BaseURL != "https://api.openai.com/v1" || p.APIKeyEnv != "OPENAI_API_KEY" || p.Label[LocaleEnUS] != "OpenAI" {
		t.Fatalf("openai provider: %+v", p)
	}
	if p.Configured(envMap(nil)) {
		t.Fatal("openai configured without a key")
	}
	if !p.Configured(envMap(map[string]string{"OPENAI_API_KEY": "sk-x"})) {
		t.Fatal("openai not configured with a key")
	}
	llm, ok := p.Model(ModelTypeLLM, "gpt-4o-mini")
	wantFeatures := []string{FeatureMultiToolCall, FeatureAgentThought, FeatureStreamToolCall, FeatureVision, FeatureStructuredOutput}
	if !ok || llm.ContextSize != 128000 || llm.Mode != ModelModeChat || !reflect.DeepEqual(llm.Features, wantFeatures) {
		t.Fatalf("gpt-4o-mini: %+v", llm)
	}
	if *llm.Pricing != (Pricing{Input: "0.15", Output: "0.60", Unit: "0.000001", Per: "1m", Currency: "USD"}) {
		t.Fatalf("gpt-4o-mini pricing: %+v", *llm.Pricing)
	}
	emb, ok := p.Model(ModelTypeTextEmbedding, "text-embedding-3-small")
	if !ok || emb.ContextSize != 8191 || emb.MaxChunks != 32 || emb.Pricing.Input != "0.02" || emb.Pricing.Unit != "0.000001" {
		t.Fatalf("text-embedding-3-small: %+v", emb)
	}
	app, ok := f.App("chatbot")
	if !ok || app.Mode != AppModeChat || app.Model.Name != "gpt-4o-mini" || app.PrePrompt == "" ||
		app.OpeningStatement == "" || len(app.UserInputForm) != 1 || app.UserInputForm[0].Type != InputText || app.UserInputForm[0].Required {
		t.Fatalf("chatbot app: %+v", app)
	}

	writer, ok := f.App("writer")
	if !ok || writer.Mode != AppModeCompletion || writer.Model.Name != "gpt-4o-mini" || writer.PrePrompt == "" ||
		len(writer.UserInputForm) != 2 || writer.OpeningStatement != "" {
		t.Fatalf("writer app: %+v", writer)
	}

	f, err = LoadFile("", envMap(map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:9999/v1"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Providers[0].BaseURL; got != "http://127.0.0.1:9999/v1" {
		t.Fatalf("OPENAI_BASE_URL not applied: %q", got)
	}
}

func TestLoadFileFromDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "parley.yaml")
	if err := os.WriteFile(path, []byte(validBase), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFile(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Providers) != 2 || len(f.Apps) != 1 {
		t.Fatalf("unexpected file: %+v", f)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml"), envMap(nil)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("apps: [{name: x}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path, envMap(nil)); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error should name the file: %v", err)
	}
}

func TestParseFileDefaults(t *testing.T) {
	t.Parallel()
	f, err := ParseFile([]byte(validBase), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if f.Workspace.Name != DefaultWorkspaceName {
		t.Errorf("workspace name %q", f.Workspace.Name)
	}
	openai, local := f.Providers[0], f.Providers[1]
	if openai.Type != ProviderTypeOpenAICompatible || !openai.RequiresAPIKey || openai.Timeout != DefaultProviderTimeout {
		t.Errorf("provider defaults: %+v", openai)
	}
	if openai.BaseURL != "https://api.example.com/v1" {
		t.Errorf("trailing slash kept: %q", openai.BaseURL)
	}
	if !reflect.DeepEqual(openai.Label, I18n{LocaleEnUS: "openai", LocaleZhHans: "openai"}) {
		t.Errorf("label fallback: %v", openai.Label)
	}
	if openai.IconSmall == nil || len(openai.IconSmall) != 0 || openai.IconSmallDark != nil {
		t.Errorf("icons: %#v %#v", openai.IconSmall, openai.IconSmallDark)
	}
	if local.RequiresAPIKey || !local.Configured(envMap(nil)) {
		t.Errorf("local provider should need no key: %+v", local)
	}
	gpt := openai.Models[0]
	if !gpt.Enabled || gpt.Mode != ModelModeChat || gpt.Features != nil || gpt.Pricing != nil {
		t.Errorf("model defaults: %+v", gpt)
	}
	if !reflect.DeepEqual(gpt.Label, I18n{LocaleEnUS: "gpt", LocaleZhHans: "gpt"}) {
		t.Errorf("model label: %v", gpt.Label)
	}
	if openai.Models[2].Enabled {
		t.Error("enabled: false ignored")
	}
	if local.Models[0].Mode != ModelModeCompletion {
		t.Errorf("mode: %q", local.Models[0].Mode)
	}
	app := f.Apps[0]
	if !app.Enabled || app.Model.Parameters == nil {
		t.Errorf("app defaults: %+v", app)
	}
}

func TestParseFileFeatures(t *testing.T) {
	t.Parallel()
	env := envMap(map[string]string{
		"SECRET_URL": "https://h.example/v1?sig=a#b: c, [d]",
		"TEMP":       "0.3",
		"NAME":       "${NOT_EXPANDED}",
	})
	doc := `
workspace: {name: "${WS:-Acme}"}
providers:
  - name: p
    label: {en_US: Pee, zh_Hans: 皮, ja_JP: ピー}
    icon_small: {en_US: "https://x/icon.svg"}
    icon_small_dark: {en_US: "https://x/dark.svg", zh_Hans: "https://x/dark-zh.svg"}
    base_url: ${SECRET_URL}
    api_key_env: P_KEY
    timeout: ${PT:-2m}
    call_timeout: 5m
    models:
      - name: m
        label: Model M
        type: llm
        context_size: 4096
        max_output_tokens: 1024
        features: [tool-call, vision]
        pricing: {input: 2.50, output: '10.00', unit: '0.000001', currency: rmb}
      - name: e
        type: text-embedding
        context_size: 512
        pricing: {input: "0.1", per: 1K}
      - {name: r, type: rerank}
      - {name: t, type: tts, deprecated: true}
apps:
  - &base
    name: a1
    mode: chat
    model: {provider: p, name: m, parameters: {temperature: 0.5, stop: ["$$"], note: "${NAME}", nested: {t: "${TEMP}"}}}
    user_input_form:
      - {type: select, variable: tone, options: [formal, casual], default: casual}
      - {type: number, variable: n, default: 3}
      - {type: checkbox, variable: ok, default: true}
      - {type: paragraph, variable: notes, label: Notes, required: true, max_length: 10, default: short}
  - <<: *base
    name: a2
    mode: workflow
    max_active_requests: 4
`
	f, err := ParseFile([]byte(doc), env)
	if err != nil {
		t.Fatal(err)
	}
	if f.Workspace.Name != "Acme" {
		t.Errorf("workspace: %q", f.Workspace.Name)
	}
	p := f.Providers[0]
	if p.BaseURL != "https://h.example/v1?sig=a#b: c, [d]" {
		t.Errorf("special characters mangled: %q", p.BaseURL)
	}
	if !reflect.DeepEqual(p.Label, I18n{LocaleEnUS: "Pee", LocaleZhHans: "皮", "ja_JP": "ピー"}) {
		t.Errorf("label: %v", p.Label)
	}
	if !reflect.DeepEqual(p.IconSmall, I18n{LocaleEnUS: "https://x/icon.svg", LocaleZhHans: "https://x/icon.svg"}) {
		t.Errorf("icon_small: %v", p.IconSmall)
	}
	if p.IconSmallDark[LocaleZhHans] != "https://x/dark-zh.svg" {
		t.Errorf("icon_small_dark: %v", p.IconSmallDark)
	}
	if p.Timeout != 2*time.Minute || p.CallTimeout != 5*time.Minute {
		t.Errorf("timeouts: %v, %v", p.Timeout, p.CallTimeout)
	}
	m := p.Models[0]
	if !reflect.DeepEqual(m.Label, I18n{LocaleEnUS: "Model M", LocaleZhHans: "Model M"}) || m.MaxOutputTokens != 1024 {
		t.Errorf("model: %+v", m)
	}
	if *m.Pricing != (Pricing{Input: "2.50", Output: "10.00", Unit: "0.000001", Currency: "RMB"}) {
		t.Errorf("pricing keeps the decimal text: %+v", *m.Pricing)
	}
	if e := p.Models[1].Pricing; e.Unit != "0.001" || e.Per != "1k" || e.Currency != "USD" || e.Output != "" {
		t.Errorf("per 1K: %+v", *e)
	}
	if !p.Models[3].Deprecated {
		t.Error("deprecated lost")
	}
	a1, a2 := f.Apps[0], f.Apps[1]
	params := a1.Model.Parameters
	if params["temperature"] != 0.5 || params["note"] != "${NOT_EXPANDED}" ||
		!reflect.DeepEqual(params["stop"], []any{"$"}) || !reflect.DeepEqual(params["nested"], map[string]any{"t": "0.3"}) {
		t.Errorf("parameters: %#v", params)
	}
	if in := a1.UserInputForm; in[0].Default != "casual" || in[1].Default != "3" || in[2].Default != "true" || in[3].Label != "Notes" || in[0].Label != "tone" {
		t.Errorf("inputs: %+v", in)
	}
	if a2.Mode != AppModeWorkflow || a2.Model.Name != "m" || a2.MaxActiveRequests != 4 || len(a2.UserInputForm) != 4 {
		t.Errorf("merged app: %+v", a2)
	}
}

func TestParseFileEmpty(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# nothing\n", "{}", "providers: []\napps:\n"} {
		f, err := ParseFile([]byte(doc), nil)
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if f.Workspace.Name != DefaultWorkspaceName || len(f.Providers) != 0 {
			t.Fatalf("%q: %+v", doc, f)
		}
	}
}

// TestParseFileErrors checks that every mistake is reported with the path
// of the offending value.
func TestParseFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string // appended to validBase unless it starts with "!"
		env  map[string]string
		want string
	}{
		{"yaml syntax", "!providers: [", nil, "yaml"},
		{"two documents", "!apps: []\n---\napps: []\n", nil, "exactly one YAML document"},
		{"top level list", "!- a\n", nil, "expected a mapping"},
		{"unknown top key", "extra: 1\n", nil, "extra: unknown key (line"},
		{"unknown nested key", "!providers:\n  - name: p\n    base_url: http://x\n    requires_api_key: false\n    models:\n      - {name: m, type: llm, contxt_size: 5}\n", nil,
			"providers[0].models[0].contxt_size: unknown key"},
		{"api key in file", "!providers:\n  - {name: p, base_url: http://x, api_key: sk-123}\n", nil, "providers[0].api_key: unknown key"},
		{"duplicate key", "!workspace: {name: a, name: b}\n", nil, "already defined"},
		{"wrong kind list", "!providers: {name: p}\n", nil, "providers: expected a list"},
		{"wrong kind int", "!providers:\n  - {name: p, base_url: http://x, requires_api_key: false, models: [{name: m, type: llm, context_size: big}]}\n", nil,
			"providers[0].models[0].context_size: expected an integer"},
		{"wrong kind bool", "!providers:\n  - {name: p, base_url: http://x, requires_api_key: nope}\n", nil, "providers[0].requires_api_key: expected true or false"},
		{"expanded bool is a string", "!providers:\n  - {name: p, base_url: http://x, requires_api_key: '${X}'}\n", map[string]string{"X": "false"},
			"providers[0].requires_api_key: expected true or false"},
		{"bad duration", "!providers:\n  - {name: p, base_url: http://x, requires_api_key: false, timeout: 60}\n", nil, "providers[0].timeout: expected a duration"},
		{"zero duration", "!providers:\n  - {name: p, base_url: http://x, requires_api_key: false, timeout: 0s}\n", nil, "providers[0].timeout: must be positive"},
		{"negative call cap", "!providers:\n  - {name: p, base_url: http://x, requires_api_key: false, call_timeout: -1s}\n", nil, "providers[0].call_timeout: must not be negative"},
		{"bad expansion", "!workspace: {name: '${OOPS'}\n", nil, `workspace.name: unterminated "${"`},
		{"provider name missing", "!providers:\n  - {base_url: http://x, requires_api_key: false}\n", nil, "providers[0].name: required"},
		{"provider name invalid", "!providers:\n  - {name: 'a b', base_url: http://x, requires_api_key: false}\n", nil, "providers[0].name:"},
		{"provider duplicate", "!providers:\n  - {name: a, base_url: http://x, requires_api_key: false}\n  - {name: a, base_url: http://x, requires_api_key: false}\n", nil,
			`providers[1].name: duplicate provider "a"`},
		{"provider type", "!providers:\n  - {name: a, type: anthropic, base_url: http://x, requires_api_key: false}\n", nil, `providers[0].type: unsupported provider type "anthropic"`},
		{"base url missing", "!providers:\n  - {name: a, requires_api_key: false}\n", nil, "providers[0].base_url: required"},
		{"base url expands empty", "!providers:\n  - {name: a, base_url: '${NOPE}', requires_api_key: false}\n", nil, "providers[0].base_url: required"},
		{"base url scheme", "!providers:\n  - {name: a, base_url: 'ftp://x', requires_api_key: false}\n", nil, "providers[0].base_url:"},
		{"base url no host", "!providers:\n  - {name: a, base_url: 'http://', requires_api_key: false}\n", nil, "providers[0].base_url:"},
		{"api key env missing", "!providers:\n  - {name: a, base_url: 'http://x'}\n", nil, "providers[0].api_key_env: required unless requires_api_key is false"},
		{"api key env is a key", "!providers:\n  - {name: a, base_url: 'http://x', api_key_env: sk-abc}\n", nil, "providers[0].api_key_env:"},
		{"icon without en_US", "!providers:\n  - {name: a, base_url: 'http://x', requires_api_key: false, icon_small: {zh_Hans: 'http://x/i.png'}}\n", nil,
			"providers[0].icon_small.en_US: required"},
		{"icon not a url", "!providers:\n  - {name: a, base_url: 'http://x', requires_api_key: false, icon_small_dark: {en_US: 'icon.png'}}\n", nil,
			"providers[0].icon_small_dark.en_US:"},
		{"model type missing", modelDoc("{name: m}"), nil, "providers[0].models[0].type: required"},
		{"model type unknown", modelDoc("{name: m, type: chat}"), nil, `providers[0].models[0].type: unknown model type "chat"`},
		{"model name missing", modelDoc("{type: rerank}"), nil, "providers[0].models[0].name: required"},
		{"model duplicate", modelDoc("{name: m, type: rerank}\n      - {name: m, type: rerank}"), nil, `providers[0].models[1].name: duplicate rerank model "m"`},
		{"same name other type ok", modelDoc("{name: m, type: rerank}\n      - {name: m, type: tts}\n      - {name: m, type: moderation, context_size: 1}\n      - {name: x, type: speech2text, context_size: -1}"), nil,
			"providers[0].models[3].context_size: must not be negative"},
		{"llm context missing", modelDoc("{name: m, type: llm}"), nil, "providers[0].models[0].context_size: required for llm models"},
		{"embedding context missing", modelDoc("{name: m, type: text-embedding}"), nil, "providers[0].models[0].context_size: required for text-embedding"},
		{"max chunks on llm", modelDoc("{name: m, type: llm, context_size: 5, max_chunks: 2}"), nil, "providers[0].models[0].max_chunks: only applies to text-embedding"},
		{"mode bad", modelDoc("{name: m, type: llm, context_size: 5, mode: edit}"), nil, "providers[0].models[0].mode: must be chat or completion"},
		{"mode on embedding", modelDoc("{name: m, type: text-embedding, context_size: 5, mode: chat}"), nil, "providers[0].models[0].mode: only applies to llm"},
		{"max output too big", modelDoc("{name: m, type: llm, context_size: 5, max_output_tokens: 6}"), nil, "providers[0].models[0].max_output_tokens: 6 exceeds context_size 5"},
		{"max output on rerank", modelDoc("{name: m, type: rerank, max_output_tokens: 6}"), nil, "providers[0].models[0].max_output_tokens: only applies to llm"},
		{"feature unknown", modelDoc("{name: m, type: llm, context_size: 5, features: [vision, telepathy]}"), nil, `providers[0].models[0].features[1]: unknown feature "telepathy"`},
		{"feature duplicate", modelDoc("{name: m, type: llm, context_size: 5, features: [vision, vision]}"), nil, `providers[0].models[0].features[1]: duplicate feature`},
		{"price not decimal", modelDoc("{name: m, type: rerank, pricing: {input: abc, per: 1m}}"), nil, `providers[0].models[0].pricing.input: "abc" is not a decimal`},
		{"price negative", modelDoc("{name: m, type: rerank, pricing: {input: '1', output: -2, per: 1m}}"), nil, `providers[0].models[0].pricing.output: "-2" is not a decimal`},
		{"price exponent", modelDoc("{name: m, type: rerank, pricing: {input: 1e-6, per: 1m}}"), nil, `providers[0].models[0].pricing.input: "1e-6" is not a decimal`},
		{"price input missing", modelDoc("{name: m, type: rerank, pricing: {output: '1', per: 1m}}"), nil, "providers[0].models[0].pricing.input: required"},
		{"price unit missing", modelDoc("{name: m, type: rerank, pricing: {input: '1'}}"), nil, "providers[0].models[0].pricing.unit: required"},
		{"price unit zero", modelDoc("{name: m, type: rerank, pricing: {input: '1', unit: '0.000'}}"), nil, "providers[0].models[0].pricing.unit: must not be zero"},
		{"price unit and per", modelDoc("{name: m, type: rerank, pricing: {input: '1', unit: '0.001', per: 1k}}"), nil, "providers[0].models[0].pricing.per: set either unit or per"},
		{"price per bad", modelDoc("{name: m, type: rerank, pricing: {input: '1', per: 1b}}"), nil, "providers[0].models[0].pricing.per: must be 1k or 1m"},
		{"price currency", modelDoc("{name: m, type: rerank, pricing: {input: '1', per: 1k, currency: dollars}}"), nil, "providers[0].models[0].pricing.currency:"},
		{"app name missing", "!apps:\n  - {mode: workflow}\n", nil, "apps[0].name: required"},
		{"app name invalid", "!apps:\n  - {name: My_App, mode: workflow}\n", nil, "apps[0].name:"},
		{"app duplicate", "!apps:\n  - {name: a, mode: workflow}\n  - {name: a, mode: workflow}\n", nil, `apps[1].name: duplicate app "a"`},
		{"app mode missing", "!apps:\n  - {name: a}\n", nil, "apps[0].mode: required"},
		{"app mode unknown", "!apps:\n  - {name: a, mode: chatbot}\n", nil, `apps[0].mode: unknown app mode "chatbot"`},
		{"app model required", "!apps:\n  - {name: a, mode: completion}\n", nil, "apps[0].model: required for completion apps"},
		{"app model provider unknown", "!apps:\n  - {name: a, mode: chat, model: {provider: nope, name: gpt}}\n", nil, `apps[0].model.provider: unknown provider "nope"`},
		{"app model name missing", "!apps:\n  - {name: a, mode: chat, model: {provider: openai}}\n", nil, "apps[0].model.name: required"},
		{"app model not llm", appDoc("model: {provider: openai, name: emb}"), nil, `apps[0].model.name: provider "openai" declares no llm model "emb"`},
		{"app model disabled", appDoc("model: {provider: openai, name: old}"), nil, `apps[0].model.name: llm model "old" of provider "openai" is disabled`},
		{"app kb unknown", appDoc("model: {provider: openai, name: gpt}, knowledge_bases: [nope]"), nil, `apps[0].knowledge_bases[0]: unknown knowledge base "nope"`},
		{"app kb duplicate", appDoc("model: {provider: openai, name: gpt}, knowledge_bases: [handbook, handbook]"), nil, `apps[0].knowledge_bases[1]: duplicate`},
		{"app dataset query on chat", appDoc("model: {provider: openai, name: gpt}, dataset_query_variable: q"), nil, "apps[0].dataset_query_variable: only applies to completion apps"},
		{"app dataset query unknown", completionDoc("dataset_query_variable: q, user_input_form: [{type: text-input, variable: topic}]"), nil, `apps[0].dataset_query_variable: "q" is not a variable of user_input_form`},
		{"app dataset query missing", completionDoc("knowledge_bases: [handbook]"), nil, "apps[0].dataset_query_variable: required for completion apps with knowledge bases"},
		{"app max active", appDoc("model: {provider: openai, name: gpt}, max_active_requests: -1"), nil, "apps[0].max_active_requests: must not be negative"},
		{"app suggested empty", appDoc("model: {provider: openai, name: gpt}, suggested_questions: ['ok', ' ']"), nil, "apps[0].suggested_questions[1]: must not be empty"},
		{"input type", inputDoc("{type: date, variable: d}"), nil, `apps[0].user_input_form[0].type: unknown input type "date"`},
		{"input variable missing", inputDoc("{type: text-input}"), nil, "apps[0].user_input_form[0].variable: required"},
		{"input variable invalid", inputDoc("{type: text-input, variable: 'my var'}"), nil, "apps[0].user_input_form[0].variable:"},
		{"input variable duplicate", inputDoc("{type: text-input, variable: v}, {type: paragraph, variable: v}"), nil, `apps[0].user_input_form[1].variable: duplicate variable "v"`},
		{"input select no options", inputDoc("{type: select, variable: v}"), nil, "apps[0].user_input_form[0].options: required for select"},
		{"input select default", inputDoc("{type: select, variable: v, options: [a, b], default: c}"), nil, `apps[0].user_input_form[0].default: "c" is not one of the options`},
		{"input select duplicate option", inputDoc("{type: select, variable: v, options: [a, a]}"), nil, `apps[0].user_input_form[0].options[1]: duplicate option`},
		{"input options on text", inputDoc("{type: text-input, variable: v, options: [a]}"), nil, "apps[0].user_input_form[0].options: only applies to select"},
		{"input max length on number", inputDoc("{type: number, variable: v, max_length: 3}"), nil, "apps[0].user_input_form[0].max_length: only applies to text-input and paragraph"},
		{"input default too long", inputDoc("{type: text-input, variable: v, max_length: 3, default: abcd}"), nil, "apps[0].user_input_form[0].default: longer than max_length 3"},
		{"input number default", inputDoc("{type: number, variable: v, default: many}"), nil, `apps[0].user_input_form[0].default: "many" is not a number`},
		{"input checkbox default", inputDoc("{type: checkbox, variable: v, default: maybe}"), nil, `apps[0].user_input_form[0].default: "maybe" is not true or false`},
		{"kb name missing", kbDoc("{embedding: {provider: openai, model: emb}}"), nil, "knowledge_bases[0].name: required"},
		{"kb duplicate", kbDoc("{name: k, embedding: {provider: openai, model: emb}}, {name: k, embedding: {provider: openai, model: emb}}"), nil, `knowledge_bases[1].name: duplicate knowledge base "k"`},
		{"kb embedding half", kbDoc("{name: k, embedding: {model: emb}}"), nil, "knowledge_bases[0].embedding.provider: required"},
		{"kb embedding not embedding", kbDoc("{name: k, embedding: {provider: openai, model: gpt}}"), nil, `knowledge_bases[0].embedding.model: provider "openai" declares no text-embedding model "gpt"`},
		{"kb embedding provider", kbDoc("{name: k, embedding: {provider: x, model: emb}}"), nil, `knowledge_bases[0].embedding.provider: unknown provider "x"`},
		{"external api key in the file", extDoc("{name: w, endpoint: 'https://w.test', api_key_env: sk-abc}", ""), nil, `external_knowledge_apis[0].api_key_env: "sk-abc" is not an environment variable name`},
		{"external api no key", extDoc("{name: w, endpoint: 'https://w.test'}", ""), nil, "external_knowledge_apis[0].api_key_env: required"},
		{"external api endpoint", extDoc("{name: w, endpoint: 'ftp://w.test', api_key_env: K}", ""), nil, "external_knowledge_apis[0].endpoint:"},
		{"external api duplicate", extDoc("{name: w, endpoint: 'https://w.test', api_key_env: K}, {name: w, endpoint: 'https://v.test', api_key_env: K}", ""), nil, `external_knowledge_apis[1].name: duplicate external knowledge API "w"`},
		{"external kb unknown api", extDoc("{name: w, endpoint: 'https://w.test', api_key_env: K}", "{name: k, external: {api: v, knowledge_id: s}}"), nil, `knowledge_bases[0].external.api: unknown external knowledge API "v"`},
		{"external kb no id", extDoc("{name: w, endpoint: 'https://w.test', api_key_env: K}", "{name: k, external: {api: w}}"), nil, "knowledge_bases[0].external.knowledge_id: required"},
		{"external kb top_k", extDoc("{name: w, endpoint: 'https://w.test', api_key_env: K}", "{name: k, external: {api: w, knowledge_id: s, top_k: 101}}"), nil, "knowledge_bases[0].external.top_k"},
		{"external kb threshold", extDoc("{name: w, endpoint: 'https://w.test', api_key_env: K}", "{name: k, external: {api: w, knowledge_id: s, score_threshold: 2}}"), nil, "knowledge_bases[0].external.score_threshold"},
		{"external kb embedding", extDoc("{name: w, endpoint: 'https://w.test', api_key_env: K}", "{name: k, external: {api: w, knowledge_id: s}, embedding: {provider: openai, model: emb}}"), nil, "knowledge_bases[0].embedding: an external knowledge base has no embedding model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, ok := strings.CutPrefix(tt.doc, "!")
			if !ok {
				doc = validBase + tt.doc
			}
			_, err := ParseFile([]byte(doc), envMap(tt.env))
			if err == nil {
				t.Fatalf("ParseFile succeeded:\n%s", doc)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n%v\ndoes not contain %q", err, tt.want)
			}
		})
	}
}

// TestCompletionDatasetQuery: a completion app with knowledge bases names the input it searches
// them with.
func TestCompletionDatasetQuery(t *testing.T) {
	t.Parallel()
	doc := strings.TrimPrefix(completionDoc("knowledge_bases: [handbook], dataset_query_variable: topic, user_input_form: [{type: text-input, variable: topic}]"), "!")
	f, err := ParseFile([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := f.Apps[0]; a.Mode != AppModeCompletion || a.DatasetQueryVariable != "topic" {
		t.Fatalf("app %+v", a)
	}
}

func TestParseFileReportsAllErrors(t *testing.T) {
	t.Parallel()
	_, err := ParseFile([]byte("apps:\n  - {name: A, mode: x}\n  - {mode: chat}\n"), nil)
	if err == nil {
		t.Fatal("no error")
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("not a FieldError: %T", err)
	}
	for _, want := range []string{"apps[0].name", "apps[0].mode", "apps[1].name", "apps[1].model"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %s in\n%v", want, err)
		}
	}
}

func TestAliasesExpandOnce(t *testing.T) {
	t.Parallel()
	doc := "workspace: {name: &n '$${X}'}\napps:\n  - {name: a, mode: workflow, description: *n}\n"
	f, err := ParseFile([]byte(doc), envMap(map[string]string{"X": "boom"}))
	if err != nil {
		t.Fatal(err)
	}
	if f.Workspace.Name != "${X}" || f.Apps[0].Description != "${X}" {
		t.Fatalf("got %q and %q, want ${X} twice", f.Workspace.Name, f.Apps[0].Description)
	}
}

func TestProviderAPIKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		p          Provider
		env        map[string]string
		key        string
		configured bool
	}{
		{"key set", Provider{APIKeyEnv: "K", RequiresAPIKey: true}, map[string]string{"K": " sk-1\n"}, "sk-1", true},
		{"key unset", Provider{APIKeyEnv: "K", RequiresAPIKey: true}, nil, "", false},
		{"key blank", Provider{APIKeyEnv: "K", RequiresAPIKey: true}, map[string]string{"K": "  "}, "", false},
		{"no key needed", Provider{RequiresAPIKey: false}, nil, "", true},
		{"optional key", Provider{APIKeyEnv: "K"}, map[string]string{"K": "tok"}, "tok", true},
	}
	for _, tt := range tests {
		if got := tt.p.APIKey(envMap(tt.env)); got != tt.key {
			t.Errorf("%s: APIKey = %q, want %q", tt.name, got, tt.key)
		}
		if got := tt.p.Configured(envMap(tt.env)); got != tt.configured {
			t.Errorf("%s: Configured = %v, want %v", tt.name, got, tt.configured)
		}
	}
}

func TestI18nWithFallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   I18n
		want I18n
	}{
		{nil, I18n{LocaleEnUS: "n", LocaleZhHans: "n"}},
		{I18n{LocaleEnUS: "E"}, I18n{LocaleEnUS: "E", LocaleZhHans: "E"}},
		{I18n{LocaleZhHans: "Z"}, I18n{LocaleEnUS: "n", LocaleZhHans: "Z"}},
		{I18n{LocaleEnUS: " ", "de_DE": "D"}, I18n{LocaleEnUS: "n", LocaleZhHans: "n", "de_DE": "D"}},
	}
	for _, tt := range tests {
		if got := tt.in.WithFallback("n"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v.WithFallback = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func modelDoc(models string) string {
	return "!providers:\n  - name: p\n    base_url: http://x\n    requires_api_key: false\n    models:\n      - " + models + "\n"
}

func appDoc(rest string) string {
	return "!" + validProviders + validKnowledgeBases + "apps:\n  - {name: a, mode: chat, " + rest + "}\n"
}

func completionDoc(rest string) string {
	return "!" + validProviders + validKnowledgeBases + "apps:\n  - {name: a, mode: completion, model: {provider: openai, name: gpt}, " + rest + "}\n"
}

func inputDoc(items string) string {
	return appDoc("model: {provider: openai, name: gpt}, user_input_form: [" + items + "]")
}

func kbDoc(items string) string {
	return "!" + validProviders + "knowledge_bases: [" + items + "]\n"
}

func extDoc(apis, kbs string) string {
	return "!" + validProviders + "external_knowledge_apis: [" + apis + "]\nknowledge_bases: [" + kbs + "]\n"
}

// TestParseFileExternalKnowledge: external knowledge APIs and the external knowledge bases bound
// to them parse, the endpoint without its trailing slash.
func TestParseFileExternalKnowledge(t *testing.T) {
	t.Parallel()
	doc := strings.TrimPrefix(extDoc("{name: wiki, description: The wiki, endpoint: 'https://rag.test/api/', api_key_env: WIKI_KEY}",
		"{name: Wiki, description: Company wiki, external: {api: wiki, knowledge_id: space-1, top_k: 4, score_threshold: 0.5}}, {name: handbook}"), "!")
	f, err := ParseFile([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := f.ExternalKnowledgeAPI("wiki")
	if !ok || a != (ExternalKnowledgeAPI{Name: "wiki", Description: "The wiki", Endpoint: "https://rag.test/api", APIKeyEnv: "WIKI_KEY"}) {
		t.Fatalf("api %+v", a)
	}
	kb, _ := f.KnowledgeBase("Wiki")
	if x := kb.External; x == nil || x.API != "wiki" || x.KnowledgeID != "space-1" || x.TopK != 4 || x.ScoreThreshold == nil || *x.ScoreThreshold != 0.5 {
		t.Fatalf("knowledge base %+v", kb)
	}
	if kb, _ := f.KnowledgeBase("handbook"); kb.External != nil {
		t.Fatalf("a local knowledge base is external: %+v", kb)
	}
}

func TestParseFileSpeechFeatures(t *testing.T) {
	base := "providers: []\napps:\n  - name: talker\n    mode: advanced-chat\n"
	f, err := ParseFile([]byte(base+"    speech_to_text: {enabled: true}\n    text_to_speech: {enabled: true, voice: nova, language: en-US, auto_play: enabled}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := f.Apps[0]; !a.SpeechToText.Enabled || a.TextToSpeech != (AppTextToSpeech{Enabled: true, Voice: "nova", Language: "en-US", AutoPlay: "enabled"}) {
		t.Fatalf("parsed %+v %+v", a.SpeechToText, a.TextToSpeech)
	}
	if _, err := ParseFile([]byte(base+"    text_to_speech: {enabled: true, auto_play: yes}\n"), nil); err == nil || !strings.Contains(err.Error(), "apps[0].text_to_speech.auto_play") {
		t.Fatalf("auto_play yes: %v", err)
	}
}
