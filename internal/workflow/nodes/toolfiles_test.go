package nodes_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/parleyhq/parley/internal/tools/filetools"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/nodes"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// fileToolGraph is start → a tool node of provider/name with the parameters → an answer of its
// text.
func fileToolGraph(provider, name string, params map[string]any) []any {
	return []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("x", "tool", map[string]any{"provider_type": "builtin", "provider_id": provider, "tool_name": name, "tool_parameters": params}),
		nodeOf("a", "answer", map[string]any{"answer": "{{#x.text#}}"}),
	}
}

var fileToolEdges = []any{edgeOf("start", "source", "x"), edgeOf("x", "source", "a")}

// fileVar is a tool parameter naming the file variable start.name.
func fileVar(name string) map[string]any {
	return map[string]any{"type": "variable", "value": []any{"start", name}}
}

// TestToolNodeFileParameters: a tool node gives a file tool the bytes of the file its variable
// names, read through the files service: an uploaded workbook converts to JSON, an uploaded
// file encodes to its Base64; the node's inputs show the file as Dify shows it, not its bytes.
func TestToolNodeFileParameters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	book := excelize.NewFile()
	_ = book.SetCellValue("Sheet1", "A1", "city")
	_ = book.SetCellValue("Sheet1", "B1", "pop")
	_ = book.SetCellValue("Sheet1", "A2", "Oslo")
	_ = book.SetCellValue("Sheet1", "B2", 709000)
	buf, err := book.WriteToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	xlsx := f.upload(t, "cities.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", buf.Bytes())
	d := nodes.Deps{Files: f.files, Tools: filetools.Find}
	pool := workflow.NewPool()
	pool.Set("start", "book", xlsx)
	rep, ev := execute(t, d, f.env, pool, fileToolGraph("qiangxinglin/excel_tools/excel_tools", "excel2json",
		map[string]any{"file": fileVar("book")}), fileToolEdges)
	if rep.Status != workflow.StatusSucceeded || ev.answer.String() != `[{"city":"Oslo","pop":"709000"}]` {
		t.Fatalf("%+v, answer %q", rep, ev.answer.String())
	}
	inputs := ev.finished["x"]["_json"].(string)
	if !strings.Contains(inputs, `"inputs":{"file":{"dify_model_identity":"__dify__file__"`) || strings.Contains(inputs, "data_base64") {
		t.Fatalf("node_finished %s", inputs)
	}

	data := []byte("\x00\x01binary\xff")
	bin := f.upload(t, "blob.bin", "application/octet-stream", data)
	pool = workflow.NewPool()
	pool.Set("start", "blob", bin)
	rep, ev = execute(t, d, f.env, pool, fileToolGraph("base64_codec", "base64_file_encoder",
		map[string]any{"input_file": fileVar("blob")}), fileToolEdges)
	if rep.Status != workflow.StatusSucceeded || ev.answer.String() != base64.StdEncoding.EncodeToString(data) {
		t.Fatalf("%+v, answer %q", rep, ev.answer.String())
	}
}

// TestToolNodeFileRoundTrip: a file encoded by one node and decoded by the next comes back as a
// tool file of the message, the same bytes under the name the node gave.
func TestToolNodeFileRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	data := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte{0xfe, 0x00, 'x'}, 1000)...)
	pool := workflow.NewPool()
	pool.Set("start", "doc", f.upload(t, "report.pdf", "application/pdf", data))
	ns := []any{
		nodeOf("start", "start", map[string]any{}),
		nodeOf("enc", "tool", map[string]any{"provider_type": "builtin", "provider_id": "base64_codec", "tool_name": "base64_file_encoder",
			"tool_parameters": map[string]any{"input_file": fileVar("doc")}}),
		nodeOf("dec", "tool", map[string]any{"provider_type": "builtin", "provider_id": "base64_codec", "tool_name": "base64_file_decoder",
			"tool_parameters": map[string]any{
				"encoded_text":    map[string]any{"type": "variable", "value": []any{"enc", "text"}},
				"output_filename": map[string]any{"type": "constant", "value": "copy"},
			}}),
	}
	rep, _ := execute(t, nodes.Deps{Files: f.files, Tools: filetools.Find}, f.env, pool, ns,
		[]any{edgeOf("start", "source", "enc"), edgeOf("enc", "source", "dec")})
	if rep.Status != workflow.StatusSucceeded {
		t.Fatalf("%+v", rep)
	}
	out, _ := pool.Get([]string{"dec", "files"})
	list, _ := out.([]any)
	if len(list) != 1 {
		t.Fatalf("files %#v", out)
	}
	file := list[0].(*value.File)
	if file.Filename != "copy.pdf" || file.MimeType != "application/pdf" || file.TransferMethod != value.TransferToolFile {
		t.Fatalf("file %+v", file)
	}
	up, err := f.files.Lookup(t.Context(), file.RelatedID)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.files.Open(t.Context(), up)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, _ := io.ReadAll(rc); !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, want %d", len(got), len(data))
	}
}

// TestToolNodeFileBounds: the files given to one call are bounded together, in bytes and in
// number; a file parameter given no file leaves the tool to say so.
func TestToolNodeFileBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := nodes.Deps{Files: f.files, Tools: filetools.Find}
	big := bytes.Repeat([]byte("x"), 8<<20)
	pool := workflow.NewPool()
	pool.Set("start", "two", []any{f.upload(t, "a.bin", "application/octet-stream", big), f.upload(t, "b.bin", "application/octet-stream", big)})
	pool.Set("start", "many", func() []any {
		var out []any
		small := f.upload(t, "s.bin", "application/octet-stream", []byte("s"))
		for range 21 {
			out = append(out, small)
		}
		return out
	}())
	pool.Set("start", "text", "not a file")
	for name, want := range map[string][2]string{
		"two":  {"ToolParameterError", "the file of parameter input_file: the files given to a tool are at most 15 MB together"},
		"many": {"ToolParameterError", "the file of parameter input_file: a tool is given at most 20 files"},
		"text": {"ToolInvokeError", "Not a valid file for input input_file"},
	} {
		rep, _ := execute(t, d, f.env, pool, fileToolGraph("base64_codec", "base64_file_encoder",
			map[string]any{"input_file": fileVar(name)}), fileToolEdges)
		var ne *workflow.NodeError
		if rep.Status != workflow.StatusFailed || !errors.As(rep.Err, &ne) || ne.Type != want[0] || !strings.Contains(rep.Err.Error(), want[1]) {
			t.Errorf("%s: %+v, want %s %q", name, rep, want[0], want[1])
		}
	}
}
