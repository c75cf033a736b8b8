package moderation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// keywords flags text that contains one of the rule's keywords, ignoring case: Dify lower-cases
// both sides and looks for each keyword as a substring, so "bad" also flags "Badge".
type keywords struct {
	rule  *Rule
	lower []string
}

// Keywords returns the checker of a keywords rule.
func Keywords(r *Rule) Checker {
	k := &keywords{rule: r, lower: make([]string, len(r.Keywords))}
	for i, w := range r.Keywords {
		k.lower[i] = strings.ToLower(w)
	}
	return k
}

func (k *keywords) Rule() *Rule { return k.rule }

func (k *keywords) CheckInputs(_ context.Context, inputs map[string]any, query string) (Result, error) {
	if !k.rule.Inputs.Enabled {
		return Result{}, nil
	}
	flagged := query != "" && k.match(query)
	for _, v := range inputs {
		if flagged {
			break
		}
		flagged = k.match(text(v))
	}
	return verdict(flagged, k.rule.Inputs), nil
}

func (k *keywords) CheckOutput(_ context.Context, s string) (Result, error) {
	if !k.rule.Outputs.Enabled {
		return Result{}, nil
	}
	return verdict(k.match(s), k.rule.Outputs), nil
}

// match reports whether s contains a keyword, ignoring case.
func (k *keywords) match(s string) bool {
	if s == "" {
		return false
	}
	s = strings.ToLower(s)
	for _, w := range k.lower {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func verdict(flagged bool, s Side) Result {
	if !flagged {
		return Result{}
	}
	return Result{Flagged: true, Answer: s.PresetResponse}
}

// text is an input value as moderation reads it: strings as they are, numbers and booleans as
// written, anything else (files, lists) as JSON.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool, int, int64, float64, json.Number:
		return fmt.Sprint(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}
