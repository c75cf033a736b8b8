package extract

import (
	"context"
	"regexp"
	"strings"
)

var (
	mdHeaderRE = regexp.MustCompile(`^#+\s`)
	htmlTagRE  = regexp.MustCompile(`<.*?>`)
)

// extractMarkdown mirrors Dify's MarkdownExtractor (docs/knowledge.md): the text
// is cut into header sections; the text before the first header is one part,
// then each header (with its "#" marks removed) followed on the next line by
// its body. Lines inside ``` fences never start a section, and HTML tags are
// removed from bodies outside fences.
//
// Dify additionally deletes every newline from files that contain no header
// at all; that quirk is not reproduced (the text is kept as is).
func extractMarkdown(ctx context.Context, data []byte) (Document, error) {
	text := sanitize(decodeText(data))
	type section struct {
		header    string
		hasHeader bool
		body      strings.Builder
	}
	var sections []*section
	cur := &section{}
	inFence := false
	poll := ctxPoll{ctx: ctx}
	for _, line := range strings.Split(text, "\n") {
		if err := poll.err(); err != nil {
			return Document{}, err
		}
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			cur.body.WriteString(line)
			cur.body.WriteByte('\n')
			continue
		}
		if inFence {
			cur.body.WriteString(line)
			cur.body.WriteByte('\n')
			continue
		}
		if mdHeaderRE.MatchString(line) {
			sections = append(sections, cur)
			cur = &section{header: strings.TrimSpace(strings.ReplaceAll(line, "#", "")), hasHeader: true}
			continue
		}
		cur.body.WriteString(htmlTagRE.ReplaceAllString(line, ""))
		cur.body.WriteByte('\n')
	}
	sections = append(sections, cur)

	var doc Document
	for _, s := range sections {
		body := strings.TrimSpace(s.body.String())
		part := body
		if s.hasHeader {
			part = strings.TrimSpace(s.header + "\n" + body)
		}
		if part != "" {
			doc.Parts = append(doc.Parts, part)
		}
	}
	doc.Text = strings.Join(doc.Parts, "\n\n")
	return doc, nil
}
