package llm

import (
	"strings"
	"testing"
)

func TestVisible(t *testing.T) {
	for _, tc := range []struct {
		text  string
		final bool
		want  string
	}{
		{"Thought: I think", false, "I think"},
		{"Thought: I think\nAct", false, "I think"},
		{"Thought: I think\nAct", true, "I think\nAct"},
		{"Thought: ok\nAction: ```json {", false, "ok"},
		{"Sure {\"a\":1}", true, "Sure"},
	} {
		if got := visible(tc.text, tc.final); got != tc.want {
			t.Errorf("visible(%q, %v) = %q, want %q", tc.text, tc.final, got, tc.want)
		}
	}
}

func TestWithStop(t *testing.T) {
	for _, tc := range []struct {
		stop any
		want string
	}{
		{nil, "Observation"}, {"END", "END,Observation"}, {[]any{"a", "Observation"}, "a,Observation"}, {[]string{"x"}, "x,Observation"},
	} {
		if got := strings.Join(withStop(tc.stop, "Observation"), ","); got != tc.want {
			t.Errorf("withStop(%v) = %s, want %s", tc.stop, got, tc.want)
		}
	}
}
