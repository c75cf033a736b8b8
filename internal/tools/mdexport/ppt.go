package mdexport

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/internal/tools"
)

// pptPlugin is the PPT plugin (stvlynn/ppt): one tool, Markdown to a PPTX presentation, with
// its own parameters (markdown_content, title, theme) and its own way of cutting slides.
var pptPlugin = &plugin{id: "stvlynn/ppt/ppt", provider: "ppt"}

// pptSpec is the PPT plugin's tool.
var pptSpec = spec{
	name:   "markdown_to_pptx_converter",
	label:  "Markdown to PPTX Converter",
	target: "PPTX",
	description: "A tool that converts Markdown formatted text into Microsoft PowerPoint PPTX format presentations, " +
		"maintaining formatting, structure, and supporting basic slide layouts.",
	schema: mustJSON(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"markdown_content": map[string]any{"type": "string", "description": "The Markdown content that will be converted to a PowerPoint presentation"},
			"title":            map[string]any{"type": "string", "description": "The title that will be used for the PowerPoint presentation"},
			"theme":            map[string]any{"type": "string", "description": "The visual theme to apply to the presentation slides"},
		},
		"required": []string{"markdown_content"},
	}),
	plugin: pptPlugin,
	run:    runPPT,
}

// defaultPPTTitle is the presentation's title when the call gives none, as the plugin's.
const defaultPPTTitle = "Presentation"

// slideSeparator is what parts the slides of a text that has one: a line of three or more
// dashes, between other lines.
var slideSeparator = regexp.MustCompile(`\n-{3,}\n`)

// runPPT answers a call of markdown_to_pptx_converter as the plugin answers: a line of text
// saying the presentation was made, and the file, named from the title; or a line saying why
// not. The plugin answers both with text rather than failing the call, so a workflow goes on
// either way; so does this.
func runPPT(ctx context.Context, _ *Set, a args) tools.Result {
	text := a.text("markdown_content")
	if len(text) > MaxInputBytes {
		return pptFailed(fmt.Sprintf("markdown_content is %d bytes; at most %d bytes of Markdown are converted", len(text), MaxInputBytes))
	}
	md := prepare(text, false)
	if md == "" {
		return tools.Result{Text: "No markdown content provided."}
	}
	title := strings.TrimSpace(a.text("title"))
	if title == "" {
		title = defaultPPTTitle
	}
	slides, err := pptSlides(ctx, md, title)
	if err != nil {
		return pptFailed(failureText(ctx, err))
	}
	data, err := packPPTX(ctx, slides, title)
	if err != nil {
		return pptFailed(failureText(ctx, err))
	}
	var f files
	if err := f.add(fileName(strings.ReplaceAll(title, " ", "_"), defaultPPTTitle, ".pptx"), mimePPTX, data); err != nil {
		return pptFailed(err.Error())
	}
	msg := fmt.Sprintf("PowerPoint presentation '%s' generated successfully", title)
	if theme := strings.TrimSpace(a.text("theme")); theme != "" && theme != "default" {
		msg += fmt.Sprintf("\n(The theme %q is not installed here: the presentation has the default white design.)", theme)
	}
	return tools.Result{Text: msg, Files: f.list}
}

// pptFailed is the plugin's answer to a conversion that failed, saying why.
func pptFailed(why string) tools.Result {
	return tools.Result{Text: "Error converting markdown to PPTX: " + why}
}

// pptSlides cuts md into slides as the plugin does. A text with slide separators (see
// slideSeparator) has a slide per part: the first is the title slide, titled by its first
// level-1 heading (else the call's title) with its first level-2 heading as subtitle, and each
// other part is titled by its first level-1 heading, else its first level-2 one. A text
// without separators has a title slide with the call's title, then a slide for each level-1 or
// level-2 heading with what follows it. The subtitle of a title slide that has none is the
// author and date of the text's leading "key: value" lines, when it names them.
//
// Where the plugin drops text (what comes before the first heading of a text without
// separators), it goes on slides titled by the presentation's title instead. As with
// md_to_pptx, text too long for a slide continues on the next one, and a table has slides of
// its own.
func pptSlides(ctx context.Context, md, title string) ([]pptSlide, error) {
	parts := slideSeparator.Split("\n"+md+"\n", -1)
	if len(parts) > maxSlides {
		return nil, fmt.Errorf("the presentation would have more than %d slides", maxSlides)
	}
	meta := pptSubtitle(md)
	d := &deck{}
	if len(parts) == 1 {
		doc, err := newDocument(ctx, md)
		if err != nil {
			return nil, err
		}
		d.titleSlide([]span{{text: title}}, meta)
		if err := d.fill(doc.blocks, func(b *block) bool { return b.level <= 2 || d.cur == nil }); err != nil {
			return nil, err
		}
		return d.out, nil
	}
	for i, part := range parts {
		if strings.TrimSpace(part) == "" {
			continue
		}
		doc, err := newDocument(ctx, part)
		if err != nil {
			return nil, err
		}
		blocks := doc.blocks
		if i == 0 {
			heading, subtitle := []span{{text: title}}, meta
			if h := headingAt(blocks, 1); h >= 0 {
				heading, blocks = blocks[h].spans, without(blocks, h)
			}
			if h := headingAt(blocks, 2); h >= 0 {
				subtitle, blocks = blocks[h].spans, without(blocks, h)
			}
			d.titleSlide(heading, subtitle)
		} else {
			h := headingAt(blocks, 1)
			if h < 0 {
				h = headingAt(blocks, 2)
			}
			var heading []span
			if h >= 0 {
				heading, blocks = blocks[h].spans, without(blocks, h)
			}
			d.start(heading)
		}
		if err := d.fill(blocks, func(*block) bool { return false }); err != nil {
			return nil, err
		}
	}
	if len(d.out) == 0 {
		d.titleSlide([]span{{text: title}}, meta)
	}
	return d.out, nil
}

// without is blocks without the one at i, in a new slice.
func without(blocks []block, i int) []block {
	return append(blocks[:i:i], blocks[i+1:]...)
}

// headingAt is the index of the first heading of level in blocks, -1 if none.
func headingAt(blocks []block, level int) int {
	for i := range blocks {
		if blocks[i].kind == kindHeading && blocks[i].level == level {
			return i
		}
	}
	return -1
}

// pptSubtitle is the subtitle the plugin makes from a text's leading lines (those before the
// first blank line) that read "key: value": "author | date", either alone, or nothing.
func pptSubtitle(md string) []span {
	var author, date string
	for line := range strings.SplitSeq(md, "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "author":
			author = strings.TrimSpace(value)
		case "date":
			date = strings.TrimSpace(value)
		}
	}
	var parts []string
	for _, s := range []string{author, date} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []span{{text: strings.Join(parts, " | ")}}
}

// titleSlide adds a title slide: title and subtitle in the middle. What follows it, up to the
// next slide, goes on slides under the same title.
func (d *deck) titleSlide(title, subtitle []span) {
	d.out = append(d.out, pptSlide{title: title, subtitle: subtitle, section: true})
	d.cur, d.title, d.lines = nil, title, 0
}

// fill adds blocks to the deck: a heading for which starts says so starts a slide titled by
// it; other headings, paragraphs, lists and code go in the body of the current slide, and a
// table on slides of its own.
func (d *deck) fill(blocks []block, starts func(*block) bool) error {
	for i := range blocks {
		b := &blocks[i]
		switch {
		case b.kind == kindHeading && starts(b):
			d.start(b.spans)
		case b.kind == kindTable:
			d.table(b.table)
		case b.kind == kindRule:
		default:
			d.add(paragraphs(b, 0, false))
		}
		if len(d.out) > maxSlides {
			return fmt.Errorf("the presentation would have more than %d slides", maxSlides)
		}
	}
	return nil
}
