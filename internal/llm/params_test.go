package llm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tokens"
)

// TestUpstreamParams: completion parameters as exports carry them become what an
// OpenAI-compatible API accepts, as Dify sends them.
func TestUpstreamParams(t *testing.T) {
	for name, tc := range map[string]struct{ in, want map[string]any }{
		"empty stop list (YAML or JSON)": {map[string]any{"stop": []any{}, "temperature": 0.3}, map[string]any{"temperature": 0.3}},
		"empty stop list of strings":     {map[string]any{"stop": []string{}}, map[string]any{}},
		"empty stop text":                {map[string]any{"stop": ""}, map[string]any{}},
		"stop words kept":                {map[string]any{"stop": []any{"\nHuman:"}}, map[string]any{"stop": []any{"\nHuman:"}}},
		"nulls left out":                 {map[string]any{"top_p": nil, "presence_penalty": 0}, map[string]any{"presence_penalty": 0}},
		"others as given": {map[string]any{"max_tokens": 4096, "frequency_penalty": 0.5, "seed": float64(7), "logit_bias": map[string]any{"50256": -100}},
			map[string]any{"max_tokens": 4096, "frequency_penalty": 0.5, "seed": float64(7), "logit_bias": map[string]any{"50256": -100}}},
		"response_format type":         {map[string]any{"response_format": "json_object"}, map[string]any{"response_format": map[string]any{"type": "json_object"}}},
		"empty response_format":        {map[string]any{"response_format": "", "json_schema": "{}"}, map[string]any{}},
		"json_schema without a format": {map[string]any{"json_schema": `{"name":"x"}`}, map[string]any{}},
		"json_schema": {map[string]any{"response_format": "json_schema", "json_schema": `{"name":"answer","schema":{"type":"object"}}`},
			map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": map[string]any{"type": "object"}}}}},
		"response_format object as given": {map[string]any{"response_format": map[string]any{"type": "text"}}, map[string]any{"response_format": map[string]any{"type": "text"}}},
	} {
		got := tc.in
		upstreamParams(got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, want %#v", name, got, tc.want)
		}
	}
}

// TestParamsImported: an imported app's parameters (numbers as JSON gives them back from the
// store) are sent cleaned, without changing the app's own; without max_tokens the model's
// output cap is sent.
func TestParamsImported(t *testing.T) {
	spec := models.ModelSpec{ContextSize: 16385, MaxOutputTokens: 4096}
	own := map[string]any{"stop": []any{}, "max_tokens": float64(1000), "temperature": float64(0)}
	p := Params(own, spec)
	if !reflect.DeepEqual(p, map[string]any{"max_tokens": float64(1000), "temperature": float64(0)}) {
		t.Errorf("params %v", p)
	}
	if _, ok := own["stop"]; !ok {
		t.Error("the app's own parameters were changed")
	}
	delete(own, "max_tokens")
	if p := Params(own, spec); p["max_tokens"] != 4096 {
		t.Errorf("model's max output not used: %v", p)
	}
	if p := Params(nil, models.ModelSpec{}); p == nil || len(p) != 0 {
		t.Errorf("no parameters: %v", p)
	}
}

// TestFitReply: an answer budget that, with the prompt, overflows the context is lowered to what
// the prompt leaves (at least 16 tokens), as Dify does; one that fits is left alone.
func TestFitReply(t *testing.T) {
	prompt := []providers.Message{{Role: providers.RoleUser, Content: strings.Repeat("word ", 500)}}
	used := tokens.CountMessages(prompt)
	spec := models.ModelSpec{ContextSize: 4096}
	for _, tc := range []struct {
		max  any
		want any
	}{
		{float64(4096), 4096 - used},
		{4096, 4096 - used},
		{100, 100},
		{nil, nil},
	} {
		params := map[string]any{"temperature": 0.1}
		if tc.max != nil {
			params["max_tokens"] = tc.max
		}
		got := FitReply(params, spec, prompt)
		if got["max_tokens"] != tc.want || got["temperature"] != 0.1 {
			t.Errorf("max_tokens %v: %v, want %v", tc.max, got, tc.want)
		}
		if params["max_tokens"] != tc.max {
			t.Errorf("max_tokens %v: the app's parameters were changed", tc.max)
		}
	}
	if got := FitReply(map[string]any{"max_tokens": 10000}, models.ModelSpec{ContextSize: used + 5}, prompt); got["max_tokens"] != minReply {
		t.Errorf("no room left: %v", got)
	}
	if got := FitReply(map[string]any{"max_tokens": 10000}, models.ModelSpec{}, prompt); got["max_tokens"] != 10000 {
		t.Errorf("unknown context: %v", got)
	}
}

func TestWithImages(t *testing.T) {
	sys := func(s string) providers.Message { return providers.Message{Role: providers.RoleSystem, Content: s} }
	user := func(s string) providers.Message { return providers.Message{Role: providers.RoleUser, Content: s} }
	asst := func(s string) providers.Message { return providers.Message{Role: providers.RoleAssistant, Content: s} }
	img := providers.Part{Type: providers.PartImageURL}
	got := WithImages([]providers.Message{sys("S"), user("Q")}, []providers.Part{img})
	if len(got) != 2 || len(got[1].Parts) != 2 || got[1].Parts[0].Text != "Q" {
		t.Errorf("after a query: %+v", got)
	}
	got = WithImages([]providers.Message{sys("S"), asst("A")}, []providers.Part{img})
	if len(got) != 3 || got[2].Role != providers.RoleUser || len(got[2].Parts) != 2 || got[2].Parts[0].Text != "" {
		t.Errorf("without a query: %+v", got)
	}
	if got := WithImages(nil, []providers.Part{img}); len(got) != 1 || got[0].Role != providers.RoleUser {
		t.Errorf("empty prompt: %+v", got)
	}
}
