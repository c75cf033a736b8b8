package mdexport

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/tools"
)

// convertMD is md_to_md: the Markdown text itself, as prepared, in a .md file.
func convertMD(_ context.Context, in convertInput) ([]tools.File, string, error) {
	return single(in, ".md", mimeMD, []byte(in.md+"\n"))
}

// convertIPYNB is md_to_ipynb: a Jupyter notebook (nbformat 4.5) whose code cells are the
// text's top-level fenced code blocks and whose Markdown cells are the text between them, as the
// plugin has pandoc split it. The cells are cut from the source text, so that the Markdown cells
// keep it as written; the notebook names the Python 3 kernel, the language of most notebooks.
func convertIPYNB(_ context.Context, in convertInput) ([]tools.File, string, error) {
	nb := notebook{
		NBFormat: 4, NBFormatMinor: 5, Cells: []notebookCell{},
		Metadata: map[string]any{
			"kernelspec":    map[string]string{"display_name": "Python 3", "language": "python", "name": "python3"},
			"language_info": map[string]string{"name": "python"},
		},
	}
	for i, c := range splitCells(in.md) {
		cell := notebookCell{ID: "cell-" + strconv.Itoa(i+1), Type: c.kind, Metadata: map[string]any{}, Source: sourceLines(c.text)}
		if c.kind == "code" {
			cell.Outputs = []any{}
		}
		nb.Cells = append(nb.Cells, cell)
	}
	data, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		return nil, "", err
	}
	return single(in, ".ipynb", mimeIPYNB, append(data, '\n'))
}

// notebook is a Jupyter notebook file (nbformat 4).
type notebook struct {
	Cells         []notebookCell `json:"cells"`
	Metadata      map[string]any `json:"metadata"`
	NBFormat      int            `json:"nbformat"`
	NBFormatMinor int            `json:"nbformat_minor"`
}

// notebookCell is one cell.
type notebookCell struct {
	ID       string         `json:"id"`
	Type     string         `json:"cell_type"`
	Metadata map[string]any `json:"metadata"`
	Source   []string       `json:"source"`
	// Outputs are a code cell's outputs (none).
	Outputs []any `json:"-"`
}

// MarshalJSON writes a cell; a code cell has an execution count (null) and outputs too.
func (c notebookCell) MarshalJSON() ([]byte, error) {
	type plainCell notebookCell
	if c.Type != "code" {
		return json.Marshal(plainCell(c))
	}
	return json.Marshal(struct {
		plainCell
		ExecutionCount *int  `json:"execution_count"`
		Outputs        []any `json:"outputs"`
	}{plainCell(c), nil, c.Outputs})
}

// sourceLines is a cell's text as nbformat stores it: lines, each but the last with its "\n".
func sourceLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// sourceCell is a piece of the text: "markdown" or "code".
type sourceCell struct {
	kind, text string
}

// splitCells cuts md into Markdown and code cells at its top-level fenced code blocks (a fence
// of ``` or ~~~ indented at most three spaces, closed by a fence of the same character at least
// as long, or by the end of the text, as CommonMark closes them).
func splitCells(md string) []sourceCell {
	var cells []sourceCell
	var text []string
	flush := func(kind string) {
		t := strings.Trim(strings.Join(text, "\n"), "\n")
		if kind == "code" || strings.TrimSpace(t) != "" {
			cells = append(cells, sourceCell{kind: kind, text: t})
		}
		text = nil
	}
	fence := ""
	for line := range strings.SplitSeq(md, "\n") {
		switch {
		case fence == "":
			if f := openingFence(line); f != "" {
				flush("markdown")
				fence = f
				continue
			}
		case closesFence(line, fence):
			flush("code")
			fence = ""
			continue
		}
		text = append(text, line)
	}
	if fence != "" {
		flush("code")
	} else {
		flush("markdown")
	}
	return cells
}

// openingFence is the fence a line opens (its run of ``` or ~~~), or "".
func openingFence(line string) string {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 || len(trimmed) < 3 || (trimmed[0] != '`' && trimmed[0] != '~') {
		return ""
	}
	n := len(trimmed) - len(strings.TrimLeft(trimmed, trimmed[:1]))
	if n < 3 || (trimmed[0] == '`' && strings.Contains(trimmed[n:], "`")) {
		return ""
	}
	return trimmed[:n]
}

// closesFence says whether line closes fence.
func closesFence(line, fence string) bool {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return false
	}
	run := len(trimmed) - len(strings.TrimLeft(trimmed, fence[:1]))
	return run >= len(fence) && strings.TrimSpace(trimmed[run:]) == ""
}

// codeTypes are the file extensions and MIME types of code blocks by language, the plugin's
// (with python, javascript…) and common short names models write (py, js, sh…).
var codeTypes = map[string]struct{ ext, mime string }{
	"css": {".css", "text/css"}, "csv": {".csv", "text/csv"},
	"python": {".py", "text/x-python"}, "py": {".py", "text/x-python"},
	"json":       {".json", "application/json"},
	"javascript": {".js", "text/javascript"}, "js": {".js", "text/javascript"},
	"bash": {".sh", "application/x-sh"}, "sh": {".sh", "application/x-sh"}, "shell": {".sh", "application/x-sh"},
	"svg": {".svg", "image/svg+xml"}, "xml": {".xml", "text/xml"}, "html": {".html", "text/html"},
	"markdown": {".md", "text/markdown"}, "md": {".md", "text/markdown"},
	"yaml": {".yaml", "text/yaml"}, "yml": {".yaml", "text/yaml"},
	"ruby": {".rb", "text/x-ruby"}, "php": {".php", "application/x-httpd-php"},
	"java": {".java", "text/x-java-source"},
}

// codeType is the extension and MIME type of a code block's language; text otherwise.
func codeType(lang string) (ext, mime string) {
	if t, ok := codeTypes[strings.ToLower(lang)]; ok {
		return t.ext, t.mime
	}
	return ".txt", "text/plain"
}

// errNoCodeBlocks: md_to_codeblock found nothing to extract.
var errNoCodeBlocks = errors.New("no code blocks found in the input text")

// convertCodeBlocks is md_to_codeblock: each fenced code block of the text as a file named after
// its language (code.py, or code_1.py, code_2.sh… for several), its text trimmed as the plugin
// trims it; with is_compress "true", one ZIP file holding them as code_1.py, code_2.sh….
func convertCodeBlocks(ctx context.Context, in convertInput) ([]tools.File, string, error) {
	doc, err := newDocument(ctx, in.md)
	if err != nil {
		return nil, "", err
	}
	var blocks []*block
	walkBlocks(doc.blocks, func(b *block) {
		if b.kind == kindCode && b.fenced {
			blocks = append(blocks, b)
		}
	})
	if len(blocks) == 0 {
		return nil, "", errNoCodeBlocks
	}
	if in.args.flag("is_compress", false) {
		return codeZIP(in, blocks)
	}
	if len(blocks) > maxFiles {
		return nil, "", fmt.Errorf("the text has %d code blocks; at most %d files are made by one call (is_compress makes one ZIP file of them)", len(blocks), maxFiles)
	}
	var f files
	for i, b := range blocks {
		ext, mimeType := codeType(b.lang)
		name := stem(in.filename(), defaultCodeStem, ext)
		if len(blocks) > 1 {
			name += "_" + strconv.Itoa(i+1)
		}
		if err := f.add(name+ext, mimeType, []byte(strings.TrimSpace(b.code))); err != nil {
			return nil, "", err
		}
	}
	return f.list, "", nil
}

// codeZIP is the code blocks in one ZIP file.
func codeZIP(in convertInput, blocks []*block) ([]tools.File, string, error) {
	buf := newLimitedBuffer()
	zw := zip.NewWriter(buf)
	for i, b := range blocks {
		ext, _ := codeType(b.lang)
		w, err := zw.Create("code_" + strconv.Itoa(i+1) + ext)
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write([]byte(strings.TrimSpace(b.code))); err != nil {
			return nil, "", err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	var f files
	if err := f.add(fileName(in.filename(), defaultCodeStem, ".zip"), mimeZIP, buf.Bytes()); err != nil {
		return nil, "", err
	}
	return f.list, "", nil
}
