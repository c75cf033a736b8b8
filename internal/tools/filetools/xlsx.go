package filetools

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"path"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// Reading a workbook as the plugin's pandas (with openpyxl) reads it.
//
// excelize opens the file first: it checks the package against UnzipSizeLimit, which caps what
// all the parts expand to together, before anything is decompressed (archive/zip holds every
// entry to its declared size), refuses encrypted workbooks, and gives the cells' number formats.
// The cells themselves are streamed here from the worksheet XML: excelize's streaming reader
// gives cell values without their types and styles, which pandas' reading depends on (a number
// shown as a date is a date; "007" typed as text stays "007"), and its typed reads load a whole
// worksheet into memory at about 200 bytes a cell, padded out to each row's last column. The
// stream keeps only the non-empty cells, at most Options.MaxCells of them.

// cellKind is what a cell holds once read, as pandas sees it.
type cellKind uint8

const (
	// cellEmpty: no value, or an empty string (pandas reads it as "" and then as NaN).
	cellEmpty cellKind = iota
	// cellNaN: an error value (#DIV/0!…), NaN to pandas.
	cellNaN
	// cellText: a string; pandas' NA strings ("NA", "null", …) become null.
	cellText
	// cellValue: a number, a boolean or a date, spelled as str() spells it.
	cellValue
)

// cell is a cell's content: its kind and its text, and for a date or an elapsed time the
// column name it makes in a header row when that is not its text.
type cell struct {
	kind  cellKind
	text  string
	label string
}

// numberKind is what a number format makes of a number.
type numberKind uint8

const (
	numberPlain numberKind = iota
	numberDate
	numberTimedelta
)

// book is an open workbook.
type book struct {
	ctx      context.Context
	o        *Options
	xf       *excelize.File
	parts    map[string]*zip.File // by lower-case name
	date1904 bool
	sheets   []sheetRef
	shared   []string
	formats  map[int]numberKind
	// cells counts the non-empty cells read so far, all sheets together.
	cells int
}

// sheetRef is a sheet's name and its part, in workbook order.
type sheetRef struct {
	name, part string
}

// sheetTable is a sheet's non-empty cells by row, in the order pandas sees the rows.
type sheetTable struct {
	rows []tableRow
	// height is the number of rows up to the last that holds a cell (leading and inner empty
	// rows count; trailing ones do not, as pandas trims them); width the number of columns up
	// to the rightmost non-empty cell.
	height, width int
}

// tableRow is one row's non-empty cells.
type tableRow struct {
	pos   int // 0-based position among the sheet's rows
	cells []tableCell
}

// tableCell is a non-empty cell and its 0-based column.
type tableCell struct {
	col int
	c   cell
}

// Excel's bounds of a sheet.
const (
	maxSheetRows = 1 << 20
	maxSheetCols = 1 << 14
)

// excelError is a reason the workbook cannot be converted, worded for the answer.
func excelError(format string, v ...any) error { return fmt.Errorf(format, v...) }

// openBook opens the workbook in data: its parts, its sheets in workbook order, its date system
// and its shared strings.
func openBook(ctx context.Context, data []byte, o *Options) (*book, error) {
	if bytes.HasPrefix(data, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")) {
		return nil, excelError("this is a legacy .xls workbook or an encrypted one; only .xlsx workbooks are read here")
	}
	xf, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit: o.MaxUnzippedBytes,
		// Equal limits keep every part in memory, bounded by UnzipSizeLimit; lower, excelize
		// would spill the larger ones to temporary files.
		UnzipXMLSizeLimit: o.MaxUnzippedBytes,
	})
	if err != nil {
		return nil, openError(err, o.MaxUnzippedBytes)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		_ = xf.Close()
		return nil, excelError("the file is not an XLSX workbook: %v", err)
	}
	b := &book{ctx: ctx, o: o, xf: xf, parts: map[string]*zip.File{}, formats: map[int]numberKind{}}
	for _, f := range zr.File {
		b.parts[strings.ToLower(strings.ReplaceAll(f.Name, `\`, "/"))] = f
	}
	if err := b.readStructure(); err != nil {
		_ = xf.Close()
		return nil, err
	}
	return b, nil
}

// openError says why excelize refused the file.
func openError(err error, limit int64) error {
	switch {
	case strings.Contains(err.Error(), "unzip size"):
		return excelError("the workbook expands to more than %d bytes, the most this server reads", limit)
	case errors.Is(err, excelize.ErrWorkbookPassword):
		return excelError("the workbook is password protected")
	}
	return excelError("the file is not an XLSX workbook: %v", err)
}

// close releases what excelize holds of the file.
func (b *book) close() { _ = b.xf.Close() }

// readStructure finds the workbook part, its sheets, their parts and the shared strings.
func (b *book) readStructure() error {
	wbPart := "xl/workbook.xml"
	rootRels, err := b.rels("_rels/.rels", "")
	if err != nil {
		return err
	}
	for _, r := range rootRels {
		if strings.HasSuffix(r.typ, "/officeDocument") {
			wbPart = r.target
		}
	}
	dir := path.Dir(wbPart)
	wbRels, err := b.rels(path.Join(dir, "_rels", path.Base(wbPart)+".rels"), dir)
	if err != nil {
		return err
	}
	targets := map[string]string{}
	sharedPart := path.Join(dir, "sharedStrings.xml")
	for _, r := range wbRels {
		targets[r.id] = r.target
		if strings.HasSuffix(r.typ, "/sharedStrings") {
			sharedPart = r.target
		}
	}
	if err := b.readWorkbook(wbPart, targets); err != nil {
		return err
	}
	return b.readSharedStrings(sharedPart)
}

// rel is one relationship of a part.
type rel struct{ id, typ, target string }

// rels reads a relationships part; targets are resolved against dir (absolute ones from the
// package root). A missing part has none.
func (b *book) rels(name, dir string) ([]rel, error) {
	var out []rel
	err := b.walk(name, func(_ *xml.Decoder, tok xml.Token) error {
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Relationship" {
			r := rel{id: attr(se, "Id"), typ: attr(se, "Type"), target: attr(se, "Target")}
			if strings.HasPrefix(r.target, "/") {
				r.target = strings.TrimPrefix(r.target, "/")
			} else {
				r.target = path.Join(dir, r.target)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// readWorkbook reads the sheets (name and part, in order) and the date system.
func (b *book) readWorkbook(name string, targets map[string]string) error {
	if b.part(name) == nil {
		return excelError("the file is not an XLSX workbook: it has no workbook part")
	}
	return b.walk(name, func(_ *xml.Decoder, tok xml.Token) error {
		se, ok := tok.(xml.StartElement)
		if !ok {
			return nil
		}
		switch se.Name.Local {
		case "workbookPr":
			v := attr(se, "date1904")
			b.date1904 = v == "1" || strings.EqualFold(v, "true")
		case "sheet":
			// r:id is the sheet's only attribute named id (sheetId is another name).
			id := ""
			for _, a := range se.Attr {
				if a.Name.Local == "id" && a.Name.Space != "" {
					id = a.Value
				}
			}
			b.sheets = append(b.sheets, sheetRef{name: attr(se, "name"), part: targets[id]})
		}
		return nil
	})
}

// readSharedStrings reads the text of every shared string: its text runs, without the phonetic
// ones, as openpyxl reads it.
func (b *book) readSharedStrings(name string) error {
	var (
		cur        strings.Builder
		inT, inSI  bool
		phonetic   int
		maxStrings = 2 * b.o.MaxCells
	)
	return b.walk(name, func(_ *xml.Decoder, tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				inSI = true
				cur.Reset()
			case "rPh":
				phonetic++
			case "t":
				inT = inSI && phonetic == 0
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				if len(b.shared) >= maxStrings {
					return excelError("the workbook has more than %d shared strings, the most this server reads", maxStrings)
				}
				b.shared = append(b.shared, cur.String())
				inSI = false
			case "rPh":
				phonetic--
			case "t":
				inT = false
			}
		case xml.CharData:
			if inT {
				cur.Write(t)
			}
		}
		return nil
	})
}

// part is the package entry of name, nil when there is none.
func (b *book) part(name string) *zip.File { return b.parts[strings.ToLower(name)] }

// pollEvery is how many XML tokens go by between two looks at the context.
const pollEvery = 1024

// walk streams the tokens of part name to fn, stopping when ctx ends; a missing part has
// none. The entry is read no further than its declared size (archive/zip holds it there), which
// excelize has checked.
func (b *book) walk(name string, fn func(d *xml.Decoder, tok xml.Token) error) error {
	f := b.part(name)
	if f == nil {
		return nil
	}
	rc, err := f.Open()
	if err != nil {
		return excelError("the part %s cannot be read: %v", name, err)
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	d.Strict = true
	for n := 0; ; n++ {
		if n%pollEvery == 0 && b.ctx.Err() != nil {
			return context.Cause(b.ctx)
		}
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return excelError("the part %s is not well-formed XML: %v", name, err)
		}
		if err := fn(d, tok); err != nil {
			return err
		}
	}
}

// attr is the value of se's attribute of that local name.
func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// cellXML is a cell as the worksheet writes it.
type cellXML struct {
	ref, typ string
	style    int
	v        strings.Builder
	hasV     bool
	inline   strings.Builder
	hasIS    bool
}

// sheetReader is the state of one worksheet's stream.
type sheetReader struct {
	b     *book
	table sheetTable
	// pos is the position of the current row; nextPos that of the next one.
	pos, nextPos int
	row          *tableRow
	col          int // the current cell's column
	nextCol      int
	c            *cellXML
	inV, inT     bool
	phonetic     int
}

// readSheet reads the worksheet part name.
func (b *book) readSheet(name string) (*sheetTable, error) {
	r := &sheetReader{b: b}
	if err := b.walk(name, r.token); err != nil {
		return nil, err
	}
	r.endRow()
	return &r.table, nil
}

// token takes the worksheet's next XML token: the text of a cell's value or inline string is
// gathered, phonetic runs left out.
func (r *sheetReader) token(_ *xml.Decoder, tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		return r.start(t)
	case xml.EndElement:
		return r.end(t.Name.Local)
	case xml.CharData:
		switch {
		case r.c == nil:
		case r.inV:
			r.c.v.Write(t)
		case r.inT && r.phonetic == 0:
			r.c.inline.Write(t)
		}
	}
	return nil
}

// start opens a row (at its position), a cell (at its column), or a part of a cell.
func (r *sheetReader) start(se xml.StartElement) error {
	switch se.Name.Local {
	case "row":
		r.endRow()
		// Rows come in the order of the file; a row numbered past the next position leaves
		// empty rows before it, as openpyxl fills them in.
		r.pos = r.nextPos
		if n, err := strconv.Atoi(attr(se, "r")); err == nil && n-1 > r.pos {
			if n > maxSheetRows {
				return excelError("row %d is past the last row of a sheet", n)
			}
			r.pos = n - 1
		}
		r.nextPos = r.pos + 1
		r.row = &tableRow{pos: r.pos}
		r.nextCol = 0
	case "c":
		if r.row == nil {
			return nil
		}
		r.c = &cellXML{ref: attr(se, "r"), typ: attr(se, "t")}
		r.c.style, _ = strconv.Atoi(attr(se, "s"))
		r.col = r.nextCol
		if r.c.ref != "" {
			col, _, err := excelize.SplitCellName(r.c.ref)
			if err == nil {
				r.col, err = excelize.ColumnNameToNumber(col)
				r.col--
			}
			if err != nil || r.col < 0 || r.col >= maxSheetCols {
				return excelError("the cell reference %q is not one of a sheet", r.c.ref)
			}
		}
		r.nextCol = r.col + 1
	case "v":
		if r.c != nil {
			r.inV, r.c.hasV = true, true
		}
	case "is":
		if r.c != nil {
			r.c.hasIS = true
		}
	case "rPh":
		r.phonetic++
	case "t":
		r.inT = r.c != nil && r.c.hasIS
	}
	return nil
}

// end closes a part of a cell, a cell (converted, and kept when it holds a value) or a row.
func (r *sheetReader) end(local string) error {
	switch local {
	case "v":
		r.inV = false
	case "t":
		r.inT = false
	case "rPh":
		r.phonetic--
	case "c":
		if r.c == nil {
			return nil
		}
		c, err := r.b.convert(r.c)
		r.c = nil
		if err != nil {
			return err
		}
		if c.kind == cellEmpty {
			return nil
		}
		if r.b.cells++; r.b.cells > r.b.o.MaxCells {
			return excelError("the workbook has more than %d non-empty cells, the most this server converts", r.b.o.MaxCells)
		}
		r.row.cells = append(r.row.cells, tableCell{col: r.col, c: c})
	case "row":
		r.endRow()
	}
	return nil
}

// endRow keeps the current row if it holds a cell.
func (r *sheetReader) endRow() {
	if r.row == nil {
		return
	}
	if len(r.row.cells) > 0 {
		r.table.rows = append(r.table.rows, *r.row)
		r.table.height = r.row.pos + 1
		for _, c := range r.row.cells {
			r.table.width = max(r.table.width, c.col+1)
		}
	}
	r.row = nil
}

// convert reads a cell as openpyxl reads it and pandas then converts it.
func (b *book) convert(c *cellXML) (cell, error) {
	v := c.v.String()
	text := func(s string) (cell, error) {
		if s == "" {
			return cell{}, nil
		}
		return cell{kind: cellText, text: s}, nil
	}
	switch c.typ {
	case "s":
		if !c.hasV {
			return cell{}, nil
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 || i >= len(b.shared) {
			return cell{}, excelError("cell %s refers to shared string %q, which the workbook does not have", c.ref, v)
		}
		return text(b.shared[i])
	case "inlineStr":
		return text(c.inline.String())
	case "str":
		return text(v)
	case "e":
		// pandas reads an error as NaN, but a cell with no value first as "".
		if !c.hasV {
			return cell{}, nil
		}
		return cell{kind: cellNaN}, nil
	case "b":
		if !c.hasV || v == "" {
			return cell{}, nil
		}
		n, ok := pyInt(v)
		if !ok {
			return cell{}, excelError("cell %s holds %q, not a boolean", c.ref, v)
		}
		return cell{kind: cellValue, text: map[bool]string{true: "True", false: "False"}[n != "0"]}, nil
	case "d":
		if s, ok := pyISODate(strings.TrimSpace(v)); ok {
			return cell{kind: cellValue, text: s}, nil
		}
		return text(v)
	}
	if !c.hasV || v == "" {
		return cell{}, nil
	}
	return b.number(c, v)
}

// number reads a numeric cell: an integer unless its text has a point or an exponent (as
// openpyxl reads it), then a date if its format shows one, else as pandas converts it (a float
// that is a whole number becomes that integer) and str() spells it.
func (b *book) number(c *cellXML, v string) (cell, error) {
	var (
		f       float64
		integer string
		isInt   bool
	)
	if strings.ContainsAny(v, ".eE") {
		var ok bool
		if f, ok = pyFloat(v); !ok {
			return cell{}, excelError("cell %s holds %q, not a number", c.ref, v)
		}
	} else {
		if integer, isInt = pyInt(v); !isInt {
			return cell{}, excelError("cell %s holds %q, not a number", c.ref, v)
		}
		f, _ = strconv.ParseFloat(integer, 64)
	}
	switch b.numberKind(c.style) {
	case numberDate:
		if s, label, ok := pyDatetime(f, b.date1904); ok {
			return cell{kind: cellValue, text: s, label: label}, nil
		}
		return cell{kind: cellNaN}, nil // openpyxl: #VALUE!
	case numberTimedelta:
		if s, label, ok := pyTimedelta(f); ok {
			return cell{kind: cellValue, text: s, label: label}, nil
		}
		return cell{kind: cellNaN}, nil
	}
	if isInt {
		return cell{kind: cellValue, text: integer}, nil
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return cell{}, excelError("cell %s holds %q, which has no integer or decimal form", c.ref, v)
	}
	if f == math.Trunc(f) {
		i, _ := big.NewFloat(f).Int(nil)
		return cell{kind: cellValue, text: i.String()}, nil
	}
	return cell{kind: cellValue, text: pyFloatRepr(f)}, nil
}

// numberKind is what style's number format makes of a number, as openpyxl decides it.
func (b *book) numberKind(style int) numberKind {
	if k, ok := b.formats[style]; ok {
		return k
	}
	k := numberPlain
	if st, err := b.xf.GetStyle(style); err == nil && st != nil {
		code := builtinFormats[st.NumFmt]
		if st.CustomNumFmt != nil {
			code = *st.CustomNumFmt
		}
		switch {
		case isTimedeltaFormat(code):
			k = numberTimedelta
		case isDateFormat(code):
			k = numberDate
		}
	}
	b.formats[style] = k
	return k
}
