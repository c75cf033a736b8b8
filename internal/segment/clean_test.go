package segment

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// Dify's cleaning, as docs/knowledge.md describes it.
func TestClean(t *testing.T) {
	t.Parallel()
	spaces := []PreProcessingRule{{ID: RuleRemoveExtraSpaces, Enabled: true}}
	urls := []PreProcessingRule{{ID: RuleRemoveURLsEmails, Enabled: true}}
	tests := []struct {
		name  string
		in    string
		rules []PreProcessingRule
		want  string
	}{
		{"special-token brackets", "a <|endoftext|> b", nil, "a <endoftext> b"},
		{"control characters, tab/newline/CR kept", "a\x00b\x07c\x0bd\x0ce\x1ff\x7fg\th\ni\rj", nil, "abcdefg\th\ni\rj"},
		{"U+FFFE", "a\uFFFEb", nil, "ab"},
		// Dify's str-regex \xEF\xBF\xBE deletes the code points ï ¿ ¾.
		{"Latin-1 ï ¿ ¾ removed like Dify", "naïve ¿qué? ¾", nil, "nave qué? "},
		{"invalid UTF-8 dropped", "a\xffb\xc3", nil, "ab"},
		{"extra spaces off by default", "a  b\n\n\n\nc", nil, "a  b\n\n\n\nc"},
		{"3+ newlines to 2", "a\n\n\nb\n\n\n\n\nc\n\nd", spaces, "a\n\nb\n\nc\n\nd"},
		{"horizontal runs to one space", "a \t b\u3000\u3000c\u00a0 d e", spaces, "a b c d e"},
		{"single horizontal kept", "a\tb", spaces, "a\tb"},
		{"disabled rule is ignored", "a   b", []PreProcessingRule{{ID: RuleRemoveExtraSpaces}}, "a   b"},
		{"stopwords rule has no effect", "the a an", []PreProcessingRule{{ID: RuleRemoveStopwords, Enabled: true}}, "the a an"},
		{"emails and urls", "mail bob.smith+x@example.co.uk or see https://dify.ai/docs?x=1 and http://a.b/c).", urls, "mail  or see  and )."},
		{"markdown image url kept", "![logo](https://img.example.com/a.png) see https://example.com", urls, "![logo](https://img.example.com/a.png) see "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Clean(tt.in, tt.rules); got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// The hand-written scanners must agree with Dify's regular expressions
// (docs/knowledge.md), used here as the oracle.
func TestCleanMatchesRegexps(t *testing.T) {
	t.Parallel()
	control := regexp.MustCompile("[\x00-\x08\x0B\x0C\x0E-\x1F\x7F\u00EF\u00BF\u00BE\uFFFE]")
	newlines := regexp.MustCompile(`\n{3,}`)
	spaces := regexp.MustCompile("[\t\f\r \u00A0\u1680\u180E\u2000-\u200A\u202F\u205F\u3000]{2,}")
	alphabet := []rune("ab \t\n\r\f\u00a0\u3000\u2003\u200b\x00\x1f\u00ef\ufffe你")
	rng := rand.New(rand.NewPCG(1, 2))
	rules := []PreProcessingRule{{ID: RuleRemoveExtraSpaces, Enabled: true}}
	for range 5000 {
		rs := make([]rune, rng.IntN(24))
		for i := range rs {
			rs[i] = alphabet[rng.IntN(len(alphabet))]
		}
		in := string(rs)
		want := control.ReplaceAllString(in, "")
		want = newlines.ReplaceAllString(want, "\n\n")
		want = spaces.ReplaceAllString(want, " ")
		if got := Clean(in, rules); got != want {
			t.Fatalf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}
