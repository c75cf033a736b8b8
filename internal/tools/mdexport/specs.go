package mdexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/parleyhq/parley/internal/tools"
)

// MIME types of the files, as the plugin declares them.
const (
	mimeDOCX  = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	mimePPTX  = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	mimeXLSX  = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	mimePDF   = "application/pdf"
	mimeHTML  = "text/html"
	mimeXML   = "text/xml"
	mimeCSV   = "text/csv"
	mimeJSON  = "application/json"
	mimeLaTeX = "application/x-tex"
	mimeMD    = "text/markdown"
	mimeIPYNB = "application/x-ipynb+json"
	mimeZIP   = "application/zip"
)

// spec is one tool of the plugin.
type spec struct {
	// name, label and description are the plugin's: the tool's name, its English label and
	// the description it gives the model.
	name, label, description string
	// target is what the tool makes, as its failures name it ("DOCX file").
	target string
	// schema is the JSON Schema of the parameters the model fills.
	schema json.RawMessage
	// stripWrapper: a code fence around the whole text is removed first.
	stripWrapper bool
	// convert makes the files (and a note for the model, if any) from the prepared Markdown.
	convert func(ctx context.Context, in convertInput) ([]tools.File, string, error)
	// plugin is the plugin the tool belongs to: nil for the Markdown Exporter's.
	plugin *plugin
	// run, when set, answers a call in place of the Markdown Exporter's call (another plugin's
	// tool with its own parameters and answers).
	run func(ctx context.Context, s *Set, a args) tools.Result
}

// plugin names a plugin whose tools the package holds: its id, and its provider's name.
type plugin struct{ id, provider string }

// mdExporter is the Markdown Exporter plugin.
var mdExporter = &plugin{id: pluginID, provider: providerName}

// PluginName implements tools.PluginSpec.
func (sp *spec) PluginName() (plugin, provider, name string) {
	p := sp.owner()
	return p.id, p.provider, sp.name
}

// owner is the plugin of the tool.
func (sp *spec) owner() *plugin {
	if sp.plugin != nil {
		return sp.plugin
	}
	return mdExporter
}

// convertInput is what a conversion works from.
type convertInput struct {
	set  *Set
	md   string
	args args
}

// filename is the output_filename the call gives.
func (in convertInput) filename() string { return in.args.text("output_filename") }

// The plugin's descriptions of its common parameters.
const (
	mdTextDesc     = "Markdown text"
	tableTextDesc  = "Markdown text with one or more Markdown tables"
	outputNameDesc = "Optional custom output file name, and the filename suffix is not required."
)

// specs are the tools, in the plugin's order. md_to_png is not here (see docs/md-exporter.md).
var specs = []spec{
	{name: "md_to_docx", label: "Markdown ⮕ DOCX", description: "Generate DOCX file from Markdown text",
		target: "DOCX file", stripWrapper: true, schema: fileSchema(mdTextDesc), convert: convertDOCX},
	{name: "md_to_pdf", label: "Markdown ⮕ PDF", description: "Generate PDF file from Markdown text",
		target: "PDF file", stripWrapper: true, schema: fileSchema(mdTextDesc), convert: convertPDF},
	{name: "md_to_xlsx", label: "Markdown tables ⮕ XLSX", description: "Generate XLSX file from Markdown tables",
		target: "XLSX file", stripWrapper: true, schema: fileSchema(tableTextDesc), convert: convertXLSX},
	{name: "md_to_pptx", label: "Markdown ⮕ PPTX", description: "Generate PPTX file from Markdown text",
		target: "PPTX file", stripWrapper: true, schema: fileSchema("Markdown text for slides"), convert: convertPPTX},
	{name: "md_to_ipynb", label: "Markdown ⮕ Jupyter Notebook", description: "Generate Jupyter Notebook file from Markdown text",
		target: "IPYNB file", stripWrapper: true, schema: fileSchema(mdTextDesc), convert: convertIPYNB},
	{name: "md_to_html", label: "Markdown ⮕ HTML", description: "Generate HTML file from Markdown text",
		target: "HTML file", stripWrapper: true, schema: fileSchema(mdTextDesc), convert: convertHTML},
	{name: "md_to_html_text", label: "Markdown ⮕ HTML Text", description: "Generate HTML text from Markdown text",
		target: "HTML text", stripWrapper: true, schema: textSchema(), convert: convertHTMLText},
	{name: "md_to_md", label: "Markdown ⮕ MD", description: "Generate .md file from Markdown text",
		target: "MD file", stripWrapper: true, schema: fileSchema(mdTextDesc), convert: convertMD},
	{name: "md_to_csv", label: "Markdown tables ⮕ CSV", description: "Generate CSV file from Markdown text",
		target: "CSV file", stripWrapper: true, schema: fileSchema(tableTextDesc), convert: convertCSV},
	{name: "md_to_json", label: "Markdown tables ⮕ JSON", description: "Generate JSON file from Markdown text",
		target: "JSON file", stripWrapper: true, schema: fileSchema(tableTextDesc), convert: convertJSON},
	{name: "md_to_xml", label: "Markdown ⮕ XML", description: "Generate XML file from Markdown text",
		target: "XML file", stripWrapper: true, schema: fileSchema(mdTextDesc), convert: convertXML},
	{name: "md_to_latex", label: "Markdown tables ⮕ LaTeX", description: "Generate LaTeX file from Markdown table",
		target: "LaTeX file", stripWrapper: true, schema: fileSchema(tableTextDesc), convert: convertLaTeX},
	{name: "md_to_codeblock", label: "Codeblocks in Markdown ⮕ Script Files", description: "Generate script files from code blocks from Markdown text",
		target: "script files", schema: fileSchema(mdTextDesc), convert: convertCodeBlocks},
}

// fileSchema is the schema of a tool that makes a file: md_text and output_filename.
func fileSchema(mdDesc string) json.RawMessage {
	return mustJSON(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"md_text":         map[string]any{"type": "string", "description": mdDesc},
			"output_filename": map[string]any{"type": "string", "description": outputNameDesc},
		},
		"required": []string{"md_text"},
	})
}

// textSchema is the schema of md_to_html_text: md_text alone.
func textSchema() json.RawMessage {
	return mustJSON(map[string]any{
		"type":       "object",
		"properties": map[string]any{"md_text": map[string]any{"type": "string", "description": mdTextDesc}},
		"required":   []string{"md_text"},
	})
}

// mustJSON marshals a value made of maps and strings, which cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// errOutputTooLarge: the files of a call would pass MaxOutputBytes.
var errOutputTooLarge = fmt.Errorf("the files would be larger than %d bytes, the most one call makes", MaxOutputBytes)

// limitedBuffer is a buffer that refuses to grow past max bytes, so that a writer stops as soon
// as its file is too large rather than after holding all of it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

// newLimitedBuffer is a buffer of at most MaxOutputBytes.
func newLimitedBuffer() *limitedBuffer { return &limitedBuffer{max: MaxOutputBytes} }

// Write appends p, or fails with errOutputTooLarge.
func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errOutputTooLarge
	}
	return b.Buffer.Write(p)
}

// WriteString appends s, or fails with errOutputTooLarge.
func (b *limitedBuffer) WriteString(s string) (int, error) {
	if b.Len()+len(s) > b.max {
		return 0, errOutputTooLarge
	}
	return b.Buffer.WriteString(s)
}

// files collects the files of a call within MaxOutputBytes together.
type files struct {
	list []tools.File
	size int
}

// add adds a file, or fails with errOutputTooLarge.
func (f *files) add(name, mimeType string, data []byte) error {
	if f.size+len(data) > MaxOutputBytes {
		return errOutputTooLarge
	}
	f.size += len(data)
	f.list = append(f.list, tools.File{Name: name, MIMEType: mimeType, Data: data})
	return nil
}

// single is the one file of a conversion, named from the call's output_filename.
func single(in convertInput, ext, mimeType string, data []byte) ([]tools.File, string, error) {
	var f files
	if err := f.add(fileName(in.filename(), defaultStem, ext), mimeType, data); err != nil {
		return nil, "", err
	}
	return f.list, "", nil
}

// errNoTables: the text has no table, for the tools that convert tables.
var errNoTables = errors.New("no Markdown table was found in the text (a table needs a header row and a delimiter row such as |---|---|)")
