package mdexport

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// fuzzSeeds are Markdown texts for FuzzMarkdown: every construct the writers handle, the
// inputs goldmark takes quadratic time on, deep nesting, and texts small but large once
// converted. go test runs them as a test.
var fuzzSeeds = []string{
	"",
	"# Title\n\nText with **bold**, *italic*, `code`, ~~strike~~, [link](https://example.com \"t\") and ![alt](i.png).\n",
	"- a\n- [ ] task\n- [x] done\n  1. one\n  2. two\n     > quote\n",
	"```go\nfunc main() {}\n```\n\n    indented\n\n~~~\nunclosed",
	"| a | b |\n|:--|--:|\n| 1 | 2 | 3 |\n| only |\n",
	"| a |\n|---|\n| `x \\| y` | **b** |",
	"<div>\n<script>alert(1)</script>\n<p>html <b>block</b></p>\n</div>\n\ninline <br> and <span>tag</span>",
	"[ref]\n\n[ref]: https://example.com/ref\n[a][ref] [b][] [ref][]",
	"Line with trailing spaces  \nand a hard break\\\nthen www.example.com and https://x.y/z?q=1.",
	"Setext\n======\n\nSub\n---\n\n***\n",
	"&amp; &copy; &#x1F600; &#0; &bogus; \\* \\_ \\[",
	"中文 **粗体** 日本語のテキスト 한국어 العربية עברית",
	"\x00\x01\x1b[31mcontrol\x7f\ufffe",
	strings.Repeat(">", 200) + " deep",
	strings.Repeat("- ", 200) + "deep",
	strings.Repeat("  ", 0) + strings.Repeat("1. ", 200) + "deep",
	strings.Repeat("[a](", 2000),
	strings.Repeat("[a](<b", 2000),
	strings.Repeat("[a](\n", 2000),
	strings.Repeat("]([\n", 2000),
	strings.Repeat("[*_a", 2000),
	strings.Repeat("\\``", 2000),
	strings.Repeat("*_", 2000) + "x" + strings.Repeat("_*", 2000),
	"|" + strings.Repeat(" c |", 60) + "\n|" + strings.Repeat("---|", 60) + "\n" + strings.Repeat("|\n", 60),
	"[r]: https://example.com/" + strings.Repeat("x", 4000) + "\n\n" + strings.Repeat("[r] ", 2000),
}

// FuzzMarkdown parses any text and writes it as HTML (and what fuzzChecks write): no panic,
// nesting within maxNesting, output within MaxOutputBytes, and well-formed XML; or one of the
// errors of a text over the bounds.
func FuzzMarkdown(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		md = prepare(md, true)
		doc, err := newDocument(ctx, md)
		switch {
		case errors.Is(err, errTooComplex), errors.Is(err, errTooManyCells), errors.Is(err, errLinksTooLong):
			return
		case err != nil:
			t.Fatalf("%q: %v", md, err)
		}
		if d := nesting(doc.blocks); d > maxNesting {
			t.Fatalf("nesting %d", d)
		}
		body, err := renderHTML(ctx, doc)
		if errors.Is(err, errOutputTooLarge) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > MaxOutputBytes {
			t.Fatalf("%d bytes of HTML", len(body))
		}
		mustXML(t, "html", "<div>"+body+"</div>")
		for _, check := range fuzzChecks {
			check(t, ctx, doc)
		}
	})
}

// fuzzChecks are what FuzzMarkdown checks besides the HTML: the other writers add theirs.
var fuzzChecks []func(t *testing.T, ctx context.Context, doc *document)

// nesting is how deep lists and quotes nest in bs.
func nesting(bs []block) int {
	deepest := 0
	for _, b := range bs {
		d := nesting(b.children)
		for _, it := range b.items {
			d = max(d, nesting(it.blocks))
		}
		if b.kind == kindQuote || b.kind == kindList {
			d++
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// mustXML fails unless s is well-formed XML.
func mustXML(t *testing.T, what, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v\n%.2000s", what, err, s)
		}
	}
}

// TestParseBounds: the bounds of a parse hold on texts made to pass them, each with its error.
func TestParseBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, c := range map[string]struct {
		md   string
		want error
	}{
		"quadratic links": {strings.Repeat("[a](", MaxInputBytes/4), errTooComplex},
		"openers":         {strings.Repeat("[", MaxInputBytes), errTooComplex},
		"wide short rows": {"|" + strings.Repeat(" c |", 2000) + "\n|" + strings.Repeat("---|", 2000) + "\n" + strings.Repeat("|\n", 2000), errTooManyCells},
		"reused reference": {"[r]: https://example.com/" + strings.Repeat("x", 100000) + "\n\n" + strings.Repeat("[r] ", 1000),
			errLinksTooLong},
	} {
		if _, err := newDocument(ctx, c.md); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	doc, err := newDocument(ctx, strings.Repeat("> - ", 10000)+"x")
	if err != nil || nesting(doc.blocks) > maxNesting || nesting(doc.blocks) < maxNesting/2 {
		t.Errorf("deep nesting: %v", err)
	}
	// A real megabyte (the sample text over and over) stays well within every bound.
	var b bytes.Buffer
	for b.Len() < MaxInputBytes-4096 {
		b.WriteString(realText)
	}
	if _, err := newDocument(ctx, b.String()); err != nil {
		t.Errorf("a megabyte of Markdown: %v", err)
	}
}

// realText is Markdown as models write it.
const realText = "## Section\n\nSome text with **bold**, *italic* and `code`, and a [link](https://example.com/page).\n\n" +
	"- item one\n- item two with [a link](https://example.com)\n\n| Col A | Col B | Col C |\n|---|---|---|\n" +
	"| 1 | **two** | [three](https://example.com/3) |\n| 4 | five | six |\n\n```python\nprint('x')\n```\n\n"
