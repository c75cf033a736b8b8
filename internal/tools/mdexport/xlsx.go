package mdexport

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"github.com/parleyhq/parley/internal/tools"
)

// maxSheets bounds the worksheets of one workbook (one per table).
const maxSheets = 255

// convertXLSX is md_to_xlsx: one workbook, a worksheet per table named after the heading before
// it (Sheet1, Sheet2… without one), the column names in bold on the first row. With
// force_text_value "true" (the default) every cell is text, as the plugin makes them to keep
// numbers exactly as written; with "false" a cell that reads as a number is a number.
func convertXLSX(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	tables, err := dataTables(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	if len(tables) > maxSheets {
		return nil, "", fmt.Errorf("the text has %d tables; a workbook made here has at most %d worksheets", len(tables), maxSheets)
	}
	data, err := workbook(ctx, tables, in.args.flag("force_text_value", true))
	if err != nil {
		return nil, "", err
	}
	return single(in, ".xlsx", mimeXLSX, data)
}

// workbook writes the tables as worksheets of one workbook.
func workbook(ctx context.Context, tables []dataTable, forceText bool) ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	bold, err := f.NewStyle(&excelize.Style{Font: &excelize.Font{Bold: true}})
	if err != nil {
		return nil, fmt.Errorf("xlsx style: %w", err)
	}
	taken := map[string]bool{}
	for i, t := range tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(t.columns) > excelize.MaxColumns {
			return nil, fmt.Errorf("table %d has %d columns; a worksheet holds at most %d", i+1, len(t.columns), excelize.MaxColumns)
		}
		name := sheetName(t.heading, i, taken)
		if i == 0 {
			err = f.SetSheetName("Sheet1", name)
		} else {
			_, err = f.NewSheet(name)
		}
		if err != nil {
			return nil, fmt.Errorf("worksheet %q: %w", name, err)
		}
		if err := writeSheet(ctx, f, name, t, bold, forceText); err != nil {
			return nil, err
		}
	}
	buf := newLimitedBuffer()
	if _, err := f.WriteTo(buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeSheet writes one table through excelize's stream writer, which keeps the rows out of
// memory as they are written.
func writeSheet(ctx context.Context, f *excelize.File, name string, t dataTable, bold int, forceText bool) error {
	sw, err := f.NewStreamWriter(name)
	if err != nil {
		return fmt.Errorf("worksheet %q: %w", name, err)
	}
	for col, w := range columnWidths(t) {
		if err := sw.SetColWidth(col+1, col+1, w); err != nil {
			return fmt.Errorf("worksheet %q: %w", name, err)
		}
	}
	header := make([]any, len(t.columns))
	for i, c := range t.columns {
		header[i] = excelize.Cell{StyleID: bold, Value: cellValue(c)}
	}
	if err := sw.SetRow("A1", header); err != nil {
		return fmt.Errorf("worksheet %q: %w", name, err)
	}
	for r, row := range t.rows {
		if r%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		values := make([]any, len(row))
		for i, v := range row {
			values[i] = cellValue(v)
			if n, ok := number(v); ok && !forceText {
				values[i] = n
			}
		}
		cellName, _ := excelize.CoordinatesToCellName(1, r+2)
		if err := sw.SetRow(cellName, values); err != nil {
			return fmt.Errorf("worksheet %q row %d: %w", name, r+2, err)
		}
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("worksheet %q: %w", name, err)
	}
	return nil
}

// columnWidths fits each column to its longest text (in characters, as Excel measures width),
// within bounds, as the plugin's autofit does.
func columnWidths(t dataTable) []float64 {
	widths := make([]float64, len(t.columns))
	fit := func(i int, s string) {
		w := float64(min(utf8.RuneCountInString(s), 80)) + 2
		widths[i] = max(widths[i], w)
	}
	for i, c := range t.columns {
		fit(i, c)
	}
	for _, row := range t.rows {
		for i, v := range row {
			fit(i, v)
		}
	}
	return widths
}

// cellValue is s within the characters a cell holds.
func cellValue(s string) string {
	if utf8.RuneCountInString(s) <= excelize.TotalCellChars {
		return s
	}
	return string([]rune(s)[:excelize.TotalCellChars])
}

// numberText is a number as a table cell writes it: decimal, with an optional sign, fraction,
// exponent, or thousands grouped by commas (pandas reads "1,234" as a number too).
var numberText = regexp.MustCompile(`^[-+]?(\d+(\.\d*)?|\.\d+|\d{1,3}(,\d{3})+(\.\d+)?)([eE][-+]?\d+)?$`)

// number is the value of a cell that reads as a number.
func number(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if !numberText.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	return n, err == nil
}

// sheetName is the worksheet name of the i-th table: its heading made a valid name (at most 30
// characters, as the plugin cuts it, without the characters Excel refuses), else "Sheet<i+1>",
// numbered when taken (Excel compares names without case).
func sheetName(heading string, i int, taken map[string]bool) string {
	name := strings.Map(func(r rune) rune {
		if strings.ContainsRune(`[]:*?/\`, r) {
			return ' '
		}
		return r
	}, heading)
	name = strings.Trim(strings.Join(strings.Fields(name), " "), "'")
	name = cutRunes(name, 30)
	if name == "" || strings.EqualFold(name, "History") {
		name = "Sheet" + strconv.Itoa(i+1)
	}
	base := name
	for n := 2; taken[strings.ToLower(name)]; n++ {
		suffix := " (" + strconv.Itoa(n) + ")"
		name = cutRunes(base, 30-len(suffix)) + suffix
	}
	taken[strings.ToLower(name)] = true
	return name
}

// cutRunes is s cut to at most n characters, counted as Excel counts them (UTF-16 units).
func cutRunes(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}
