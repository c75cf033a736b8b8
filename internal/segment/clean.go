package segment

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// isControl reports whether the always-on cleaning (docs/knowledge.md, Dify
// CleanProcessor.clean) deletes r.
//
// Dify's pattern is the Python str regex [\x00-\x08\x0B\x0C\x0E-\x1F\x7F\xEF\xBF\xBE]:
// in a str pattern \xEF, \xBF and \xBE are the code points U+00EF (ï),
// U+00BF (¿) and U+00BE (¾), not the UTF-8 bytes of U+FFFE, so Dify deletes
// those three Latin-1 letters/signs from every document ("naïve" → "nave").
// Parley reproduces that so chunks, word counts and hashes match.
//
// The always-on and remove_extra_spaces steps are hand-written scanners
// rather than regexps: Go's regexp made cleaning 80% of Split's time.
func isControl(r rune) bool {
	switch {
	case r <= 0x08, r == 0x0B, r == 0x0C, r >= 0x0E && r <= 0x1F, r == 0x7F:
		return true
	case r == 0xEF, r == 0xBF, r == 0xBE, r == 0xFFFE:
		return true
	}
	return false
}

// isHSpace is the horizontal whitespace class of remove_extra_spaces: tab,
// form feed, CR, space, NBSP, U+1680, U+180E, U+2000–U+200A, U+202F,
// U+205F, U+3000.
func isHSpace(r rune) bool {
	switch r {
	case '\t', '\f', '\r', ' ', 0xA0, 0x1680, 0x180E, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

var (
	emailRe = regexp.MustCompile(`[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\.[a-zA-Z0-9-.]+`)
	urlRe   = regexp.MustCompile(`https?://[^\s)]+`)
	// A Markdown image whose target is an http(s) URL; the URL is kept by
	// remove_urls_emails.
	mdImageRe = regexp.MustCompile(`!\[.*?\]\((https?://[^\s)]+)\)`)
)

// Clean applies Dify's cleaning to extracted text (docs/knowledge.md): always
// "<|" → "<", "|>" → ">", deletion of control characters (except \t, \n,
// \r), of U+FFFE and of U+00EF, U+00BF, U+00BE (see controlChars), and of
// invalid UTF-8 (Go strings may hold it; Python text cannot); then the
// enabled pre-processing rules: remove_extra_spaces (3+ newlines → two,
// runs of 2+ horizontal spaces → one space) and remove_urls_emails (e-mail
// addresses and http(s) URLs removed, except URLs that are the target of a
// Markdown image). remove_stopwords is accepted and ignored, as in Dify.
func Clean(text string, rules []PreProcessingRule) string {
	text = strings.ToValidUTF8(text, "")
	text = strings.ReplaceAll(text, "<|", "<")
	text = strings.ReplaceAll(text, "|>", ">")
	if strings.IndexFunc(text, isControl) >= 0 {
		text = strings.Map(func(r rune) rune {
			if isControl(r) {
				return -1
			}
			return r
		}, text)
	}
	for _, r := range dedupe(rules) {
		if !r.Enabled {
			continue
		}
		switch r.ID {
		case RuleRemoveExtraSpaces:
			text = removeExtraSpaces(text)
		case RuleRemoveURLsEmails:
			text = emailRe.ReplaceAllLiteralString(text, "")
			text = removeURLs(text)
		}
	}
	return text
}

// removeURLs deletes http(s) URLs outside Markdown image targets.
func removeURLs(text string) string {
	imgs := mdImageRe.FindAllStringSubmatchIndex(text, -1)
	if len(imgs) == 0 {
		return urlRe.ReplaceAllLiteralString(text, "")
	}
	var b strings.Builder
	b.Grow(len(text))
	prev := 0
	for _, m := range imgs {
		// m[2]:m[3] is the kept URL; everything else goes through urlRe.
		b.WriteString(urlRe.ReplaceAllLiteralString(text[prev:m[2]], ""))
		b.WriteString(text[m[2]:m[3]])
		prev = m[3]
	}
	b.WriteString(urlRe.ReplaceAllLiteralString(text[prev:], ""))
	return b.String()
}

// removeExtraSpaces turns runs of 3+ "\n" into "\n\n" and runs of 2+
// horizontal whitespace characters into one space, in one pass. (Dify
// applies the two substitutions in turn; neither can create a match for
// the other, so one pass gives the same result.)
func removeExtraSpaces(text string) string {
	var b strings.Builder
	changed := false
	last := 0 // text[last:i] is pending, unchanged input
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n':
			j := i
			for j < len(text) && text[j] == '\n' {
				j++
			}
			if j-i >= 3 {
				if !changed {
					b.Grow(len(text))
					changed = true
				}
				b.WriteString(text[last:i])
				b.WriteString("\n\n")
				last = j
			}
			i = j
		case isHSpace(r):
			j, n := i+size, 1
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isHSpace(r2) {
					break
				}
				j += s2
				n++
			}
			if n >= 2 {
				if !changed {
					b.Grow(len(text))
					changed = true
				}
				b.WriteString(text[last:i])
				b.WriteByte(' ')
				last = j
			}
			i = j
		default:
			i += size
		}
	}
	if !changed {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}
