package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// maxSheetCells bounds the cells visited across a workbook, so a sheet with a
// huge declared range cannot keep the extractor busy.
const maxSheetCells = 10_000_000

// extractXLSX mirrors Dify's ExcelExtractor (docs/knowledge.md): in each sheet,
// in workbook order, the first row is the header and every following
// non-empty row becomes one part made of its non-empty cells as
// "header":"value" pairs joined with ";" (the quoted form of current Dify;
// older versions wrote header:value unquoted). Parts are joined with "\n";
// sheets follow each other without a marker, as in Dify. Cached formula
// results are used; hyperlinks are not rendered.
func extractXLSX(ctx context.Context, data []byte) (Document, error) {
	// openOOXML classifies encrypted, legacy and damaged files and checks the
	// declared sizes before excelize sees the data.
	zr, err := openOOXML(data, "XLSX")
	if err != nil {
		return Document{}, err
	}
	if err := checkXLSXRows(ctx, zr); err != nil {
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

// checkXLSXRows fails when a worksheet row would expand to more than
// MaxTextSize of cell text. A shared string is stored once but copied out for
// every cell that refers to it, and excelize materialises a whole row at a
// time, so a small file could otherwise make it build gigabytes for one row.
// The shared strings' lengths and the worksheets are streamed; nothing is
// kept but one length per shared string.
func checkXLSXRows(ctx context.Context, zr *zip.Reader) error {
	budget := &zipBudget{left: MaxUncompressedSize, format: "XLSX"}
	poll := ctxPoll{ctx: ctx}
	var lengths []int64
	for _, f := range zr.File {
		if strings.EqualFold(f.Name, "xl/sharedStrings.xml") {
			var err error
			if lengths, err = sharedStringLengths(budget, zr, f.Name, &poll); err != nil {
				return err
			}
		}
	}
	for _, f := range zr.File {
		name := strings.ToLower(f.Name)
		if !strings.HasPrefix(name, "xl/worksheets/") || !strings.HasSuffix(name, ".xml") {
			continue
		}
		if err := checkSheetRows(budget, zr, f.Name, lengths, &poll); err != nil {
			return err
		}
	}
	return nil
}

// xmlWalk streams the named entry's XML tokens to fn.
func xmlWalk(budget *zipBudget, zr *zip.Reader, name string, poll *ctxPoll, fn func(tok xml.Token) error) error {
	rc, err := budget.open(zr, name)
	if err != nil || rc == nil {
		return err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	for {
		if err := poll.err(); err != nil {
			return err
		}
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if errors.Is(err, errBudget) {
				return budget.errTooLarge()
			}
			return nil // excelize reports malformed parts itself
		}
		if err := fn(tok); err != nil {
			return err
		}
	}
}

// sharedStringLengths returns the text length of every shared string item.
func sharedStringLengths(budget *zipBudget, zr *zip.Reader, name string, poll *ctxPoll) ([]int64, error) {
	var (
		lengths []int64
		inItem  bool
	)
	err := xmlWalk(budget, zr, name, poll, func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "si" {
				lengths = append(lengths, 0)
				inItem = true
			}
		case xml.EndElement:
			if t.Name.Local == "si" {
				inItem = false
			}
		case xml.CharData:
			if inItem {
				lengths[len(lengths)-1] += int64(len(t))
			}
		}
		return nil
	})
	return lengths, err
}

// checkSheetRows adds up, row by row, the text the cells of one worksheet
// expand to.
func checkSheetRows(budget *zipBudget, zr *zip.Reader, name string, lengths []int64, poll *ctxPoll) error {
	var (
		row      int64
		shared   bool // the current cell refers to a shared string
		inValue  bool // inside <v> or an inline string's <t>
		rowCount int
	)
	tooLarge := func() error {
		return newError(KindTooLarge, nil, "XLSX row %d of %s expands to more than %d MB of text", rowCount, path.Base(name), MaxTextSize>>20)
	}
	return xmlWalk(budget, zr, name, poll, func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				row = 0
				rowCount++
			case "c":
				shared = false
				for _, a := range t.Attr {
					if a.Name.Local == "t" && a.Value == "s" {
						shared = true
					}
				}
			case "v", "t":
				inValue = true
			}
		case xml.EndElement:
			if t.Name.Local == "v" || t.Name.Local == "t" {
				inValue = false
			}
		case xml.CharData:
			if !inValue {
				return nil
			}
			if shared {
				i, err := strconv.Atoi(strings.TrimSpace(string(t)))
				if err == nil && i >= 0 && i < len(lengths) {
					row += lengths[i]
				}
			} else {
				row += int64(len(t))
			}
			if row > MaxTextSize {
				return tooLarge()
			}
		}
		return nil
	})
}
