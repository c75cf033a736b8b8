package mdexport

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/tools"
)

// maxFiles bounds the files one call makes (a file per table or per code block): Parley keeps
// at most 50 files of one answer.
const maxFiles = 50

// dataTable is a Markdown table as the table tools convert it: the plugin reads the tables with
// pandas, so a table is its column names and rows of plain text, and the nearest heading before
// it suggests a worksheet name.
type dataTable struct {
	heading string
	columns []string
	align   []alignment
	rows    [][]string
}

// dataTables parses md and returns its tables, in order; errNoTables when there is none. A table
// without body rows is left out, as pandas drops empty tables.
func dataTables(ctx context.Context, md string) ([]dataTable, error) {
	doc, err := newDocument(ctx, md)
	if err != nil {
		return nil, err
	}
	var out []dataTable
	heading := ""
	walkBlocks(doc.blocks, func(b *block) {
		switch {
		case b.kind == kindHeading:
			heading = strings.TrimSpace(plain(b.spans))
		case b.kind == kindTable && len(b.table.rows) > 0:
			out = append(out, newDataTable(heading, b.table))
		}
	})
	if len(out) == 0 {
		return nil, errNoTables
	}
	return out, nil
}

// walkBlocks calls fn for each block in document order, the blocks inside lists and quotes
// included.
func walkBlocks(bs []block, fn func(*block)) {
	for i := range bs {
		b := &bs[i]
		fn(b)
		walkBlocks(b.children, fn)
		for _, it := range b.items {
			walkBlocks(it.blocks, fn)
		}
	}
}

// newDataTable is t as plain text, its column names as pandas makes them.
func newDataTable(heading string, t *table) dataTable {
	d := dataTable{heading: heading, align: t.align}
	names := make([]string, len(t.header))
	for i, c := range t.header {
		names[i] = cellText(c)
	}
	d.columns = columnNames(names)
	for _, row := range t.rows {
		r := make([]string, len(row))
		for i, c := range row {
			r[i] = cellText(c)
		}
		d.rows = append(d.rows, r)
	}
	return d
}

// cellText is a cell's text on one line, as pandas reads an HTML cell.
func cellText(c cell) string {
	return strings.TrimSpace(strings.ReplaceAll(plain(c), "\n", " "))
}

// columnNames names the columns as pandas does: an empty name is "Unnamed: i" (from 0), and a
// name taken already gets ".1", ".2"… (pandas' deduplication of column names).
func columnNames(names []string) []string {
	out := make([]string, len(names))
	counts := map[string]int{}
	for i, name := range names {
		if name == "" {
			name = "Unnamed: " + strconv.Itoa(i)
		}
		n := counts[name]
		for n > 0 {
			counts[name] = n + 1
			name += "." + strconv.Itoa(n)
			n = counts[name]
		}
		out[i] = name
		counts[name] = n + 1
	}
	return out
}

// tableFiles names and adds one file per table, as the plugin does for CSV, JSON and LaTeX.
func tableFiles(in convertInput, tables []dataTable, ext, mimeType string, render func(dataTable) ([]byte, error)) ([]tools.File, string, error) {
	if len(tables) > maxFiles {
		return nil, "", fmt.Errorf("the text has %d tables; at most %d files are made by one call", len(tables), maxFiles)
	}
	names := fileNames(in.filename(), defaultStem, ext, len(tables))
	var f files
	for i, t := range tables {
		data, err := render(t)
		if err != nil {
			return nil, "", err
		}
		if err := f.add(names[i], mimeType, data); err != nil {
			return nil, "", err
		}
	}
	return f.list, "", nil
}

// convertCSV is md_to_csv: a CSV file per table, its header the column names, as pandas writes
// them (comma separated, quoted where needed, UTF-8, LF line ends).
func convertCSV(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	tables, err := dataTables(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	return tableFiles(in, tables, ".csv", mimeCSV, func(t dataTable) ([]byte, error) {
		buf := newLimitedBuffer()
		w := csv.NewWriter(buf)
		if err := w.Write(t.columns); err != nil {
			return nil, err
		}
		if err := w.WriteAll(t.rows); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}

// JSON output styles of md_to_json. The plugin's tool code spells the array style "json" where
// its parameter says "json_array"; both are taken.
const (
	jsonLines = "jsonl"
	jsonArray = "json_array"
)

// convertJSON is md_to_json: a JSON file per table, each row an object of the column names to
// the cell texts in column order; one object per line (output_style jsonl, the default) or an
// array of them (json_array).
func convertJSON(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	style := strings.ToLower(strings.TrimSpace(in.args.text("output_style")))
	switch style {
	case "", jsonLines:
		style = jsonLines
	case jsonArray, "json":
		style = jsonArray
	default:
		return nil, "", fmt.Errorf("output_style %q is not one of jsonl and json_array", style)
	}
	tables, err := dataTables(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	return tableFiles(in, tables, ".json", mimeJSON, func(t dataTable) ([]byte, error) {
		return tableJSON(t, style)
	})
}

// tableJSON writes the rows of t as JSON objects in style.
func tableJSON(t dataTable, style string) ([]byte, error) {
	buf := newLimitedBuffer()
	if style == jsonArray {
		buf.WriteByte('[')
	}
	for i, row := range t.rows {
		if i > 0 && style == jsonArray {
			buf.WriteByte(',')
		}
		buf.WriteByte('{')
		for j, v := range row {
			if j > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(&buf.Buffer, t.columns[j])
			buf.WriteByte(':')
			writeJSONString(&buf.Buffer, v)
		}
		buf.WriteByte('}')
		if style == jsonLines {
			buf.WriteByte('\n')
		}
		if buf.Len() > buf.max {
			return nil, errOutputTooLarge
		}
	}
	if style == jsonArray {
		buf.WriteByte(']')
	}
	return buf.Bytes(), nil
}

// writeJSONString writes s as a JSON string, non-ASCII characters as they are (pandas'
// force_ascii=False) and without HTML escapes.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// convertLaTeX is md_to_latex: a LaTeX document per table, the table a booktabs tabular, as
// pandas' to_latex writes it inside the plugin's document. Unlike pandas (which leaves the text
// as it is), the cell text is escaped, so that the file compiles whatever the cells hold; the
// columns are aligned as the Markdown says.
func convertLaTeX(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	tables, err := dataTables(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	return tableFiles(in, tables, ".tex", mimeLaTeX, func(t dataTable) ([]byte, error) {
		buf := newLimitedBuffer()
		buf.WriteString("\\documentclass[]{article}\n\\usepackage{booktabs}\n\\begin{document}\n\n")
		buf.WriteString("\\begin{tabular}{")
		for _, a := range t.align {
			buf.WriteByte(map[alignment]byte{alignNone: 'l', alignLeft: 'l', alignCenter: 'c', alignRight: 'r'}[a])
		}
		buf.WriteString("}\n\\toprule\n")
		writeLaTeXRow(buf, t.columns)
		buf.WriteString("\\midrule\n")
		for _, row := range t.rows {
			writeLaTeXRow(buf, row)
			if buf.Len() > buf.max {
				return nil, errOutputTooLarge
			}
		}
		buf.WriteString("\\bottomrule\n\\end{tabular}\n\n\\end{document}\n")
		return buf.Bytes(), nil
	})
}

// writeLaTeXRow writes one row of a tabular.
func writeLaTeXRow(buf *limitedBuffer, cells []string) {
	for i, c := range cells {
		if i > 0 {
			buf.WriteString(" & ")
		}
		buf.WriteString(latexEscape(c))
	}
	buf.WriteString(" \\\\\n")
}

// latexReplacer escapes the characters LaTeX gives a meaning to.
var latexReplacer = strings.NewReplacer(
	`\`, `\textbackslash{}`, `&`, `\&`, `%`, `\%`, `$`, `\$`, `#`, `\#`, `_`, `\_`,
	`{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`,
)

// latexEscape is s as LaTeX text.
func latexEscape(s string) string { return latexReplacer.Replace(s) }

// shareWidths shares total among columns of natural widths, as docx and PDF tables lay them
// out: a column narrower than an even share of what is left keeps its width, and the wider ones
// share what remains in proportion to theirs, each at least floor. It returns the widths, what
// the narrow columns left, and how many columns shared it.
func shareWidths[T int | float64](natural []T, total, floor T) (out []T, left T, flexible int) {
	out = make([]T, len(natural))
	fixed := make([]bool, len(natural))
	left, flexible = total, len(natural)
	for changed := true; changed && flexible > 0; {
		changed = false
		share := left / T(flexible)
		for i, v := range natural {
			if !fixed[i] && v <= share {
				fixed[i], out[i] = true, v
				left -= v
				flexible--
				changed = true
			}
		}
	}
	var wide T
	for i, v := range natural {
		if !fixed[i] {
			wide += v
		}
	}
	for i, v := range natural {
		if !fixed[i] {
			out[i] = max(left*v/wide, floor)
		}
	}
	return out, left, flexible
}
