package extract

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"path"
	"strconv"
	"strings"
)

const relOfficeDocument = "/officeDocument"

type docxRel struct {
	ID         string `xml:"Id,attr"`
	Type       string `xml:"Type,attr"`
	Target     string `xml:"Target,attr"`
	TargetMode string `xml:"TargetMode,attr"`
}

type docxRels struct {
	Rels []docxRel `xml:"Relationship"`
}

func parseRels(data []byte) map[string]docxRel {
	var rels docxRels
	out := map[string]docxRel{}
	if xml.Unmarshal(data, &rels) != nil {
		return out
	}
	for _, r := range rels.Rels {
		out[r.ID] = r
	}
	return out
}

// extractDOCX mirrors Dify's WordExtractor (docs/knowledge.md): body paragraphs
// in document order, one per line; tables rendered as Markdown tables (first
// row as header) at their position; external hyperlinks as [text](url).
// Images are not extracted.
func extractDOCX(ctx context.Context, data []byte) (Document, error) {
	zr, err := openOOXML(data, "DOCX")
	if err != nil {
		return Document{}, err
	}
	budget := &zipBudget{left: MaxUncompressedSize, format: "DOCX"}

	mainPart := "word/document.xml"
	if rootRels, err := readEntry(budget, zr, "_rels/.rels"); err != nil {
		return Document{}, err
	} else if rootRels != nil {
		for _, r := range parseRels(rootRels) {
			if strings.HasSuffix(r.Type, relOfficeDocument) {
				mainPart = strings.TrimPrefix(path.Clean("/"+r.Target), "/")
			}
		}
	}
	relsName := path.Join(path.Dir(mainPart), "_rels", path.Base(mainPart)+".rels")
	relsData, err := readEntry(budget, zr, relsName)
	if err != nil {
		return Document{}, err
	}
	rels := parseRels(relsData)

	rc, err := budget.open(zr, mainPart)
	if err != nil {
		return Document{}, err
	}
	if rc == nil {
		return Document{}, newError(KindCorrupt, nil, "DOCX file is corrupt: %s is missing", mainPart)
	}
	defer rc.Close()

	w := &docxWalker{rels: rels, poll: ctxPoll{ctx: ctx}}
	if err := w.walk(xml.NewDecoder(rc)); err != nil {
		if ce := ctx.Err(); ce != nil {
			return Document{}, ce
		}
		return Document{}, budget.classifyRead(err, "reading "+mainPart)
	}
	return Document{Text: strings.Join(w.blocks, "\n")}, nil
}

// docxWalker streams WordprocessingML tokens and collects text blocks.
type docxWalker struct {
	rels   map[string]docxRel
	poll   ctxPoll
	limit  textLimit
	blocks []string

	para      strings.Builder // current paragraph text
	paraDepth int             // nested w:p (text boxes) count
	links     []docxLink      // open hyperlinks in the current paragraph

	tblDepth int
	rows     [][]string
	row      []string
	cell     strings.Builder
	inCell   bool
	span     int
}

type docxLink struct {
	start int
	url   string
}

func (w *docxWalker) walk(d *xml.Decoder) error {
	inText := false
	for {
		if err := w.poll.err(); err != nil {
			return err
		}
		if w.limit.full() {
			return nil
		}
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "Fallback", "delText", "instrText":
				// mc:Fallback repeats the mc:Choice content for old readers;
				// deleted text and field codes are not visible text.
				if err := d.Skip(); err != nil {
					return err
				}
			case "p":
				if w.paraDepth > 0 && w.para.Len() > 0 {
					w.para.WriteByte('\n')
				}
				w.paraDepth++
			case "t":
				inText = true
			case "tab":
				if w.paraDepth > 0 {
					w.para.WriteByte('\t')
				}
			case "br", "cr":
				if w.paraDepth > 0 {
					w.para.WriteByte('\n')
				}
			case "hyperlink":
				url := ""
				for _, a := range t.Attr {
					if a.Name.Local == "id" {
						if r, ok := w.rels[a.Value]; ok && strings.EqualFold(r.TargetMode, "External") {
							url = r.Target
						}
					}
				}
				w.links = append(w.links, docxLink{start: w.para.Len(), url: url})
			case "tbl":
				w.tblDepth++
				if w.tblDepth == 1 {
					w.rows = nil
				}
			case "tr":
				if w.tblDepth == 1 {
					w.row = nil
				}
			case "tc":
				if w.tblDepth == 1 {
					w.cell.Reset()
					w.inCell = true
					w.span = 1
				}
			case "gridSpan":
				if w.tblDepth == 1 && w.inCell {
					for _, a := range t.Attr {
						if a.Name.Local == "val" {
							if n, err := strconv.Atoi(a.Value); err == nil && n > 1 && n <= 64 {
								w.span = n
							}
						}
					}
				}
			}
		case xml.CharData:
			if inText && w.paraDepth > 0 {
				w.para.Write(t)
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "hyperlink":
				if n := len(w.links); n > 0 {
					l := w.links[n-1]
					w.links = w.links[:n-1]
					if l.url != "" && l.start <= w.para.Len() {
						s := w.para.String()
						text := s[l.start:]
						if strings.TrimSpace(text) != "" {
							w.para.Reset()
							w.para.WriteString(s[:l.start])
							w.para.WriteString("[" + text + "](" + l.url + ")")
						}
					}
				}
			case "p":
				if w.paraDepth > 0 {
					w.paraDepth--
				}
				if w.paraDepth == 0 {
					w.endParagraph()
				}
			case "tc":
				if w.tblDepth == 1 && w.inCell {
					c := w.cell.String()
					for i := 0; i < w.span; i++ {
						w.row = append(w.row, c)
					}
					w.inCell = false
				}
			case "tr":
				if w.tblDepth == 1 {
					w.rows = append(w.rows, w.row)
					w.row = nil
				}
			case "tbl":
				if w.tblDepth > 0 {
					w.tblDepth--
				}
				if w.tblDepth == 0 {
					w.emit(renderMarkdownTable(w.rows))
					w.rows = nil
				}
			}
		}
	}
}

// endParagraph routes the finished paragraph to the current table cell or to
// the body.
func (w *docxWalker) endParagraph() {
	text := strings.TrimSpace(w.para.String())
	w.para.Reset()
	w.links = w.links[:0]
	if text == "" {
		return
	}
	if w.tblDepth > 0 {
		if w.inCell {
			if w.cell.Len() > 0 {
				w.cell.WriteByte(' ')
			}
			w.cell.WriteString(text)
		}
		return
	}
	w.emit(text)
}

func (w *docxWalker) emit(s string) {
	if s == "" {
		return
	}
	w.blocks = append(w.blocks, s)
	w.limit.add(s)
}

// renderMarkdownTable renders rows as a Markdown table whose header is the
// first row, the shape of Dify's WordExtractor._table_to_markdown.
func renderMarkdownTable(rows [][]string) string {
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return ""
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := 0; i < cols; i++ {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			c = strings.ReplaceAll(c, "\n", " ")
			c = strings.ReplaceAll(c, "|", `\|`)
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(rows[0])
	sep := make([]string, cols)
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
	return strings.TrimRight(b.String(), "\n")
}
