package safeerr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/safeerr"
)

type safe struct{ text, msg string }

func (e *safe) Error() string       { return e.text }
func (e *safe) SafeMessage() string { return e.msg }

func TestMessage(t *testing.T) {
	inner := &safe{text: "dial 10.0.0.1: refused", msg: "The remote file could not be fetched."}
	outer := &safe{text: "wrapped", msg: "Outer text."}
	for _, tc := range []struct {
		name string
		err  error
		want string
		ok   bool
	}{
		{"nil", nil, "", false},
		{"plain", errors.New("pq: syntax error"), "", false},
		{"direct", inner, inner.msg, true},
		{"wrapped", fmt.Errorf("fetch: %w", inner), inner.msg, true},
		{"joined", errors.Join(errors.New("a"), inner), inner.msg, true},
		// The outermost one wins: the layer nearest the client chose its words.
		{"outermost", fmt.Errorf("%w: %w", outer, inner), outer.msg, true},
	} {
		got, ok := safeerr.Message(tc.err)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %q %v, want %q %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
