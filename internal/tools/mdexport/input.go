package mdexport

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// thinkTags are a reasoning model's thoughts, which the plugin removes before converting.
var thinkTags = regexp.MustCompile(`(?s)<think>.*?</think>`)

// prepare is the Markdown text as the plugin converts it: trimmed, without <think> sections,
// without a code fence wrapping the whole text (strip; every tool but md_to_codeblock), with
// escaped line breaks made real, and with what no output format can carry (invalid UTF-8,
// control characters) left out. Empty when nothing is left.
//
// The plugin turns every two-character "\n" into a line break; here that happens only when the
// text has no real line break, the case it is for (a model that escaped its whole answer), so
// that code such as print("a\nb") survives.
func prepare(text string, strip bool) string {
	text = strings.TrimSpace(text)
	text = thinkTags.ReplaceAllString(text, "")
	if strip {
		text = stripWrapper(text)
	}
	if strings.Contains(text, `\n`) && !strings.Contains(text, "\n") {
		text = strings.ReplaceAll(text, `\n`, "\n")
	}
	return strings.TrimSpace(clean(text))
}

// clean is text as valid UTF-8 without control characters other than tab and line feed (XML
// 1.0, and so DOCX, PPTX and XLSX, cannot carry them), with CRLF line ends made LF.
func clean(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == utf8.RuneError:
			return '\uFFFD'
		case r == '\t' || r == '\n':
			return r
		case r == '\r':
			return '\n'
		case unicode.IsControl(r), r == '\uFFFE', r == '\uFFFF', r >= 0xD800 && r <= 0xDFFF:
			return -1
		}
		return r
	}, strings.ToValidUTF8(text, "\uFFFD"))
}

// stripWrapper removes a code fence around the whole text (```, ```markdown or ```md on the first
// line, ``` on the last), which models often wrap their Markdown in. The plugin strips any text
// that starts and ends with ```; here the first line must open a Markdown fence, and the fences
// inside must pair up, so that a text that merely starts and ends with code blocks is kept.
func stripWrapper(text string) string {
	text = strings.TrimSpace(text)
	first, rest, ok := strings.Cut(text, "\n")
	if !ok {
		return text
	}
	info := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(first, "```")))
	if !strings.HasPrefix(first, "```") || (info != "" && info != "markdown" && info != "md") {
		return text
	}
	body, last, ok := cutLast(rest, "\n")
	if !ok || strings.TrimSpace(last) != "```" {
		return text
	}
	open := false
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			open = !open
		}
	}
	if open {
		return text
	}
	return strings.TrimSpace(body)
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", s, false
	}
	return s[:i], s[i+len(sep):], true
}

// Default file names, without extension: the plugin leaves files unnamed (Dify names them by a
// random id) except its PNG and code block files, named "output" and "code".
const (
	defaultStem     = "output"
	defaultCodeStem = "code"
)

// maxNameBytes bounds a file name's stem; longer names are cut.
const maxNameBytes = 120

// fileName is the file name for the output_filename given (empty: def), with the extension ext
// (".docx"), as the plugin names files: the extension is added unless the name has it.
func fileName(given, def, ext string) string {
	return stem(given, def, ext) + ext
}

// fileNames names the n files of one call: the file name alone, or stem_1, stem_2… with the
// extension, as the plugin numbers the files of several tables.
func fileNames(given, def, ext string, n int) []string {
	base := stem(given, def, ext)
	if n == 1 {
		return []string{base + ext}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = base + "_" + strconv.Itoa(i+1) + ext
	}
	return out
}

// stem is the given name made safe as a file name, without ext; def when nothing is left. A
// name is reduced to its last path element, and characters that are not allowed in file names
// on common systems become "_".
func stem(given, def, ext string) string {
	s := strings.TrimSpace(given)
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || strings.ContainsRune(`<>:"|?*`, r) {
			return '_'
		}
		return r
	}, strings.ToValidUTF8(s, "_"))
	if len(s) >= len(ext) && strings.EqualFold(s[len(s)-len(ext):], ext) {
		s = s[:len(s)-len(ext)]
	}
	if len(s) > maxNameBytes {
		s = s[:maxNameBytes]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	s = strings.Trim(s, " .")
	if s == "" {
		return def
	}
	return s
}
