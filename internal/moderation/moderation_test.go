package moderation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
)

func keywordsRule(kw string, in, out bool) apps.SensitiveWordAvoidance {
	return apps.SensitiveWordAvoidance{Enabled: true, Type: TypeKeywords, Config: map[string]any{
		"keywords":       kw,
		"inputs_config":  map[string]any{"enabled": in, "preset_response": "In preset."},
		"outputs_config": map[string]any{"enabled": out, "preset_response": "Out preset."},
	}}
}

func TestParse(t *testing.T) {
	t.Parallel()
	if r, err := Parse(apps.SensitiveWordAvoidance{Type: TypeAPI}); r != nil || err != nil {
		t.Fatalf("disabled: %v %v", r, err)
	}
	r, err := Parse(keywordsRule("bad\n\nWorse \n", true, false))
	if err != nil {
		t.Fatal(err)
	}
	// As in Dify, lines are kept as written and empty ones dropped.
	if strings.Join(r.Keywords, "|") != "bad|Worse " || !r.Inputs.Enabled || r.Outputs.Enabled || r.Inputs.PresetResponse != "In preset." {
		t.Fatalf("rule %+v", r)
	}
	// 100 rows and 10000 characters are the limits; 99 characters of preset are fine.
	ok := keywordsRule(strings.Repeat("ab\n", 99)+"ab", true, true)
	ok.Config["inputs_config"] = map[string]any{"enabled": true, "preset_response": strings.Repeat("é", 100)}
	if _, err := Parse(ok); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		s    apps.SensitiveWordAvoidance
		want string
	}{
		"api":          {apps.SensitiveWordAvoidance{Enabled: true, Type: TypeAPI}, "Parley does not have"},
		"101 rows":     {keywordsRule(strings.Repeat("a\n", 100)+"a", true, false), "rows"},
		"long":         {keywordsRule(strings.Repeat("a", 10001), true, false), "less than 10000"},
		"no keywords":  {keywordsRule("", true, false), "keywords is required"},
		"none enabled": {keywordsRule("a", false, false), "at least one"},
		"bad side":     {apps.SensitiveWordAvoidance{Enabled: true, Type: TypeOpenAI, Config: map[string]any{"inputs_config": "on"}}, "must be a dict"},
	} {
		if _, err := Parse(tc.s); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// TestKeywords: Dify's match — each keyword as a substring of each value, ignoring case, the
// query included; each side only when enabled.
func TestKeywords(t *testing.T) {
	t.Parallel()
	r, err := Parse(keywordsRule("Bad\nrisky word\n暴力", true, true))
	if err != nil {
		t.Fatal(err)
	}
	c := Keywords(r)
	ctx := context.Background()
	for _, tc := range []struct {
		inputs map[string]any
		query  string
		want   bool
	}{
		{nil, "a good day", false},
		{nil, "a BAD day", true},
		{nil, "badge", true},
		{nil, "RISKY WORDS", true},
		{nil, "risky, word", false},
		{nil, "", false},
		{map[string]any{"topic": "fine"}, "fine", false},
		{map[string]any{"topic": "very bad"}, "fine", true},
		{map[string]any{"n": 3, "tags": []any{"ok", "暴力"}}, "fine", true},
		{map[string]any{"n": nil}, "fine", false},
	} {
		res, err := c.CheckInputs(ctx, tc.inputs, tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if res.Flagged != tc.want || (res.Flagged && res.Answer != "In preset.") || (!res.Flagged && res.Answer != "") {
			t.Errorf("inputs %v query %q: %+v, want flagged %v", tc.inputs, tc.query, res, tc.want)
		}
	}
	if res, _ := c.CheckOutput(ctx, "That is BaD."); !res.Flagged || res.Answer != "Out preset." {
		t.Errorf("output %+v", res)
	}
	if res, _ := c.CheckOutput(ctx, "That is fine."); res.Flagged {
		t.Errorf("output %+v", res)
	}
	// A side that is off never flags.
	r.Outputs.Enabled = false
	if res, _ := Keywords(r).CheckOutput(ctx, "bad"); res.Flagged {
		t.Errorf("outputs off: %+v", res)
	}
}

// openAIService is a Service over a fake OpenAI-compatible upstream with one moderation model.
func openAIService(t *testing.T, srv *openaitest.Server, maxChunks int) *Service {
	t.Helper()
	env := map[string]string{"KEY": srv.APIKey()}
	cat := models.NewCatalog([]config.Provider{{
		Name: "openai", BaseURL: srv.URL(), APIKeyEnv: "KEY", RequiresAPIKey: true,
		Models: []config.Model{
			{Name: "gpt-4o-mini", Type: config.ModelTypeLLM, Enabled: true, ContextSize: 1000},
			{Name: openaitest.DefaultModerationModel, Type: config.ModelTypeModeration, Enabled: true, MaxChunks: maxChunks},
		},
	}}, func(k string) string { return env[k] })
	return New(cat, registry.New(cat.APIKey))
}

func openAIRule() apps.SensitiveWordAvoidance {
	return apps.SensitiveWordAvoidance{Enabled: true, Type: TypeOpenAI, Config: map[string]any{
		"inputs_config":  map[string]any{"enabled": true, "preset_response": "In preset."},
		"outputs_config": map[string]any{"enabled": true, "preset_response": "Out preset."},
	}}
}

// TestOpenAI asks a real loopback /moderations server: flagged text gets the preset, long text
// is cut into 2000-character pieces sent max_chunks at a time, and a provider failure is a
// *providers.Error (the caller decides what it means).
func TestOpenAI(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer()
	t.Cleanup(srv.Close)
	srv.On("forbidden-topic", openaitest.Reply{Flagged: true})
	srv.On("upstream-breaks", openaitest.Reply{Status: 500, ErrorMessage: "moderation is down"})
	svc := openAIService(t, srv, 2)
	c, err := svc.For(&apps.App{Features: apps.Features{SensitiveWordAvoidance: openAIRule()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res, err := c.CheckInputs(ctx, map[string]any{"b": "second", "a": "first"}, "all fine")
	if err != nil || res.Flagged {
		t.Fatalf("clean input: %+v %v", res, err)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if !strings.HasSuffix(last.Path, "/v1/moderations") || last.Model != openaitest.DefaultModerationModel ||
		strings.Join(last.Input, "|") != "first\nsecond\nall fine" || last.Header.Get("Authorization") != "Bearer "+srv.APIKey() {
		t.Fatalf("request %s %s %q", last.Path, last.Model, last.Input)
	}
	if res, err := c.CheckInputs(ctx, map[string]any{"topic": "a forbidden-topic"}, "hi"); err != nil || !res.Flagged || res.Answer != "In preset." {
		t.Fatalf("flagged input: %+v %v", res, err)
	}

	// 5 pieces, 2 per request: the flagged third piece ends the checks after two requests.
	before := len(srv.Requests())
	text := strings.Repeat("a", 4000) + "forbidden-topic" + strings.Repeat("b", 5985) + strings.Repeat("c", 2000)
	res, err = c.CheckOutput(ctx, text)
	if err != nil || !res.Flagged || res.Answer != "Out preset." {
		t.Fatalf("flagged output: %+v %v", res, err)
	}
	reqs = srv.Requests()[before:]
	if len(reqs) != 2 || len(reqs[0].Input) != 2 || len(reqs[1].Input) != 2 || len([]rune(reqs[0].Input[0])) != MaxCharactersPerChunk {
		t.Fatalf("%d requests", len(reqs))
	}
	if res, err := c.CheckOutput(ctx, ""); err != nil || res.Flagged {
		t.Fatalf("empty output: %+v %v", res, err)
	}
	if len(srv.Requests()) != before+2 {
		t.Fatal("empty text was sent")
	}

	_, err = c.CheckOutput(ctx, "upstream-breaks here")
	var perr *providers.Error
	if !errors.As(err, &perr) || perr.StatusCode != 500 || !strings.Contains(perr.Message, "moderation is down") {
		t.Fatalf("provider failure: %v", err)
	}
}

// TestOpenAINoModel: without a moderation model in the config the check fails as a provider
// that is not set up.
func TestOpenAINoModel(t *testing.T) {
	t.Parallel()
	cat := models.NewCatalog(nil, nil)
	c, err := New(cat, registry.New(cat.APIKey)).For(&apps.App{Features: apps.Features{SensitiveWordAvoidance: openAIRule()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckInputs(context.Background(), nil, "hello"); !errors.Is(err, models.ErrProviderNotConfigured) {
		t.Fatalf("err %v", err)
	}
}
