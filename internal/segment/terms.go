package segment

import (
	"strings"
	"unicode"
)

// containsHan reports whether text has Chinese characters, loading the Chinese segmenter when
// it does.
func containsHan(text string) bool {
	for _, r := range text {
		// Han characters start at U+2E80.
		if r >= 0x2E80 && unicode.Is(unicode.Han, r) {
			loadZh()
			return true
		}
	}
	return false
}

// Terms returns text as space-separated lower-case search terms for a full-text index whose
// tokenizer splits on spaces and punctuation: words of letters and digits as they are, Chinese
// runs cut into words by the same segmenter economy keywords use (a full-text engine's own
// tokenizer does not segment CJK text). Stop words are kept: they weigh little in BM25.
func Terms(text string) string {
	hasHan := containsHan(text)
	var b strings.Builder
	b.Grow(len(text))
	eachWord(text, hasHan, func(w string) {
		if strings.TrimSpace(w) == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strings.ToLower(w))
	})
	return b.String()
}

// QueryTerms returns the distinct terms of a query, in order, for a full-text search.
func QueryTerms(query string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range strings.Fields(Terms(query)) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
