package segment

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The messages Dify gives (from its
// DocumentService.process_rule_args_validate).
func TestParseProcessRuleErrors(t *testing.T) {
	t.Parallel()
	seg := `"segmentation":{"separator":"\n","max_tokens":500}`
	pre := `"pre_processing_rules":[]`
	tests := map[string]string{
		``:                              "Process rule is required",
		`null`:                          "Process rule is required",
		`{}`:                            "Process rule is required",
		`{"mode":""}`:                   "Process rule mode is required",
		`{"mode":"fast"}`:               "Process rule mode is invalid",
		`{"mode":3}`:                    "Process rule mode is invalid",
		`{"mode":"custom"}`:             "Process rule rules is required",
		`{"mode":"custom","rules":{}}`:  "Process rule rules is required",
		`{"mode":"custom","rules":[1]}`: "Process rule rules is invalid",
		`{"mode":"custom","rules":{` + seg + `}}`:                                                                      "Process rule pre_processing_rules is required",
		`{"mode":"custom","rules":{"pre_processing_rules":null,` + seg + `}}`:                                          "Process rule pre_processing_rules is required",
		`{"mode":"custom","rules":{"pre_processing_rules":{"a":1},` + seg + `}}`:                                       "Process rule pre_processing_rules is invalid",
		`{"mode":"custom","rules":{"pre_processing_rules":[{"enabled":true}],` + seg + `}}`:                            "Process rule pre_processing_rules id is required",
		`{"mode":"custom","rules":{"pre_processing_rules":[{"id":"x","enabled":true}],` + seg + `}}`:                   "Process rule pre_processing_rules id is invalid",
		`{"mode":"custom","rules":{"pre_processing_rules":[{"id":"remove_urls_emails"}],` + seg + `}}`:                 "Process rule pre_processing_rules enabled is required",
		`{"mode":"custom","rules":{"pre_processing_rules":[{"id":"remove_urls_emails","enabled":"yes"}],` + seg + `}}`: "Process rule pre_processing_rules enabled is invalid",
		`{"mode":"custom","rules":{` + pre + `}}`:                                                                      "Process rule segmentation is required",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":"x"}}`:                                                   "Process rule segmentation is invalid",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":{"max_tokens":500}}}`:                                    "Process rule segmentation separator is required",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":{"separator":"","max_tokens":500}}}`:                     "Process rule segmentation separator is required",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":{"separator":7,"max_tokens":500}}}`:                      "Process rule segmentation separator is invalid",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":{"separator":"\n"}}}`:                                    "Process rule segmentation max_tokens is required",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":{"separator":"\n","max_tokens":0}}}`:                     "Process rule segmentation max_tokens is required",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":{"separator":"\n","max_tokens":500.0}}}`:                 "Process rule segmentation max_tokens is invalid",
		`{"mode":"custom","rules":{` + pre + `,"segmentation":{"separator":"\n","max_tokens":"500"}}}`:                 "Process rule segmentation max_tokens is invalid",
		`{"mode":"hierarchical","rules":{` + pre + `,"parent_mode":"paragraph","segmentation":{"separator":"\n"}}}`:    "Process rule segmentation max_tokens is required",
	}
	for in, want := range tests {
		_, err := ParseProcessRule(json.RawMessage(in))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Message != want {
			t.Errorf("ParseProcessRule(%s) = %v, want %q", in, err, want)
		}
	}
}

func TestParseProcessRuleOK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     ProcessRule
	}{
		{
			name: "automatic discards rules, even malformed ones",
			in:   `{"mode":"automatic","rules":"garbage"}`,
			want: ProcessRule{Mode: ModeAutomatic},
		},
		{
			name: "custom, duplicate ids collapse (last wins, first position)",
			in: `{"mode":"custom","rules":{"pre_processing_rules":[
				{"id":"remove_extra_spaces","enabled":true},
				{"id":"remove_urls_emails","enabled":false},
				{"id":"remove_extra_spaces","enabled":false}],
				"segmentation":{"separator":"\\n","max_tokens":300,"chunk_overlap":20}}}`,
			want: ProcessRule{Mode: ModeCustom, Rules: &Rules{
				PreProcessingRules: []PreProcessingRule{
					{ID: RuleRemoveExtraSpaces, Enabled: false},
					{ID: RuleRemoveURLsEmails, Enabled: false},
				},
				Segmentation: &Segmentation{Separator: `\n`, MaxTokens: 300, ChunkOverlap: 20},
			}},
		},
		{
			name: "hierarchical full-doc needs no max_tokens; empty rules list is fine",
			in: `{"mode":"hierarchical","rules":{"pre_processing_rules":[],"parent_mode":"full-doc",
				"segmentation":{"separator":"\n\n"},
				"subchunk_segmentation":{"separator":"\n","max_tokens":200,"chunk_overlap":0}}}`,
			want: ProcessRule{Mode: ModeHierarchical, Rules: &Rules{
				PreProcessingRules:   []PreProcessingRule{},
				Segmentation:         &Segmentation{Separator: "\n\n"},
				ParentMode:           ParentModeFullDoc,
				SubchunkSegmentation: &Segmentation{Separator: "\n", MaxTokens: 200},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseProcessRule(json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v / %+v, want %+v / %+v", got, got.Rules, tt.want, tt.want.Rules)
			}
		})
	}
}

// Dify's AUTOMATIC_RULES: remove_extra_spaces on,
// remove_urls_emails off, separator "\n", 500 / 50.
func TestResolveAutomatic(t *testing.T) {
	t.Parallel()
	in := ProcessRule{Mode: ModeAutomatic, Rules: &Rules{Segmentation: &Segmentation{Separator: "x", MaxTokens: 99}}}
	got := in.Resolve()
	want := ProcessRule{Mode: ModeAutomatic, Rules: &Rules{
		PreProcessingRules: []PreProcessingRule{
			{ID: RuleRemoveExtraSpaces, Enabled: true},
			{ID: RuleRemoveURLsEmails, Enabled: false},
		},
		Segmentation: &Segmentation{Separator: "\n", MaxTokens: 500, ChunkOverlap: 50},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve() = %+v, want %+v", got.Rules, want.Rules)
	}
	if in.Rules.Segmentation.MaxTokens != 99 {
		t.Error("Resolve modified its receiver")
	}
	if h := (ProcessRule{Mode: ModeHierarchical, Rules: &Rules{}}).Resolve(); h.Rules.ParentMode != ParentModeParagraph {
		t.Errorf("hierarchical default parent_mode = %q", h.Rules.ParentMode)
	}
}

func TestValidateTyped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule ProcessRule
		want string
	}{
		{ProcessRule{}, "Process rule mode is required"},
		{ProcessRule{Mode: "x"}, "Process rule mode is invalid"},
		{ProcessRule{Mode: ModeAutomatic}, ""},
		{ProcessRule{Mode: ModeCustom}, "Process rule rules is required"},
		{ProcessRule{Mode: ModeCustom, Rules: &Rules{PreProcessingRules: []PreProcessingRule{}, Segmentation: &Segmentation{Separator: "\n", MaxTokens: 10}}}, ""},
		{ProcessRule{Mode: ModeHierarchical, Rules: &Rules{PreProcessingRules: []PreProcessingRule{}, ParentMode: "x", Segmentation: &Segmentation{Separator: "\n", MaxTokens: 10}}}, "Process rule parent_mode is invalid"},
	}
	for _, tt := range tests {
		err := tt.rule.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Validate(%+v) = %q, want %q", tt.rule, got, tt.want)
		}
	}
}
