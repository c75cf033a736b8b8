package nodes

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/httpreq"
	"github.com/parleyhq/parley/internal/workflow/template"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// httpRequest sends the request its data describes (package httpreq) and outputs the response:
// status_code, body, headers and files (a file response, kept as a tool file).
type httpRequest struct {
	d   Deps
	cfg httpreq.Config
}

func (d Deps) newHTTPRequest(n *workflow.Node) (workflow.NodeRunner, error) {
	cfg, err := httpreq.Parse(n.Data)
	if err != nil {
		return nil, configError("%v", err)
	}
	return &httpRequest{d: d, cfg: cfg}, nil
}

func (h *httpRequest) Run(ctx context.Context, x *workflow.Exec) (workflow.Result, error) {
	res := workflow.Result{Inputs: map[string]any{}}
	if h.d.HTTP.Client == nil {
		return res, workflow.Errorf("HttpRequestNodeError", "http-request nodes cannot run on this server: no HTTP client is configured")
	}
	henv := httpreq.Env{
		Render: func(text string) (string, error) { return template.Render(text, x.Pool.Get, value.Text), nil },
		File: func(sel []string) ([]httpreq.FileData, error) {
			v, _ := x.Pool.Get(sel)
			fs, _ := fileValues(v)
			out := make([]httpreq.FileData, 0, len(fs))
			for _, f := range fs {
				data, name, mimeType, err := h.d.readFile(ctx, env(x), f)
				if err != nil {
					return nil, err
				}
				out = append(out, httpreq.FileData{Name: name, MimeType: mimeType, Data: data})
			}
			return out, nil
		},
		Client: h.d.HTTP.Client, Settings: h.d.HTTP.Settings, Transports: h.d.HTTP.Transports,
	}
	resp, err := httpreq.Do(ctx, h.cfg, henv)
	if err != nil {
		return res, httpError(ctx, err)
	}
	res.ProcessData = map[string]any{"request": resp.Request}
	headers := value.NewObject()
	for _, k := range slices.Sorted(maps.Keys(resp.Headers)) {
		headers.Set(k, resp.Headers[k])
	}
	outFiles := make([]any, 0, len(resp.Files))
	for _, fd := range resp.Files {
		f, err := h.keep(ctx, env(x), fd)
		if err != nil {
			return res, workflow.Errorf("HttpRequestNodeError", "the response file could not be kept: %v", err)
		}
		outFiles = append(outFiles, f)
	}
	res.Outputs = map[string]any{
		"status_code": int64(resp.StatusCode), "body": resp.Body, "headers": headers, "files": outFiles,
	}
	if h.cfg.FailsOnStatus() {
		if err := resp.StatusError(); err != nil {
			return res, httpError(ctx, err)
		}
	}
	return res, nil
}

// keep stores a response file as a tool file of the message being answered.
func (h *httpRequest) keep(ctx context.Context, e *Env, fd httpreq.FileData) (*value.File, error) {
	if h.d.Files == nil || e.AppID == "" || e.MessageID == "" || e.EndUserID == "" {
		return nil, errors.New("this run keeps no files")
	}
	saved, err := h.d.Files.SaveToolFile(context.WithoutCancel(ctx), files.ToolFile{
		AppID: e.AppID, MessageID: e.MessageID, CreatedBy: e.EndUserID, Name: fd.Name, MIMEType: fd.MimeType, Data: fd.Data,
	})
	if err != nil {
		return nil, err
	}
	up := saved.Upload
	f := &value.File{
		ID: up.ID, Type: saved.Message.Type, TransferMethod: value.TransferToolFile, RelatedID: up.ID,
		Filename: up.Name, MimeType: up.MimeType, Size: up.Size, URL: saved.URL,
	}
	if up.Extension != "" {
		f.Extension = "." + up.Extension
		if !strings.HasSuffix(f.Filename, f.Extension) {
			f.Filename += f.Extension
		}
	}
	return f, nil
}

// httpError makes a failure of httpreq the node's error, of Dify's error type.
func httpError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	var he *httpreq.Error
	if errors.As(err, &he) {
		return &workflow.NodeError{Type: he.Type, Err: he}
	}
	return &workflow.NodeError{Type: "HttpRequestNodeError", Err: err}
}
