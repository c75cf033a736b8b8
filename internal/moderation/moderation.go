// Package moderation is an app's content moderation (Dify's sensitive_word_avoidance): the rule
// an app declares, and the checkers that apply it to a request's query and inputs before the
// model is called and to the answer as it streams. Three types exist, as in Dify: keywords (a
// list of words, matched case-insensitively as substrings), openai_moderation (a moderation
// model of the config, through its OpenAI-compatible /moderations endpoint) and api (Dify's
// API-based extension, which Parley does not have: such rules are refused). docs/moderation.md
// describes what a client sees.
package moderation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/apps"
)

// Moderation types (sensitive_word_avoidance.type).
const (
	TypeKeywords = "keywords"
	TypeOpenAI   = "openai_moderation"
	TypeAPI      = "api"
)

// Dify's limits on a rule.
const (
	// MaxKeywordsLength bounds config.keywords, in characters.
	MaxKeywordsLength = 10000
	// MaxKeywordRows bounds the lines of config.keywords.
	MaxKeywordRows = 100
	// MaxPresetResponse bounds a preset response, in characters.
	MaxPresetResponse = 100
)

// ErrInvalid marks a rule that cannot run; the message says why.
var ErrInvalid = errors.New("invalid moderation")

// Side is the moderation of the inputs or of the outputs.
type Side struct {
	Enabled bool
	// PresetResponse is the answer that replaces a flagged one.
	PresetResponse string
}

// Rule is an app's moderation, parsed and checked.
type Rule struct {
	Type string
	// Keywords are the words of a keywords rule, as written (empty lines dropped).
	Keywords []string
	Inputs   Side
	Outputs  Side
}

// Parse checks an app's sensitive_word_avoidance as Dify does when an app is saved, and returns
// its rule; nil when moderation is off. Errors wrap ErrInvalid.
func Parse(s apps.SensitiveWordAvoidance) (*Rule, error) {
	if !s.Enabled {
		return nil, nil
	}
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	r := &Rule{Type: s.Type}
	switch s.Type {
	case "":
		return nil, invalid("sensitive_word_avoidance.type is required")
	case TypeKeywords, TypeOpenAI:
	case TypeAPI:
		return nil, invalid("type api calls a Dify API-based extension, which Parley does not have; use keywords or openai_moderation")
	default:
		return nil, invalid("type %q is not keywords, openai_moderation or api", s.Type)
	}
	var err error
	if r.Inputs, err = side(s.Config, "inputs_config"); err != nil {
		return nil, invalid("%v", err)
	}
	if r.Outputs, err = side(s.Config, "outputs_config"); err != nil {
		return nil, invalid("%v", err)
	}
	if !r.Inputs.Enabled && !r.Outputs.Enabled {
		return nil, invalid("at least one of inputs_config or outputs_config must be enabled")
	}
	for _, x := range []struct {
		name string
		s    Side
	}{{"inputs_config", r.Inputs}, {"outputs_config", r.Outputs}} {
		switch {
		case !x.s.Enabled:
		case x.s.PresetResponse == "":
			return nil, invalid("%s.preset_response is required", x.name)
		case utf8.RuneCountInString(x.s.PresetResponse) > MaxPresetResponse:
			return nil, invalid("%s.preset_response must be less than %d characters", x.name, MaxPresetResponse)
		}
	}
	if s.Type == TypeKeywords {
		kw, _ := s.Config["keywords"].(string)
		switch {
		case kw == "":
			return nil, invalid("keywords is required")
		case utf8.RuneCountInString(kw) > MaxKeywordsLength:
			return nil, invalid("keywords length must be less than %d", MaxKeywordsLength)
		case strings.Count(kw, "\n")+1 > MaxKeywordRows:
			return nil, invalid("the number of rows for the keywords must be less than %d", MaxKeywordRows)
		}
		for _, k := range strings.Split(kw, "\n") {
			if k != "" {
				r.Keywords = append(r.Keywords, k)
			}
		}
	}
	return r, nil
}

// side reads inputs_config or outputs_config ({enabled, preset_response}); a missing one is off.
func side(config map[string]any, key string) (Side, error) {
	raw, ok := config[key]
	if !ok || raw == nil {
		return Side{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return Side{}, fmt.Errorf("%s must be a dict", key)
	}
	enabled, _ := m["enabled"].(bool)
	preset, _ := m["preset_response"].(string)
	return Side{Enabled: enabled, PresetResponse: preset}, nil
}

// Result is the verdict of a check.
type Result struct {
	Flagged bool
	// Answer replaces the flagged answer: the side's preset response.
	Answer string
}

// Checker applies an app's rule.
type Checker interface {
	// CheckInputs checks the query and the input values before the model is called.
	CheckInputs(ctx context.Context, inputs map[string]any, query string) (Result, error)
	// CheckOutput checks an answer, whole or so far.
	CheckOutput(ctx context.Context, text string) (Result, error)
	// Rule is the rule the checker applies.
	Rule() *Rule
}
