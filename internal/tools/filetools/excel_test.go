package filetools_test

import (
	"archive/zip"
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/filetools"
)

const excelTools = "qiangxinglin/excel_tools/excel_tools"

// excel2json calls excel2json of s with the workbook.
func excel2json(t testing.TB, s *filetools.Set, data []byte) tools.Result {
	t.Helper()
	return invoke(t, s, excelTools, "excel2json", nil, fileArgs(t, "file", tools.FileArg{Filename: "book.xlsx", Data: data}, nil))
}

// workbook builds an XLSX file with excelize: fill gets the file and the first sheet's name.
func workbook(t testing.TB, fill func(f *excelize.File, sheet string)) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	fill(f, f.GetSheetName(0))
	buf, err := f.WriteToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// set sets cells of sheet from a map of cell name to value.
func set(t testing.TB, f *excelize.File, sheet string, cells map[string]any) {
	t.Helper()
	for name, v := range cells {
		if err := f.SetCellValue(sheet, name, v); err != nil {
			t.Fatal(err)
		}
	}
}

// peopleBook is one sheet with the cell types an XLSX holds: text (one that looks like a
// number, one of pandas' NA strings, one with a slash), integers and floats, a date, a date and
// time, a time of day, booleans; a repeated and an empty header; an empty row inside the table
// and a styled but empty row after it.
func peopleBook(t testing.TB) []byte {
	return workbook(t, func(f *excelize.File, sheet string) {
		set(t, f, sheet, map[string]any{
			"A1": "Name", "B1": "Age", "C1": "Joined", "D1": "Score", "E1": "Code", "F1": "Name", "H1": "Flag",
			"A2": "John", "B2": 18, "C2": time.Date(2020, 2, 20, 0, 0, 0, 0, time.UTC), "D2": 1.5, "E2": "007", "F2": "J. Smith", "G2": "g", "H2": true,
			"A3": "Doe", "B3": 20, "C3": time.Date(2020, 2, 2, 12, 30, 0, 0, time.UTC), "D3": 2.0, "E3": "NA", "F3": "a/b", "H3": false,
			"A5": `Zoë "Q"`, "B5": 1e20, "C5": 0.5, "D5": 0.125, "E5": " ",
		})
		timeOfDay := "hh:mm"
		style, err := f.NewStyle(&excelize.Style{CustomNumFmt: &timeOfDay})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.SetCellStyle(sheet, "C5", "C5", style); err != nil {
			t.Fatal(err)
		}
		if err := f.SetCellStyle(sheet, "A6", "H6", style); err != nil {
			t.Fatal(err)
		}
	})
}

// TestExcelOneSheet: a workbook of one sheet is the list of its records in pandas' compact JSON
// (its "/" escaped), every value the string pandas reads with dtype=str: integers as written,
// whole floats as integers, dates as Python's str() spells them, booleans as True and False;
// empty cells, NA strings and errors null; an empty header is "Unnamed: <column>" and a
// repeated one gets ".1"; an empty row inside the table is a record of nulls, and trailing rows
// without values are no records.
func TestExcelOneSheet(t *testing.T) {
	t.Parallel()
	res := excel2json(t, filetools.New(filetools.Options{}), peopleBook(t))
	want := `[{"Name":"John","Age":"18","Joined":"2020-02-20 00:00:00","Score":"1.5","Code":"007","Name.1":"J. Smith","Unnamed: 6":"g","Flag":"True"},` +
		`{"Name":"Doe","Age":"20","Joined":"2020-02-02 12:30:00","Score":"2","Code":null,"Name.1":"a\/b","Unnamed: 6":null,"Flag":"False"},` +
		`{"Name":null,"Age":null,"Joined":null,"Score":null,"Code":null,"Name.1":null,"Unnamed: 6":null,"Flag":null},` +
		`{"Name":"Zoë \"Q\"","Age":"100000000000000000000","Joined":"12:00:00","Score":"0.125","Code":" ","Name.1":null,"Unnamed: 6":null,"Flag":null}]`
	if res.IsError || res.Text != want {
		t.Fatalf("got  %s\nwant %s", res.Text, want)
	}
}

// TestExcelSheets: a workbook of several sheets is an object of each sheet's records by name,
// in json.dumps' indented layout ("/" as it is); an empty sheet has none; the header is the
// first row even when it is empty, and blank rows are records, in a one-column sheet too.
func TestExcelSheets(t *testing.T) {
	t.Parallel()
	data := workbook(t, func(f *excelize.File, sheet string) {
		if err := f.SetSheetName(sheet, "A"); err != nil {
			t.Fatal(err)
		}
		set(t, f, "A", map[string]any{"A1": "x", "B1": "y", "A2": 1, "B2": "a/b"})
		for _, name := range []string{"B", "C"} {
			if _, err := f.NewSheet(name); err != nil {
				t.Fatal(err)
			}
		}
		set(t, f, "C", map[string]any{"A2": "  ", "A3": "H", "A4": "x", "A6": "y"})
	})
	res := excel2json(t, filetools.New(filetools.Options{}), data)
	want := `{
  "A": [
    {
      "x": "1",
      "y": "a/b"
    }
  ],
  "B": [],
  "C": [
    {
      "Unnamed: 0": "  "
    },
    {
      "Unnamed: 0": "H"
    },
    {
      "Unnamed: 0": "x"
    },
    {
      "Unnamed: 0": null
    },
    {
      "Unnamed: 0": "y"
    }
  ]
}`
	if res.IsError || res.Text != want {
		t.Fatalf("got\n%s\nwant\n%s", res.Text, want)
	}
}

// rawXLSX is a workbook written part by part, for what excelize does not write: the 1904 date
// system, elapsed-time and custom formats, inline and formula strings, error cells, rich and
// phonetic shared strings, and a missing row.
func rawXLSX(t testing.TB, sheetData string) []byte {
	t.Helper()
	const main = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
			`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>` +
			`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>` +
			`<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>` +
			`<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook ` + main + ` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">` +
			`<workbookPr date1904="1"/><sheets><sheet name="Odd" sheetId="7" r:id="rId1"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>` +
			`<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="/xl/sharedStrings.xml"/></Relationships>`},
		{"xl/styles.xml", `<?xml version="1.0" encoding="UTF-8"?><styleSheet ` + main + `><numFmts count="4">` +
			`<numFmt numFmtId="164" formatCode="[h]:mm:ss"/><numFmt numFmtId="165" formatCode="yyyy-mm-dd;@"/>` +
			`<numFmt numFmtId="166" formatCode="0.00&quot;h&quot;"/><numFmt numFmtId="167" formatCode="[Red]0.00"/></numFmts>` +
			`<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts><fills count="1"><fill><patternFill patternType="none"/></fill></fills>` +
			`<borders count="1"><border/></borders><cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>` +
			`<cellXfs count="6"><xf numFmtId="0"/><xf numFmtId="164" applyNumberFormat="1"/><xf numFmtId="165"/><xf numFmtId="166"/><xf numFmtId="167"/><xf numFmtId="14"/></cellXfs></styleSheet>`},
		{"xl/sharedStrings.xml", `<?xml version="1.0" encoding="UTF-8"?><sst ` + main + ` count="3" uniqueCount="3">` +
			`<si><t>Key</t></si><si><r><t>Va</t></r><r><rPr><b/></rPr><t>lue</t></r><rPh sb="0" eb="1"><t>バリュー</t></rPh></si><si><t>null</t></si></sst>`},
		{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8"?><worksheet ` + main + `><sheetData>` + sheetData + `</sheetData></worksheet>`},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range parts {
		w, err := zw.Create(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(p[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExcelCellTypes: what openpyxl reads from each kind of cell, as pandas then writes it.
func TestExcelCellTypes(t *testing.T) {
	t.Parallel()
	data := rawXLSX(t, `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>`+
		`<row r="2"><c r="A2" t="inlineStr"><is><t>elapsed</t></is></c><c r="B2" s="1"><v>1.5</v></c></row>`+
		`<row r="3"><c r="A3" t="str"><f>"date1904"</f><v>date1904</v></c><c r="B3" s="2"><v>1</v></c></row>`+
		`<row r="5"><c r="A5" t="inlineStr"><is><r><t>er</t></r><r><t>r</t></r></is></c><c r="B5" t="e"><v>#DIV/0!</v></c><c r="C5" t="e"><f>1/0</f></c></row>`+
		`<row r="6"><c t="inlineStr"><is><t>quoted h</t></is></c><c s="3"><v>2.25</v></c></row>`+
		`<row><c r="A7" t="inlineStr"><is><t>red</t></is></c><c r="B7" s="4"><v>3</v></c></row>`+
		`<row r="8"><c r="A8" t="inlineStr"><is><t>builtin date</t></is></c><c r="B8" s="5"><v>1</v></c></row>`+
		`<row r="9"><c r="A9" t="s"><v>2</v></c><c r="B9" t="b"><v>1</v></c></row>`+
		`<row r="10"><c r="A10" t="inlineStr"><is><t>neg td</t></is></c><c r="B10" s="1"><v>-0.25</v></c></row>`+
		`<row r="11"><c r="A11" t="inlineStr"><is><t>precise</t></is></c><c r="B11"><v>0.30000000000000004</v></c></row>`+
		`<row r="12"><c r="A12" t="inlineStr"><is><t>exponents</t></is></c><c r="B12"><v>1.5E-7</v></c><c r="C12"><v>1E+20</v></c></row>`+
		`<row r="13"><c r="A13" s="2"/><c r="B13" t="s"/><c r="C13"><f>A1</f></c></row>`)
	res := excel2json(t, filetools.New(filetools.Options{}), data)
	// C12 widens the table: every record has its column, "Unnamed: 2" for its empty header.
	want := `[{"Key":"elapsed","Value":"1 day, 12:00:00","Unnamed: 2":null},{"Key":"date1904","Value":"1904-01-02 00:00:00","Unnamed: 2":null},` +
		`{"Key":null,"Value":null,"Unnamed: 2":null},{"Key":"err","Value":null,"Unnamed: 2":null},{"Key":"quoted h","Value":"2.25","Unnamed: 2":null},` +
		`{"Key":"red","Value":"3","Unnamed: 2":null},{"Key":"builtin date","Value":"1904-01-02 00:00:00","Unnamed: 2":null},` +
		`{"Key":null,"Value":"True","Unnamed: 2":null},{"Key":"neg td","Value":"-1 day, 18:00:00","Unnamed: 2":null},` +
		`{"Key":"precise","Value":"0.30000000000000004","Unnamed: 2":null},{"Key":"exponents","Value":"1.5e-07","Unnamed: 2":"100000000000000000000"}]`
	if res.IsError || res.Text != want {
		t.Fatalf("got  %s\nwant %s", res.Text, want)
	}
	for sheet, msg := range map[string]string{
		`<row><c r="A1" t="s"><v>9</v></c></row>`: "refers to shared string",
		`<row><c r="A1"><v>abc</v></c></row>`:     `holds "abc", not a number`,
		`<row><c r="1A"><v>1</v></c></row>`:       "is not one of a sheet",
		`<row r="2000000"><c><v>1</v></c></row>`:  "past the last row",
		`<row><c><v>1</c></row>`:                  "not well-formed XML",
	} {
		wantError(t, excel2json(t, filetools.New(filetools.Options{}), rawXLSX(t, sheet)), msg)
	}
}

// TestExcelRefusals: what is not an XLSX workbook, or is over a bound, is refused with an
// answer saying why.
func TestExcelRefusals(t *testing.T) {
	t.Parallel()
	people := peopleBook(t)
	for _, tc := range []struct {
		o    filetools.Options
		data []byte
		want string
	}{
		{filetools.Options{}, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest of an old workbook"), "this is a legacy .xls workbook"},
		{filetools.Options{}, []byte("Name,Age\nJohn,18\n"), "not an XLSX workbook"},
		{filetools.Options{MaxFileBytes: 100}, people, "this server reads at most 100"},
		{filetools.Options{MaxCells: 8}, people, "more than 8 non-empty cells"},
		{filetools.Options{MaxCells: 5}, people, "more than 10 shared strings"},
		{filetools.Options{MaxOutputBytes: 100}, people, "over 100 bytes"},
		{filetools.Options{MaxUnzippedBytes: 2000}, people, "expands to more than 2000 bytes"},
	} {
		res := excel2json(t, filetools.New(tc.o), tc.data)
		wantError(t, res, tc.want)
		wantError(t, res, "Error processing Excel file: ")
	}
	// The cells of all sheets count together.
	twoSheets := workbook(t, func(f *excelize.File, sheet string) {
		if _, err := f.NewSheet("Other"); err != nil {
			t.Fatal(err)
		}
		for _, sh := range []string{sheet, "Other"} {
			set(t, f, sh, map[string]any{"A1": 1, "B1": 2, "A2": 3, "B2": 4, "A3": 5})
		}
	})
	wantError(t, excel2json(t, filetools.New(filetools.Options{MaxCells: 8}), twoSheets), "more than 8 non-empty cells")
	if res := excel2json(t, filetools.New(filetools.Options{MaxCells: 10}), twoSheets); res.IsError {
		t.Fatalf("at the bound: %+v", res)
	}
	// Two cells far apart make a table of 16384 columns: refused before it is written.
	far := workbook(t, func(f *excelize.File, sheet string) { set(t, f, sheet, map[string]any{"A1": "h", "XFD1000": 1}) })
	wantError(t, excel2json(t, filetools.New(filetools.Options{MaxCells: 10}), far), "spans 1000 rows and 16384 columns; this server converts at most 80 cells")
	wantError(t, invoke(t, filetools.New(filetools.Options{}), excelTools, "excel2json", nil, `{}`), "Error processing Excel file: no file was given")
}

// TestExcelSharedStringFanOut: one long shared string in many cells expands past the output
// bound; it is refused there, without building the expansion.
func TestExcelSharedStringFanOut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000)
	data := workbook(t, func(f *excelize.File, sheet string) {
		set(t, f, sheet, map[string]any{"A1": "h"})
		for i := 2; i < 1000; i++ {
			cell, _ := excelize.CoordinatesToCellName(1, i)
			set(t, f, sheet, map[string]any{cell: long})
		}
	})
	if len(data) > 200_000 {
		t.Fatalf("the test file is %d bytes; the string should be stored once", len(data))
	}
	wantError(t, excel2json(t, filetools.New(filetools.Options{}), data), "over 8388608 bytes")
}

// TestExcelZipBomb: a small file whose worksheet expands to 40 MiB is refused by excelize's
// UnzipSizeLimit before it is expanded. Not parallel, so that the allocations counted are its
// own.
func TestExcelZipBomb(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	good := rawXLSX(t, "")
	zr, err := zip.NewReader(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		w, err := zw.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == "xl/worksheets/sheet1.xml" {
			_, _ = w.Write([]byte(`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`))
			pad := bytes.Repeat([]byte(" "), 1<<20)
			for range 40 {
				_, _ = w.Write(pad)
			}
			_, _ = w.Write([]byte(`</sheetData></worksheet>`))
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var part bytes.Buffer
		_, _ = part.ReadFrom(rc)
		_ = rc.Close()
		_, _ = w.Write(part.Bytes())
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	bomb := buf.Bytes()
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := excel2json(t, filetools.New(filetools.Options{}), bomb)
	runtime.ReadMemStats(&after)
	wantError(t, res, "expands to more than 33554432 bytes")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("refusing the bomb allocated %d bytes", alloc)
	}
}
