package extract

import (
	"bytes"
	"context"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
)

// extractHTML converts HTML to Markdown: visible text only (script and style
// are dropped), with headings, lists, links and tables kept as Markdown so
// the splitter sees paragraph boundaries. Dify's HtmlExtractor returns the
// BeautifulSoup get_text() of the page as one document (indexing.md §1); the
// words are the same, the layout is richer here.
func extractHTML(ctx context.Context, data []byte) (Document, error) {
	src := decodeText(data)
	conv := converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		table.NewTablePlugin(),
	))
	out, err := conv.ConvertReader(bytes.NewReader([]byte(src)), converter.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return Document{}, ctx.Err()
		}
		return Document{}, newError(KindCorrupt, err, "HTML file could not be converted to text")
	}
	return Document{Text: strings.TrimSpace(string(out))}, nil
}
