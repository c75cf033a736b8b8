package headtail

import (
	"strings"
	"testing"
)

func TestKeepsHeadAndTail(t *testing.T) {
	b := &Buffer{Max: 8}
	for _, s := range []string{"ab", "cdef", "ghijkl", "mn"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "abcdklmn" {
		t.Fatalf("kept %q, want the first and last 4 bytes", got)
	}
	short := &Buffer{Max: 100}
	_, _ = short.Write([]byte(strings.Repeat("x", 10)))
	if short.String() != strings.Repeat("x", 10) {
		t.Fatalf("a short output is kept whole: %q", short.String())
	}
}
