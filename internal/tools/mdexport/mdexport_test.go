package mdexport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/mdexport"
)

// sample is a document with what the writers must all carry: headings, a paragraph with
// emphasis and a link, nested and numbered lists, a code block and a table.
const sample = "# Quarterly Report\n\n" +
	"Sales grew **strongly** in *spring*, see [the dashboard](https://example.com/dash?a=1&b=2).\n\n" +
	"## Highlights\n\n" +
	"- First point\n- Second point with `inline code`\n  - Nested point\n\n" +
	"1. Step one\n2. Step two\n\n" +
	"```python\nprint(\"hello\")\n```\n\n" +
	"| Region | Revenue | Note |\n|:--|--:|:-:|\n| North | 1200 | good |\n| South | 950.50 | **fair** |\n"

// call finds the tool name of the plugin, configured with configured, and invokes it with args.
func call(t *testing.T, name string, configured map[string]any, args map[string]any) tools.Result {
	t.Helper()
	return callOf(t, "bowenliang123/md_exporter/md_exporter", name, configured, args)
}

// callOf finds the tool name of the provider, configured with configured, and invokes it with
// args.
func callOf(t *testing.T, provider, name string, configured map[string]any, args map[string]any) tools.Result {
	t.Helper()
	tl, err := mdexport.Find(context.Background(), tools.Ref{Type: tools.TypePlugin, ProviderID: provider,
		Name: name, Configured: configured})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// convert calls the tool name with md and expects files.
func convert(t *testing.T, name, md string, extra map[string]any) []tools.File {
	t.Helper()
	args := map[string]any{"md_text": md}
	for k, v := range extra {
		args[k] = v
	}
	res := call(t, name, nil, args)
	if res.IsError || len(res.Files) == 0 {
		t.Fatalf("%s: %s", name, describe(res))
	}
	return res.Files
}

// describe is a result for a failure message: its text, and its files' names and sizes.
func describe(res tools.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "IsError %v, text %.300q", res.IsError, res.Text)
	for _, f := range res.Files {
		fmt.Fprintf(&b, ", file %s (%s, %d bytes)", f.Name, f.MIMEType, len(f.Data))
	}
	return b.String()
}

// only is the one file of files.
func only(t *testing.T, files []tools.File) tools.File {
	t.Helper()
	if len(files) != 1 {
		t.Fatalf("%d files, want 1", len(files))
	}
	return files[0]
}

// TestFind: the tools resolve under the plugin's id and its provider's name, as builtin or
// plugin tools; other providers, kinds and names are unknown tools, md_to_png among them.
func TestFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, ref := range []tools.Ref{
		{Type: tools.TypePlugin, ProviderID: "bowenliang123/md_exporter/md_exporter", Name: "md_to_html"},
		{Type: tools.TypeBuiltin, ProviderName: "md_exporter", Name: "md_to_html"},
		{ProviderID: "md_exporter", Name: "md_to_html"},
	} {
		tl, err := mdexport.Find(ctx, ref)
		if err != nil {
			t.Fatalf("%+v: %v", ref, err)
		}
		if id := tl.Identity(); id.Provider != "md_exporter" || id.Name != "md_to_html" || id.Label["en_US"] == "" {
			t.Errorf("identity %+v", id)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tl.Parameters(), &schema); err != nil || schema.Type != "object" ||
			schema.Properties["md_text"] == nil || schema.Properties["output_filename"] == nil ||
			len(schema.Required) != 1 || schema.Required[0] != "md_text" {
			t.Errorf("parameters %s", tl.Parameters())
		}
		if tl.Description() == "" {
			t.Error("no description")
		}
	}
	for _, ref := range []tools.Ref{
		{Type: tools.TypeAPI, ProviderID: "md_exporter", Name: "md_to_html"},
		{ProviderID: "langgenius/time/time", Name: "md_to_html"},
		{ProviderID: "md_exporter", Name: "md_to_png"},
		{ProviderID: "md_exporter", Name: "nope"},
	} {
		if _, err := mdexport.Find(ctx, ref); !errors.Is(err, tools.ErrUnknownTool) {
			t.Errorf("%+v: %v, want ErrUnknownTool", ref, err)
		}
	}
	names := map[string]bool{}
	for _, tl := range mdexport.New(mdexport.Options{}).All() {
		names[tl.Identity().Name] = true
	}
	for _, n := range []string{"md_to_docx", "md_to_pdf", "md_to_html", "md_to_html_text", "md_to_pptx", "md_to_xlsx",
		"md_to_csv", "md_to_json", "md_to_xml", "md_to_latex", "md_to_md", "md_to_ipynb", "md_to_codeblock"} {
		if !names[n] {
			t.Errorf("%s is not listed", n)
		}
	}
}

// TestConfiguredValues: the app's values apply unless the model gives its own, an empty value
// counts as unset, and the plugin's form parameters (output_style, force_text_value) come from
// the app.
func TestConfiguredValues(t *testing.T) {
	t.Parallel()
	res := call(t, "md_to_html", map[string]any{"output_filename": "from the app"}, map[string]any{"md_text": sample})
	if res.IsError || only(t, res.Files).Name != "from the app.html" {
		t.Fatalf("configured name: %s", describe(res))
	}
	res = call(t, "md_to_html", map[string]any{"output_filename": "from the app"}, map[string]any{"md_text": sample, "output_filename": "mine"})
	if res.IsError || only(t, res.Files).Name != "mine.html" {
		t.Fatalf("model's name: %s", describe(res))
	}
	res = call(t, "md_to_json", map[string]any{"output_style": "json_array", "output_filename": ""}, map[string]any{"md_text": sample})
	f := only(t, res.Files)
	if res.IsError || f.Name != "output.json" || !strings.HasPrefix(string(f.Data), "[{") {
		t.Fatalf("configured output_style: %s %s", describe(res), f.Data)
	}
	// The text names the file for the model.
	if !strings.Contains(res.Text, "output.json") {
		t.Errorf("text %q", res.Text)
	}
	res = call(t, "md_to_json", map[string]any{"output_style": "yaml"}, map[string]any{"md_text": sample})
	if !res.IsError || !strings.Contains(res.Text, "output_style") {
		t.Errorf("bad output_style: %s", describe(res))
	}
}

// TestBadCalls: arguments that are not an object, an empty text and a text over the limit are
// the tool's answers; a context that ends first is an error.
func TestBadCalls(t *testing.T) {
	t.Parallel()
	tl, err := mdexport.Find(context.Background(), tools.Ref{ProviderID: "md_exporter", Name: "md_to_html"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Invoke(context.Background(), json.RawMessage(`[1]`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, tools.ErrBadArguments.Error()) {
		t.Errorf("not an object: %s %v", describe(res), err)
	}
	res = call(t, "md_to_html", nil, map[string]any{"md_text": "  \n <think>only thoughts</think> "})
	if !res.IsError || !strings.Contains(res.Text, "Empty input md_text") || !strings.Contains(res.Text, tools.ErrBadArguments.Error()) {
		t.Errorf("empty: %s", describe(res))
	}
	res = call(t, "md_to_html", nil, map[string]any{"md_text": strings.Repeat("a", mdexport.MaxInputBytes+1)})
	if !res.IsError || !strings.Contains(res.Text, "at most 1048576 bytes") || len(res.Files) != 0 {
		t.Errorf("too long: %s", describe(res))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tl.Invoke(ctx, json.RawMessage(`{"md_text": "# x"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestPathologicalInput: inputs on which goldmark takes quadratic time or nests without end
// are refused or converted, promptly and without a panic.
func TestPathologicalInput(t *testing.T) {
	t.Parallel()
	for name, md := range map[string]string{
		"unclosed destinations": strings.Repeat("[a](", mdexport.MaxInputBytes/4),
		"unclosed angle links":  strings.Repeat("[a](<b", mdexport.MaxInputBytes/6),
		"label on every line":   strings.Repeat("[a](\n", mdexport.MaxInputBytes/5),
		"openers":               strings.Repeat("[", mdexport.MaxInputBytes),
	} {
		res := call(t, "md_to_html", nil, map[string]any{"md_text": md})
		if !res.IsError || !strings.Contains(res.Text, "too complex") {
			t.Errorf("%s: %.200s", name, res.Text)
		}
	}
	// Quotes nested a hundred thousand deep: the depth is cut, the text converted.
	res := call(t, "md_to_xml", nil, map[string]any{"md_text": strings.Repeat(">", 100000) + " deep"})
	if res.IsError {
		t.Fatalf("deep quotes: %s", res.Text)
	}
	if n := strings.Count(string(only(t, res.Files).Data), "<blockquote>"); n < 10 || n > 40 {
		t.Errorf("%d nested quotes", n)
	}
}

// TestTooManyFiles: a call makes at most 50 files.
func TestTooManyFiles(t *testing.T) {
	t.Parallel()
	md := strings.Repeat("| a |\n|---|\n| 1 |\n\n", 51)
	res := call(t, "md_to_csv", nil, map[string]any{"md_text": md})
	if !res.IsError || !strings.Contains(res.Text, "51 tables") {
		t.Errorf("51 tables: %s", describe(res))
	}
	res = call(t, "md_to_codeblock", nil, map[string]any{"md_text": strings.Repeat("```sh\nls\n```\n", 51)})
	if !res.IsError || !strings.Contains(res.Text, "is_compress") {
		t.Errorf("51 code blocks: %s", describe(res))
	}
	res = call(t, "md_to_codeblock", map[string]any{"is_compress": "true"}, map[string]any{"md_text": strings.Repeat("```sh\nls\n```\n", 51)})
	if res.IsError || only(t, res.Files).Name != "code.zip" {
		t.Errorf("51 code blocks in a ZIP file: %s", describe(res))
	}
}
