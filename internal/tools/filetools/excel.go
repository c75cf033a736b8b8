package filetools

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"

	"github.com/parleyhq/parley/internal/tools"
)

// The excel2json tool of qiangxinglin/excel_tools (the plugin's "xlsx → json", read at its
// version 0.0.5): the rows of every sheet as JSON objects keyed by the sheet's header row, every
// value a string, as pandas.read_excel(dtype=str) and DataFrame.to_json(orient="records") give
// them. A workbook of one sheet answers the list of its rows in pandas' compact JSON; a workbook
// of several answers an object of each sheet's rows by sheet name, in json.dumps' indented
// layout. The answer is text, not the json output, as the plugin's is (it keeps the header
// order). The plugin's json2excel is not here.
const (
	excelPlugin   = "qiangxinglin/excel_tools/excel_tools"
	excelProvider = "excel_tools"
)

var excelSpecs = []spec{{plugin: excelPlugin, provider: excelProvider, name: "excel2json", label: "Excel to Json",
	description: "Convert Excel to Json.", files: []string{"file"}, run: excelToJSON}}

// naStrings are the strings pandas reads as missing values by default; their cells are null.
var naStrings = map[string]bool{
	"": true, "#N/A": true, "#N/A N/A": true, "#NA": true, "-1.#IND": true, "-1.#QNAN": true, "-NaN": true,
	"-nan": true, "1.#IND": true, "1.#QNAN": true, "<NA>": true, "N/A": true, "NA": true, "NULL": true, "NaN": true,
	"None": true, "n/a": true, "nan": true, "null": true,
}

// excelToJSON is excel2json.
func excelToJSON(ctx context.Context, s *Set, a args) tools.Result {
	f, err := a.file("file")
	if err != nil {
		return failed("Error processing Excel file: %v", err)
	}
	if len(f.Data) > s.o.MaxFileBytes {
		return failed("Error processing Excel file: the file is %d bytes; this server reads at most %d", len(f.Data), s.o.MaxFileBytes)
	}
	text, err := s.workbookJSON(ctx, f.Data)
	if err != nil {
		return failed("Error processing Excel file: %v", err)
	}
	return tools.Result{Text: text}
}

// workbookJSON converts the workbook in data.
func (s *Set) workbookJSON(ctx context.Context, data []byte) (out string, err error) {
	// excelize reads a file from anyone; should it panic on one, that file fails, not the
	// server.
	defer func() {
		if p := recover(); p != nil {
			out, err = "", excelError("the workbook could not be read (%v)", p)
		}
	}()
	b, err := openBook(ctx, data, &s.o)
	if err != nil {
		return "", err
	}
	defer b.close()
	if len(b.sheets) == 0 {
		return "", excelError("the workbook has no sheets")
	}
	w := &jsonWriter{style: pandasCompact, max: s.o.MaxOutputBytes}
	var doc any
	if len(b.sheets) == 1 {
		doc, err = b.sheetRecords(b.sheets[0])
	} else {
		w.style = pythonIndented
		doc, err = b.allSheets()
	}
	if err != nil {
		return "", err
	}
	werr := w.write(doc)
	if ctx.Err() != nil {
		return "", context.Cause(ctx)
	}
	if werr != nil {
		return "", excelError("the JSON is over %d bytes, the most this server writes", s.o.MaxOutputBytes)
	}
	return string(w.buf), nil
}

// allSheets is every sheet's rows by sheet name.
func (b *book) allSheets() (jsonObject, error) {
	doc := make(jsonObject, 0, len(b.sheets))
	for _, sh := range b.sheets {
		recs, err := b.sheetRecords(sh)
		if err != nil {
			return nil, err
		}
		doc = append(doc, member{sh.name, recs})
	}
	return doc, nil
}

// sheetRecords reads a sheet and returns its records, written as the JSON is written.
func (b *book) sheetRecords(sh sheetRef) (iter.Seq[any], error) {
	t := &sheetTable{}
	if sh.part != "" {
		var err error
		if t, err = b.readSheet(sh.part); err != nil {
			return nil, err
		}
	}
	if limit := 8 * b.o.MaxCells; t.width > 0 && t.height > limit/t.width {
		return nil, excelError("the sheet %q spans %d rows and %d columns; this server converts at most %d cells", sh.name, t.height, t.width, limit)
	}
	return t.records(b.ctx), nil
}

// records are the table's rows after its header, each an object of its values by column name,
// as pandas reads them: the header is the first row, even an empty one, and every row up to the
// last that holds a value is a record, an empty row a record of nulls (pandas reads Excel
// sheets without skipping blank lines).
func (t *sheetTable) records(ctx context.Context) iter.Seq[any] {
	return func(yield func(any) bool) {
		if t.width == 0 {
			return
		}
		var names []string
		dense := make([]cell, t.width)
		next := 0 // the next row of t.rows
		for pos := range t.height {
			if pos%pollEvery == 0 && ctx.Err() != nil {
				return
			}
			clear(dense)
			if next < len(t.rows) && t.rows[next].pos == pos {
				for _, c := range t.rows[next].cells {
					dense[c.col] = c.c
				}
				next++
			}
			if names == nil {
				names = columnNames(dense)
				continue
			}
			if !yield(record(names, dense)) {
				return
			}
		}
	}
}

// columnNames names the columns after the header row, as pandas does: an empty header cell is
// "Unnamed: <column>", a date is the milliseconds since 1970 that to_json writes for a date
// label, and a repeated name gets ".1", ".2"… (see dedupe).
func columnNames(header []cell) []string {
	names := make([]string, len(header))
	var unnamed []int
	for i, c := range header {
		switch {
		case c.kind == cellEmpty:
			names[i] = "Unnamed: " + strconv.Itoa(i)
			unnamed = append(unnamed, i)
		case c.kind == cellNaN:
			names[i] = "nan"
		case c.label != "":
			names[i] = c.label
		default:
			names[i] = c.text
		}
	}
	return dedupe(names, unnamed)
}

// dedupe renames repeated names as pandas renames a header's: the second "A" is "A.1", the
// third "A.2", skipping a name the header already has. The unnamed columns come last, so that
// the names given keep their spelling.
func dedupe(names []string, unnamed []int) []string {
	order := make([]int, 0, len(names))
	for i := range names {
		if !slices.Contains(unnamed, i) {
			order = append(order, i)
		}
	}
	order = append(order, unnamed...)
	present := map[string]int{} // how many columns have the name now
	for _, name := range names {
		present[name]++
	}
	counts := map[string]int{}
	for _, i := range order {
		name := names[i]
		n := counts[name]
		for n > 0 {
			counts[names[i]] = n + 1
			name = fmt.Sprintf("%s.%d", names[i], n)
			if present[name] > 0 {
				n++
			} else {
				n = counts[name]
			}
		}
		present[names[i]]--
		present[name]++
		names[i] = name
		counts[name] = n + 1
	}
	return names
}

// record is one row as its record: null for empty, error and NA cells.
func record(names []string, row []cell) jsonObject {
	o := make(jsonObject, len(names))
	for i, name := range names {
		o[i] = member{key: name}
		switch c := row[i]; c.kind {
		case cellText:
			if !naStrings[c.text] {
				o[i].value = c.text
			}
		case cellValue:
			o[i].value = c.text
		}
	}
	return o
}
