// Package mdexport holds built-in tools under the provider and tool names of Dify's popular
// Markdown Exporter plugin (bowenliang123/md_exporter), and the Markdown to PPTX tool of the
// PPT plugin (stvlynn/ppt, ppt.go), so that apps using them resolve: each tool
// turns the Markdown text the model (or a workflow) gives into a file — DOCX, PDF, HTML, PPTX,
// XLSX, CSV, JSON, XML, LaTeX, Markdown, a Jupyter notebook, or the code blocks as script files —
// and returns it as a tool file.
//
// The plugin converts with pandoc, pandas, xhtml2pdf and lxml in a Python process. Here every
// format is written in Go from one parse of the Markdown by goldmark (CommonMark with GitHub's
// tables, strikethrough, task lists and autolinks): the parse becomes a small document model
// (document.go) that each writer walks. XLSX goes through excelize and PDF through gopdf with a
// TrueType font found at run time (fonts.go); DOCX and PPTX are written as their OOXML parts
// directly (docx.go, pptx.go), because no maintained pure-Go library covers both, and the parts
// a converted Markdown document needs are few and well documented (ECMA-376).
//
// Every call is bounded: the Markdown text (MaxInputBytes), the files made (MaxOutputBytes), the
// parse's work and nesting (parse.go), the time (the caller's context, DefaultTimeout at most)
// and the number of conversions running at once (MaxConcurrent). A conversion that hits a bound
// is the tool's answer, for the model to read, as the plugin answers a failed conversion.
package mdexport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/tools"
)

// Provider ids, as the plugin id and as the plugin names its provider.
const (
	pluginID     = "bowenliang123/md_exporter/md_exporter"
	providerName = "md_exporter"
)

// Bounds of one call.
const (
	// MaxInputBytes is the most Markdown text converted: far more than any model writes in one
	// answer, little enough that a parse and a document stay within a few hundred megabytes.
	MaxInputBytes = 1 << 20
	// MaxOutputBytes bounds the files one call makes, together; a writer stops as soon as it
	// passes it.
	MaxOutputBytes = 20 << 20
	// DefaultTimeout bounds a conversion when the caller's context allows longer.
	DefaultTimeout = 60 * time.Second
	// MaxConcurrent is how many conversions run at once in a Set; more wait their turn (within
	// their context), so that a burst of calls cannot multiply the memory one conversion takes.
	MaxConcurrent = 2
)

// Options configure a [Set]. The zero value is usable.
type Options struct {
	// Fonts are the fonts of PDF files (see FindFonts); nil finds them once, on first use.
	Fonts *Fonts
}

// Set is the tools of the plugin.
type Set struct {
	fonts func() *Fonts
	slots chan struct{}
}

// New returns the tools configured by opts.
func New(opts Options) *Set {
	s := &Set{slots: make(chan struct{}, MaxConcurrent)}
	if opts.Fonts != nil {
		s.fonts = func() *Fonts { return opts.Fonts }
	} else {
		s.fonts = defaultFonts
	}
	return s
}

var defaultSet = New(Options{})

// Find finds ref among the tools of the default set (see [Set.Find]).
func Find(ctx context.Context, ref tools.Ref) (tools.Tool, error) { return defaultSet.Find(ctx, ref) }

// Find returns the tool ref names, configured with the app's values; tools.ErrUnknownTool for a
// tool of another provider.
func (s *Set) Find(_ context.Context, ref tools.Ref) (tools.Tool, error) {
	sp, err := tools.FindPlugin(ref, "Markdown Exporter tools", allSpecs)
	if err != nil {
		return nil, err
	}
	return &tool{spec: sp, set: s, configured: ref.Configured}, nil
}

// allSpecs are the tools of every plugin of the package.
var allSpecs = func() []*spec {
	out := make([]*spec, 0, len(specs)+1)
	for i := range specs {
		out = append(out, &specs[i])
	}
	return append(out, &pptSpec)
}()

// All lists the tools, unconfigured.
func (s *Set) All() []tools.Tool {
	out := make([]tools.Tool, 0, len(allSpecs))
	for _, sp := range allSpecs {
		out = append(out, &tool{spec: sp, set: s})
	}
	return out
}

// tool is a spec configured for one app.
type tool struct {
	*spec
	set        *Set
	configured map[string]any
}

// Identity names the tool as the plugin does.
func (t *tool) Identity() tools.Identity {
	return tools.Identity{Provider: t.owner().provider, Name: t.name, Label: map[string]string{"en_US": t.label}}
}

// Description is the plugin's description for the model.
func (t *tool) Description() string { return t.description }

// Parameters is the schema of the parameters the plugin lets the model fill (its "llm" form);
// the others ("form" parameters such as output_style) are the app's to set.
func (t *tool) Parameters() json.RawMessage { return t.schema }

// Invoke converts the Markdown text of the model's arguments, merged over the app's values. A
// conversion that fails or hits a bound is the tool's answer (IsError), as the plugin answers
// with a message; only a context that ends first is an error.
func (t *tool) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	a, err := tools.MergeArgs(t.configured, raw)
	if err != nil {
		return badArguments("%v", err), nil
	}
	select {
	case t.set.slots <- struct{}{}:
		defer func() { <-t.set.slots }()
	case <-ctx.Done():
		return tools.Result{}, context.Cause(ctx)
	}
	callCtx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	run := t.call
	if t.run != nil {
		run = t.run
	}
	res := run(callCtx, t.set, a)
	if ctx.Err() != nil {
		return tools.Result{}, context.Cause(ctx)
	}
	return res, nil
}

// call runs the tool's conversion: the Markdown text checked and prepared, then the format's
// writer.
func (sp *spec) call(ctx context.Context, s *Set, a args) tools.Result {
	text := a.text("md_text")
	if len(text) > MaxInputBytes {
		return sp.failed("md_text is %d bytes; at most %d bytes of Markdown are converted", len(text), MaxInputBytes)
	}
	md := prepare(text, sp.stripWrapper)
	if md == "" {
		return badArguments("Empty input md_text")
	}
	files, note, err := sp.convert(ctx, convertInput{set: s, md: md, args: a})
	if err != nil {
		return sp.failed("%s", failureText(ctx, err))
	}
	return done(files, note)
}

// failureText words a conversion's failure for the model.
func failureText(ctx context.Context, err error) string {
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("the conversion did not finish within the time allowed (%v at most)", DefaultTimeout)
	}
	return err.Error()
}

// failed is the plugin's answer to a failed conversion.
func (sp *spec) failed(format string, v ...any) tools.Result {
	return tools.Result{
		Text:    fmt.Sprintf("Failed to convert markdown text to %s, error: %s", sp.target, fmt.Sprintf(format, v...)),
		IsError: true,
	}
}

// badArguments is the answer to arguments the tool cannot take.
func badArguments(format string, v ...any) tools.Result {
	return tools.Result{Text: fmt.Sprintf("%v: %s", tools.ErrBadArguments, fmt.Sprintf(format, v...)), IsError: true}
}

// done is the answer with the files made. The plugin sends the files alone; the text names
// them, for the model to tell the user (a workflow's tool node has them in its files output).
func done(files []tools.File, note string) tools.Result {
	var b strings.Builder
	for i, f := range files {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Created the file %s (%s, %d bytes).", f.Name, f.MIMEType, len(f.Data))
	}
	if note != "" {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(note)
	}
	return tools.Result{Text: b.String(), Files: files}
}

// args are a call's parameters by name.
type args map[string]any

// text is argument name as text (tools.ArgText).
func (a args) text(name string) string { return tools.ArgText(a, name) }

// flag is a yes/no select parameter ("true"/"false", or a boolean); def when unset.
func (a args) flag(name string, def bool) bool {
	switch strings.ToLower(strings.TrimSpace(a.text(name))) {
	case "true", "yes", "1":
		return true
	case "false", "no", "0":
		return false
	}
	return def
}
