package providers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("read: %w", ErrTruncated)
	e := NewError("openai", KindInvocation, 0, "stream ended before completion", cause)
	if e.Error() != "[openai] stream ended before completion" || e.Message != e.Error() {
		t.Errorf("Error() = %q", e.Error())
	}
	wrapped := fmt.Errorf("chat: %w", e)
	if !errors.Is(wrapped, ErrTruncated) || errors.Unwrap(e) != cause {
		t.Error("cause not reachable")
	}
	if got, ok := errors.AsType[*Error](wrapped); !ok || got != e {
		t.Error("errors.As does not find the *Error")
	}
	if NewError("p", "", 500, "", nil).Kind != KindInvocation || NewError("p", "", 500, "", nil).Message != "[p] request failed" {
		t.Error("defaults")
	}
	long := NewError("p", KindQuota, 429, strings.Repeat("é", 2000), nil)
	if n := len([]rune(long.Message)); n != len("[p] ")+maxMessageRunes {
		t.Errorf("long message has %d runes", n)
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want Kind
	}{
		{nil, ""},
		{errors.New("plain"), KindInvocation},
		{context.Canceled, KindInvocation},
		{NewError("p", KindCredentials, 401, "bad key", nil), KindCredentials},
		{fmt.Errorf("wrapped: %w", NewError("p", KindModel, 404, "no model", nil)), KindModel},
	}
	for _, tt := range tests {
		if got := KindOf(tt.err); got != tt.want {
			t.Errorf("KindOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"this is too long", 8, "this is…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"x", 0, ""},
	}
	for _, tt := range tests {
		if got := Truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestMessageText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m    Message
		want string
	}{
		{Message{Content: "plain"}, "plain"},
		{Message{Content: "ignored", Parts: []Part{{Type: PartText, Text: "a"}}}, "a"},
		{Message{Parts: []Part{{Type: PartText, Text: "a"}, {Type: PartImageURL, ImageURL: "u"}, {Type: PartText, Text: "b"}}}, "ab"},
		{Message{Parts: []Part{{Type: PartImageURL, ImageURL: "u"}}}, ""},
	}
	for _, tt := range tests {
		if got := tt.m.Text(); got != tt.want {
			t.Errorf("Text() = %q, want %q", got, tt.want)
		}
	}
	if (Usage{PromptTokens: 3, CompletionTokens: 4}).TotalTokens() != 7 {
		t.Error("TotalTokens")
	}
}
