// Package filetools holds built-in tools under the names of Dify tool plugins that convert
// files and data, so that the apps that use those plugins resolve:
//
//   - bowenliang123/base64_codec (provider base64_codec): Base64 to and from text, hex, files and
//     images (base64.go);
//   - qiangxinglin/excel_tools (provider excel_tools): excel2json, the rows of an XLSX workbook
//     as JSON objects keyed by the header row, as the plugin's pandas reading gives them
//     (excel.go, xlsx.go);
//   - langgenius/echarts (provider echarts): bar_chart, line_chart and pie_chart, an ECharts
//     option in an ```echarts block, as the plugin writes it (echarts.go);
//   - kalochin/pdf_process (provider pdf_process): a PDF's pages as PNG images, its page count,
//     chosen pages as a new PDF, every page as a PDF of its own, done by poppler's programs in
//     bounded child processes (pdf.go, poppler.go).
//
// The tools need no network and no service: a file parameter's value carries the file's bytes
// (tools.FileArg, put there by the workflow tool node; see tools.FileTaker). Every input, every
// output and the work between are bounded (Options), and a tool that refuses says why in its
// answer, for the model or the node to read.
package filetools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/tools"
)

// Options bound the tools. The zero value is the defaults.
type Options struct {
	// MaxFileBytes bounds a file given to a tool (default tools.MaxFileArgBytes).
	MaxFileBytes int
	// MaxTextBytes bounds a text given to a tool, Base64 text included (default 24 MiB: a
	// file of MaxFileBytes encoded, with room for separators).
	MaxTextBytes int
	// MaxDecodedBytes bounds the bytes of the files one decoder call returns, together (default
	// tools.MaxFileArgBytes).
	MaxDecodedBytes int
	// MaxFiles bounds the files one decoder call returns (default 20).
	MaxFiles int
	// MaxOutputBytes bounds the JSON an Excel conversion or a chart writes (default 8 MiB).
	MaxOutputBytes int
	// MaxCells bounds the non-empty cells an Excel conversion reads, and (times 8) the cells of
	// the padded table it writes (default 200,000).
	MaxCells int
	// MaxUnzippedBytes bounds what an XLSX file expands to, all its parts together; it is
	// excelize's UnzipSizeLimit (default 32 MiB).
	MaxUnzippedBytes int64
	// MaxPDFPages bounds the pages a PDF tool renders, splits or extracts in one call (default
	// 100).
	MaxPDFPages int
	// PDFMemory bounds the address space of a poppler program, in bytes (default 1 GiB).
	PDFMemory int64
	// PDFCPU bounds the CPU time of a poppler program (default 60 s); PDFTimeout its time
	// from start to end (default 120 s).
	PDFCPU, PDFTimeout time.Duration
	// PopplerDir is the directory of poppler's programs (default: found on the PATH).
	PopplerDir string
}

// Defaults of [Options].
const (
	DefaultMaxTextBytes     = 24 << 20
	DefaultMaxFiles         = 20
	DefaultMaxOutputBytes   = 8 << 20
	DefaultMaxCells         = 200_000
	DefaultMaxUnzippedBytes = 32 << 20
	DefaultMaxPDFPages      = 100
	DefaultPDFMemory        = 1 << 30
	DefaultPDFCPU           = 60 * time.Second
	DefaultPDFTimeout       = 120 * time.Second
	// MaxZoom is the largest zoom of pdf_to_png: 5 × 72 = 360 dots per inch.
	MaxZoom = 5
)

// Set is the tools, with their bounds.
type Set struct {
	o Options
}

// New returns the tools bounded by o (zero fields take the defaults).
func New(o Options) *Set {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxFileBytes, tools.MaxFileArgBytes)
	def(&o.MaxTextBytes, DefaultMaxTextBytes)
	def(&o.MaxDecodedBytes, tools.MaxFileArgBytes)
	def(&o.MaxFiles, DefaultMaxFiles)
	def(&o.MaxOutputBytes, DefaultMaxOutputBytes)
	def(&o.MaxCells, DefaultMaxCells)
	def(&o.MaxPDFPages, DefaultMaxPDFPages)
	if o.MaxUnzippedBytes <= 0 {
		o.MaxUnzippedBytes = DefaultMaxUnzippedBytes
	}
	if o.PDFMemory <= 0 {
		o.PDFMemory = DefaultPDFMemory
	}
	if o.PDFCPU <= 0 {
		o.PDFCPU = DefaultPDFCPU
	}
	if o.PDFTimeout <= 0 {
		o.PDFTimeout = DefaultPDFTimeout
	}
	return &Set{o: o}
}

var defaultSet = New(Options{})

// Find finds ref among the tools with the default bounds (see [Set.Find]).
func Find(ctx context.Context, ref tools.Ref) (tools.Tool, error) { return defaultSet.Find(ctx, ref) }

// Find returns the tool ref names, configured with the app's values; tools.ErrUnknownTool for a
// tool of another provider. The provider is the plugin's provider id
// ("langgenius/echarts/echarts") or its bare name ("echarts").
func (s *Set) Find(_ context.Context, ref tools.Ref) (tools.Tool, error) {
	sp, err := tools.FindPlugin(ref, "file tools", specs)
	if err != nil {
		return nil, err
	}
	return &tool{spec: sp, set: s, configured: ref.Configured}, nil
}

// All lists every tool, unconfigured, in a stable order.
func (s *Set) All() []tools.Tool {
	out := make([]tools.Tool, 0, len(specs))
	for _, sp := range specs {
		out = append(out, &tool{spec: sp, set: s})
	}
	return out
}

// spec is one tool of the plugins.
type spec struct {
	plugin, provider, name string
	label, description     string
	// params are the parameters the model may give (the plugin's form "llm" parameters that
	// are not files), all text.
	params []param
	// files are the parameters that take a file.
	files []string
	run   func(ctx context.Context, s *Set, a args) tools.Result
}

// PluginName implements tools.PluginSpec.
func (sp spec) PluginName() (plugin, provider, name string) { return sp.plugin, sp.provider, sp.name }

// param is one parameter offered to the model.
type param struct {
	name, description string
	required          bool
}

var specs = slices.Concat(base64Specs, excelSpecs, echartsSpecs, pdfSpecs)

// tool is a spec configured for one app.
type tool struct {
	spec
	set        *Set
	configured map[string]any
}

// Identity is the plugin's provider name, the tool's name and its English label.
func (t *tool) Identity() tools.Identity {
	return tools.Identity{Provider: t.provider, Name: t.name, Label: map[string]string{"en_US": t.label}}
}

// Description is the plugin's description of the tool for the model.
func (t *tool) Description() string { return t.description }

// Parameters is the schema the model is offered: text parameters only. File parameters are
// left out, as Dify's agents leave them out (see tools.FileTaker), and so are the settings a
// plugin shows only in the tool's form.
func (t *tool) Parameters() json.RawMessage {
	props := map[string]any{}
	required := []string{}
	for _, p := range t.params {
		props[p.name] = map[string]any{"type": "string", "description": p.description}
		if p.required {
			required = append(required, p.name)
		}
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return b
}

// FileParameters names the parameters that take a file, for the tool node to fill.
func (t *tool) FileParameters() []string { return slices.Clone(t.files) }

// Invoke runs the tool with the arguments over the app's values. It returns an error only when
// ctx ended; what goes wrong otherwise is the tool's answer.
func (t *tool) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, context.Cause(ctx)
	}
	a, err := mergeArgs(t.configured, raw)
	if err != nil {
		return failed("%v", err), nil
	}
	res := t.run(ctx, t.set, a)
	if ctx.Err() != nil {
		return tools.Result{}, context.Cause(ctx)
	}
	return res, nil
}

var _ tools.FileTaker = (*tool)(nil)

// args are a call's parameters by name, as JSON: the arguments given over the app's values.
// Values stay JSON so that a file's base64 is decoded once, straight into its bytes.
type args map[string]json.RawMessage

// mergeArgs merges the arguments raw over configured. Null and "" count as unset on both sides,
// as Dify's exports leave unset parameters as "".
func mergeArgs(configured map[string]any, raw json.RawMessage) (args, error) {
	a := args{}
	for k, v := range configured {
		if v == nil || v == "" {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: the value set for %s: %v", tools.ErrBadArguments, k, err)
		}
		a[k] = b
	}
	if strings.TrimSpace(string(raw)) == "" {
		return a, nil
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil || given == nil {
		return nil, fmt.Errorf("%w: the arguments are not a JSON object", tools.ErrBadArguments)
	}
	for k, v := range given {
		if s := strings.TrimSpace(string(v)); s == "null" || s == `""` {
			continue
		}
		a[k] = v
	}
	return a, nil
}

// text is a parameter as text, as a Python plugin reads it: a string as it is, anything else as
// its JSON text ("" when absent).
func (a args) text(name string) string {
	raw, ok := a[name]
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

// file is a file parameter's file.
func (a args) file(name string) (tools.FileArg, error) {
	raw, ok := a[name]
	if !ok {
		return tools.FileArg{}, tools.ErrNoFile
	}
	return tools.DecodeFileArg(raw)
}

// failed is an answer saying what went wrong.
func failed(format string, v ...any) tools.Result {
	return tools.Result{Text: fmt.Sprintf(format, v...), IsError: true}
}
