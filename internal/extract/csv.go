package extract

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strings"
)

// extractCSV mirrors Dify's CSVExtractor (docs/knowledge.md): the first record is
// the header and every following record becomes one part
// "col1: v1;col2: v2;…" with names and values trimmed. Like pandas'
// on_bad_lines="skip", records with more fields than the header are skipped;
// short records are padded with empty values (pandas would print "nan").
// Blank records are skipped. Parts are joined with "\n" in Text.
func extractCSV(ctx context.Context, data []byte) (Document, error) {
	r := csv.NewReader(strings.NewReader(decodeText(data)))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var (
		header []string
		doc    Document
		limit  textLimit
		poll   = ctxPoll{ctx: ctx}
	)
	for attempts := 0; attempts <= len(data)+1 && !limit.full(); attempts++ {
		if err := poll.err(); err != nil {
			return Document{}, err
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			continue // bad line: skipped, as pandas does
		}
		if err != nil {
			return Document{}, newError(KindCorrupt, err, "CSV file could not be read")
		}
		if header == nil {
			header = make([]string, len(rec))
			for i, h := range rec {
				header[i] = strings.TrimSpace(h)
			}
			continue
		}
		if len(rec) > len(header) {
			continue
		}
		var b strings.Builder
		blank := true
		for i, col := range header {
			v := ""
			if i < len(rec) {
				v = strings.TrimSpace(rec[i])
			}
			if v != "" {
				blank = false
			}
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteString(col)
			b.WriteString(": ")
			b.WriteString(v)
		}
		if blank {
			continue
		}
		doc.Parts = append(doc.Parts, b.String())
		limit.add(b.String())
	}
	doc.Text = strings.Join(doc.Parts, "\n")
	return doc, nil
}
