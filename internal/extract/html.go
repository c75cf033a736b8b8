package extract

import (
	"context"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
)

// maxHTMLNesting bounds the nesting of block quotes and lists rendered as
// such. Every level prefixes each line inside it ("> " or an indentation),
// so the Markdown grows with depth times length: 500 nested quotes turned
// 166 KB of HTML into 40 MB of text and minutes of conversion, which the
// converter does not interrupt on cancellation. Deeper levels are rendered as
// plain blocks; mail threads and outlines stay far below the limit.
const maxHTMLNesting = 32

// extractHTML converts HTML to Markdown: visible text only (script and style
// are dropped), with headings, lists, links and tables kept as Markdown so
// the splitter sees paragraph boundaries. Dify's HtmlExtractor returns the
// BeautifulSoup get_text() of the page as one document (docs/knowledge.md); the
// words are the same, the layout is richer here.
func extractHTML(ctx context.Context, data []byte) (Document, error) {
	src := decodeText(data)
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
	))
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return Document{}, newError(KindCorrupt, err, "HTML file could not be converted to text")
	}
	flattenDeepNesting(doc)
	out, err := conv.ConvertNode(doc, converter.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return Document{}, ctx.Err()
		}
		return Document{}, newError(KindCorrupt, err, "HTML file could not be converted to text")
	}
	return Document{Text: strings.TrimSpace(string(out))}, nil
}

// flattenDeepNesting turns the block quotes, lists and list items nested more
// than maxHTMLNesting deep into plain blocks (div).
func flattenDeepNesting(doc *html.Node) {
	type item struct {
		n     *html.Node
		depth int
	}
	stack := []item{{doc, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		depth := it.depth
		if it.n.Type == html.ElementNode {
			switch it.n.DataAtom {
			case atom.Blockquote, atom.Ul, atom.Ol, atom.Li, atom.Dl, atom.Dd, atom.Menu:
				if depth >= maxHTMLNesting {
					it.n.DataAtom, it.n.Data = atom.Div, "div"
				} else {
					depth++
				}
			}
		}
		for c := it.n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, item{c, depth})
		}
	}
}
