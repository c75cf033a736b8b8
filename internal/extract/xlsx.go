package extract

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/xuri/excelize/v2"
)

// maxSheetCells bounds the cells visited across a workbook, so a sheet with a
// huge declared range cannot keep the extractor busy.
const maxSheetCells = 10_000_000

// extractXLSX mirrors Dify's ExcelExtractor (indexing.md §1): in each sheet,
// in workbook order, the first row is the header and every following
// non-empty row becomes one part made of its non-empty cells as
// "header":"value" pairs joined with ";" (the quoted form of current Dify;
// older versions wrote header:value unquoted). Parts are joined with "\n";
// sheets follow each other without a marker, as in Dify. Cached formula
// results are used; hyperlinks are not rendered.
func extractXLSX(ctx context.Context, data []byte) (Document, error) {
	// openOOXML classifies encrypted, legacy and damaged files and checks the
	// declared sizes before excelize sees the data.
	if _, err := openOOXML(data, "XLSX"); err != nil {
		return Document{}, err
	}
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit: MaxUncompressedSize,
		// Equal limits keep every part in memory: excelize spills larger
		// worksheets to temporary files otherwise.
		UnzipXMLSizeLimit: MaxUncompressedSize,
	})
	if err != nil {
		return Document{}, classifyExcelize(err)
	}
	defer f.Close()

	var (
		doc   Document
		limit textLimit
		cells int
		poll  = ctxPoll{ctx: ctx}
	)
	for _, sheet := range f.GetSheetList() {
		rows, err := f.Rows(sheet)
		if err != nil {
			return Document{}, classifyExcelize(err)
		}
		var header []string
		first := true
		for rows.Next() {
			if err := poll.err(); err != nil {
				rows.Close()
				return Document{}, err
			}
			if limit.full() || cells > maxSheetCells {
				break
			}
			cols, err := rows.Columns()
			if err != nil {
				rows.Close()
				return Document{}, classifyExcelize(err)
			}
			cells += len(cols) + 1
			if first {
				// pandas/openpyxl take the sheet's first row as the header,
				// even if it is empty.
				header = cols
				first = false
				continue
			}
			var pairs []string
			for i, v := range cols {
				if strings.TrimSpace(v) == "" {
					continue
				}
				k := ""
				if i < len(header) {
					k = header[i]
				}
				pairs = append(pairs, `"`+k+`":"`+v+`"`)
			}
			if len(pairs) == 0 {
				continue
			}
			part := strings.Join(pairs, ";")
			doc.Parts = append(doc.Parts, part)
			limit.add(part)
		}
		if err := rows.Error(); err != nil {
			rows.Close()
			return Document{}, classifyExcelize(err)
		}
		rows.Close()
	}
	doc.Text = strings.Join(doc.Parts, "\n")
	return doc, nil
}

func classifyExcelize(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	switch {
	case strings.Contains(err.Error(), "unzip size"):
		return newError(KindTooLarge, err, "XLSX file expands to more than %d bytes", MaxUncompressedSize)
	case errors.Is(err, excelize.ErrWorkbookPassword):
		return newError(KindEncrypted, err, "XLSX file is password protected")
	}
	return newError(KindCorrupt, err, "XLSX file is corrupt or truncated")
}
