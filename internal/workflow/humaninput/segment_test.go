package humaninput

import (
	"regexp"
	"testing"
)

// TestNewFormToken: 22 characters of [A-Za-z0-9] (about 131 bits), every character used, no
// repeats over many draws.
func TestNewFormToken(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9]{22}$`)
	seen := map[string]bool{}
	chars := map[rune]bool{}
	for range 5000 {
		tok := NewFormToken()
		if !re.MatchString(tok) {
			t.Fatalf("token %q", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q drawn twice", tok)
		}
		seen[tok] = true
		for _, c := range tok {
			chars[c] = true
		}
	}
	if len(chars) != len(tokenAlphabet) {
		t.Fatalf("%d of %d characters used", len(chars), len(tokenAlphabet))
	}
}
