// Package template handles Dify's {{#node_id.var.path#}} variable references in text fields
// (LLM prompts, answers, HTTP fields, condition values) and renders Jinja2 templates.
package template

import (
	"regexp"
	"strings"
)

// referencePattern is Dify's reference syntax: a node id of 1–50 characters from [A-Za-z0-9_]
// and 1–10 dotted segments, each a letter or underscore followed by up to 29 word characters.
// A node id containing "-" (a UUID) therefore cannot be referenced.
var referencePattern = regexp.MustCompile(`\{\{#([a-zA-Z0-9_]{1,50}(?:\.[a-zA-Z_][a-zA-Z0-9_]{0,29}){1,10})#\}\}`)

// Placeholders an LLM node replaces itself; they do not match the reference syntax.
const (
	ContextPlaceholder   = "{{#context#}}"
	HistoriesPlaceholder = "{{#histories#}}"
	QueryPlaceholder     = "{{#query#}}"
)

// Part is one piece of a template: literal text, or a reference (Selector non-nil).
type Part struct {
	Text     string   // the literal text, or for a reference its dotted path ("node.var")
	Selector []string // [node_id, variable, path...] for a reference
}

// IsReference reports whether the part is a variable reference.
func (p Part) IsReference() bool { return p.Selector != nil }

// Raw is the part as written in the template.
func (p Part) Raw() string {
	if p.Selector == nil {
		return p.Text
	}
	return "{{#" + p.Text + "#}}"
}

// Parse splits text into literal and reference parts in order. Empty literals are dropped, so
// adjacent references yield adjacent parts.
func Parse(text string) []Part {
	if !strings.Contains(text, "{{#") {
		if text == "" {
			return nil
		}
		return []Part{{Text: text}}
	}
	locs := referencePattern.FindAllStringSubmatchIndex(text, -1)
	parts := make([]Part, 0, 2*len(locs)+1)
	last := 0
	for _, l := range locs {
		if l[0] > last {
			parts = append(parts, Part{Text: text[last:l[0]]})
		}
		path := text[l[2]:l[3]]
		parts = append(parts, Part{Text: path, Selector: strings.Split(path, ".")})
		last = l[1]
	}
	if last < len(text) {
		parts = append(parts, Part{Text: text[last:]})
	}
	return parts
}

// HasReferences reports whether text contains at least one reference.
func HasReferences(text string) bool { return referencePattern.MatchString(text) }

// Selectors lists the distinct references in text, in order of first appearance.
func Selectors(text string) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, p := range Parse(text) {
		if p.Selector != nil && !seen[p.Text] {
			seen[p.Text] = true
			out = append(out, p.Selector)
		}
	}
	return out
}

// Lookup resolves a selector to a value; false means the variable does not exist.
type Lookup func(selector []string) (any, bool)

// Render replaces every reference with format(value). A reference that does not resolve is
// written as its dotted path without the braces ("node.var"), which is what Dify's template
// conversion produces for a missing variable.
func Render(text string, lookup Lookup, format func(any) string) string {
	if !strings.Contains(text, "{{#") {
		return text
	}
	parts := Parse(text)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(RenderPart(p, lookup, format))
	}
	return b.String()
}

// RenderPart renders one part as Render does; the engine uses it to stream an answer part by
// part.
func RenderPart(p Part, lookup Lookup, format func(any) string) string {
	if p.Selector == nil {
		return p.Text
	}
	if v, ok := lookup(p.Selector); ok {
		return format(v)
	}
	return p.Text
}
