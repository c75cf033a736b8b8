package nodes

import (
	"bytes"
	"context"
	"errors"
	"path"
	"strings"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Dify's error types of the document extractor.
const (
	typeDocumentExtractor = "DocumentExtractorError"
	typeFileDownload      = "FileDownloadError"
	typeTextExtraction    = "TextExtractionError"
	typeUnsupportedFile   = "UnsupportedFileTypeError"
)

// documentExtractor outputs the text of a file (text, a string) or of each file of a list
// (text, an array of strings), extracted as knowledge documents are.
type documentExtractor struct {
	d   Deps
	sel []string
}

func (d Deps) newDocumentExtractor(n *workflow.Node) (workflow.NodeRunner, error) {
	sel := workflow.Selector(n.Data["variable_selector"])
	if len(sel) < 2 {
		return nil, configError("variable_selector must name a variable")
	}
	return &documentExtractor{d: d, sel: sel}, nil
}

func (de *documentExtractor) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	res := workflow.Result{Inputs: map[string]any{"variable_selector": toAny(de.sel)}}
	v, ok := x.Pool.Get(de.sel)
	if !ok {
		return res, workflow.Errorf(typeDocumentExtractor, "File variable not found for selector: %s", strings.Join(de.sel, "."))
	}
	fs, ok := fileValues(v)
	if !ok {
		return res, workflow.Errorf(typeDocumentExtractor, "%s is not a file or a list of files", strings.Join(de.sel, "."))
	}
	texts := make([]any, 0, len(fs))
	for _, f := range fs {
		text, err := de.text(ctx, env(x), f)
		if err != nil {
			return res, err
		}
		texts = append(texts, text)
	}
	switch v.(type) {
	case *value.File:
		res.Outputs = map[string]any{"text": texts[0]}
	case nil:
		res.Outputs = map[string]any{"text": ""}
	default:
		res.Outputs = map[string]any{"text": texts}
	}
	return res, nil
}

// text extracts one file's text.
func (de *documentExtractor) text(ctx context.Context, e *Env, f *value.File) (string, error) {
	name := fileName(f)
	if name == "" || !extract.Supported(name) {
		// A remote file's name may come from its URL: it is checked again once fetched.
		if f.TransferMethod != value.TransferRemoteURL || path.Ext(name) != "" {
			return "", unsupported(f, name)
		}
	}
	data, name, _, err := de.d.readFile(ctx, e, f)
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", workflow.Errorf(typeFileDownload, "Failed to download file: %v", err)
	}
	if !extract.Supported(name) {
		return "", unsupported(f, name)
	}
	ex := de.d.Extract
	if ex == nil {
		ex = extract.Extract
	}
	doc, err := ex(ctx, name, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		var ee *extract.Error
		if errors.As(err, &ee) && ee.Kind == extract.KindUnsupported {
			return "", workflow.Errorf(typeUnsupportedFile, "%s", ee.Message)
		}
		return "", workflow.Errorf(typeTextExtraction, "Failed to extract text from %s: %v", name, err)
	}
	return doc.Text, nil
}

func unsupported(f *value.File, name string) error {
	if ext := path.Ext(name); ext != "" {
		return workflow.Errorf(typeUnsupportedFile, "Unsupported Extension Type: %s", strings.ToLower(ext))
	}
	return workflow.Errorf(typeUnsupportedFile, "Unsupported MIME type: %s", f.MimeType)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
