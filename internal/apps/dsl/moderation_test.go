package dsl

import (
	"strings"
	"testing"
)

// TestModerationProblems: an enabled sensitive_word_avoidance must be one Parley runs, with
// Dify's checks; api (Dify's API-based extension) is refused with the reason, and a valid rule
// imports without a "not run" note.
func TestModerationProblems(t *testing.T) {
	t.Parallel()
	with := func(swa string) string {
		return strings.Replace(chatBody, "completion_params: {}}", "completion_params: {}}\n  sensitive_word_avoidance: "+swa, 1)
	}
	for name, tc := range map[string]struct{ swa, want string }{
		"api": {"{enabled: true, type: api, config: {api_based_extension_id: x, inputs_config: {enabled: true}}}",
			"model_config.sensitive_word_avoidance: invalid moderation: type api calls a Dify API-based extension, which Parley does not have"},
		"no type":      {"{enabled: true, config: {}}", "sensitive_word_avoidance.type is required"},
		"unknown type": {"{enabled: true, type: regex, config: {}}", `type "regex" is not keywords, openai_moderation or api`},
		"nothing enabled": {"{enabled: true, type: keywords, config: {keywords: a, inputs_config: {enabled: false}}}",
			"at least one of inputs_config or outputs_config must be enabled"},
		"no preset": {"{enabled: true, type: openai_moderation, config: {outputs_config: {enabled: true}}}",
			"outputs_config.preset_response is required"},
		"long preset": {"{enabled: true, type: keywords, config: {keywords: a, inputs_config: {enabled: true, preset_response: " + strings.Repeat("x", 101) + "}}}",
			"inputs_config.preset_response must be less than 100 characters"},
		"no keywords": {"{enabled: true, type: keywords, config: {inputs_config: {enabled: true, preset_response: no}}}", "keywords is required"},
		"101 rows": {"{enabled: true, type: keywords, config: {keywords: \"" + strings.Repeat("a\\n", 100) + "a\", inputs_config: {enabled: true, preset_response: no}}}",
			"the number of rows for the keywords must be less than 100"},
	} {
		t.Run(name, func(t *testing.T) {
			e := importErr(t, with(tc.swa), testEnv(), Options{})
			if len(e.Problems) != 1 || !strings.Contains(e.Error(), tc.want) {
				t.Fatalf("error %q, want only %q", e, tc.want)
			}
		})
	}
	res, err := Import([]byte(with("{enabled: true, type: keywords, config: {keywords: \"bad\\nworse\", outputs_config: {enabled: true, preset_response: Replaced.}}}")), testEnv(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Notes {
		if strings.Contains(n.String(), "sensitive_word_avoidance") {
			t.Fatalf("note %q", n)
		}
	}
	// A disabled rule is never checked.
	if _, err := Import([]byte(with("{enabled: false, type: api}")), testEnv(), Options{}); err != nil {
		t.Fatal(err)
	}
}
