package filetools_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/tools/filetools"
)

// The tools read what anyone sends. These fuzz tests feed them arbitrary input: nothing may
// panic, an answer stays within its bound, and the JSON a tool writes is JSON. Their seeds run
// with every `go test`; `go test -fuzz FuzzX ./internal/tools/filetools` explores further.

// fuzzBound is the output bound of the fuzzed tools, small so that big answers are refused.
const fuzzBound = 64 << 10

var fuzzSet = filetools.New(filetools.Options{MaxOutputBytes: fuzzBound, MaxCells: 2000, MaxUnzippedBytes: 4 << 20,
	MaxTextBytes: 1 << 20, MaxDecodedBytes: 1 << 20, MaxFileBytes: 1 << 20})

// FuzzExcel2JSON: any bytes as a workbook. An answer is refused or is JSON of at most the
// bound.
func FuzzExcel2JSON(f *testing.F) {
	f.Add(peopleBook(f))
	f.Add(rawXLSX(f, `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row><c t="e"><v>#N/A</v></c><c s="1"><v>-1e9</v></c></row>`))
	f.Add(rawXLSX(f, `<row r="3"><c r="C3" s="5"><v>2958466</v></c><c r="XFD3" t="b"><v>1</v></c></row>`))
	f.Add([]byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"))
	f.Add([]byte("PK\x03\x04"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		res := excel2json(t, fuzzSet, data)
		if res.IsError {
			if !strings.HasPrefix(res.Text, "Error processing Excel file: ") {
				t.Fatalf("refusal %q", res.Text)
			}
			return
		}
		if len(res.Text) > fuzzBound || !json.Valid([]byte(res.Text)) {
			t.Fatalf("%d bytes, valid %v: %.200s", len(res.Text), json.Valid([]byte(res.Text)), res.Text)
		}
	})
}

// FuzzExcelSheetXML: any worksheet XML in a well-formed package, so that the fuzzer works on
// the cells rather than on the zip's checksums. An answer is refused or is JSON within the
// bound.
func FuzzExcelSheetXML(f *testing.F) {
	f.Add(`<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row><c t="inlineStr"><is><r><t>x</t></r><rPh><t>y</t></rPh></is></c><c s="1"><v>1.5</v></c></row>`)
	f.Add(`<row r="2"><c r="B2" s="2"><v>43881.25</v></c><c r="C2" s="5"><v>-3</v></c><c r="D2" t="d"><v>2020-01-01T10:00:00Z</v></c></row>`)
	f.Add(`<row><c t="b"><v>0</v></c><c t="e"/><c t="str"><v>NA</v></c><c><v>1E+400</v></c></row><row r="9"/>`)
	f.Add(`<row><c r="A1" t="s"><v>2</v></c></row><row><c r="A3"><v> 7 </v></c></row>`)
	f.Fuzz(func(t *testing.T, sheetData string) {
		res := excel2json(t, fuzzSet, rawXLSX(t, sheetData))
		if res.IsError {
			if !strings.HasPrefix(res.Text, "Error processing Excel file: ") {
				t.Fatalf("refusal %q", res.Text)
			}
			return
		}
		if len(res.Text) > fuzzBound || !json.Valid([]byte(res.Text)) {
			t.Fatalf("%d bytes: %.300s", len(res.Text), res.Text)
		}
	})
}

// FuzzCharts: any data and labels. A chart is an ```echarts block of valid JSON within the
// bound, or a refusal.
func FuzzCharts(f *testing.F) {
	f.Add("1;2;3", "a;b;c", "t")
	f.Add("1.5; 2e3;1_0", "", "标题")
	f.Add("nan;inf", "x", "")
	f.Add("0x1p3;;", "\x00;\"", "\\")
	f.Add(strings.Repeat("9", 400), "a", "t")
	f.Fuzz(func(t *testing.T, data, labels, title string) {
		for _, chart := range []string{"bar_chart", "pie_chart"} {
			label := "x_axis"
			if chart == "pie_chart" {
				label = "categories"
			}
			res := invoke(t, fuzzSet, "echarts", chart, nil, jsonOf(t, map[string]any{"data": data, label: labels, "title": title}))
			if res.IsError {
				continue
			}
			_, block, ok := strings.Cut(res.Text, "```echarts\n")
			body, ok2 := strings.CutSuffix(block, "\n```")
			if !ok || !ok2 || len(body) > fuzzBound || !json.Valid([]byte(body)) {
				t.Fatalf("%s: %.300q", chart, res.Text)
			}
		}
	})
}

// FuzzBase64Decoders: any text to the decoders. Files stay within the bounds; text that the
// standard encoder wrote decodes back to its bytes.
func FuzzBase64Decoders(f *testing.F) {
	f.Add("aGVsbG8=", []byte("hello"), "\n\n")
	f.Add("data:image/png;base64,iVBORw0KGgo=\n\n====", []byte("\x89PNG\r\n\x1a\n"), "---")
	f.Add("YQ\n\nYWJjZ", []byte{}, "")
	f.Add("%%%\xff\xfe", []byte{0xff, 0}, "\\n")
	f.Fuzz(func(t *testing.T, text string, data []byte, splitter string) {
		for _, tool := range []string{"base64_file_decoder", "base64_image_decoder", "base64_decoder", "base64_to_hex", "hex_to_base64"} {
			res := invoke(t, fuzzSet, "base64_codec", tool, nil, jsonOf(t, map[string]any{"encoded_text": text, "hex_text": text, "splitter_str": splitter}))
			total := 0
			for _, file := range res.Files {
				total += len(file.Data)
			}
			if total > 1<<20 || len(res.Files) > filetools.DefaultMaxFiles || len(res.Text) > 4<<20 {
				t.Fatalf("%s: %d files, %d bytes, %d of text", tool, len(res.Files), total, len(res.Text))
			}
		}
		enc := base64.StdEncoding.EncodeToString(data)
		res := invoke(t, fuzzSet, "base64_codec", "base64_file_decoder", nil, jsonOf(t, map[string]any{"encoded_text": enc}))
		switch {
		case len(data) == 0:
			if !res.IsError || res.Text != "Empty input encoded_text" {
				t.Fatalf("empty: %+v", res)
			}
		case res.IsError || len(res.Files) != 1 || !bytes.Equal(res.Files[0].Data, data):
			t.Fatalf("%x: %+v", data, res)
		}
	})
}
