package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// fileValues returns the files a value holds: a file, or the files of a list; ok is false when
// v is neither (nil and an empty list hold no files and are ok).
func fileValues(v any) (fs []*value.File, ok bool) {
	switch t := v.(type) {
	case nil:
		return nil, true
	case *value.File:
		return []*value.File{t}, true
	case []any:
		for _, it := range t {
			f, isFile := it.(*value.File)
			if !isFile {
				return nil, false
			}
			fs = append(fs, f)
		}
		return fs, true
	}
	return nil, false
}

// readFile returns the bytes of a file of the pool: an upload or a tool file of the app from the
// files service, a remote file fetched through its SSRF-guarded client. name is the file's name
// with its extension, mimeType its media type.
func (d Deps) readFile(ctx context.Context, e *Env, f *value.File) (data []byte, name, mimeType string, err error) {
	return d.readFileUpTo(ctx, e, f, -1)
}

// readFileUpTo is readFile failing with a *files.TooLargeError for a file of more than limit
// bytes (none when limit is negative); a stored file's recorded size is checked before it is
// read.
func (d Deps) readFileUpTo(ctx context.Context, e *Env, f *value.File, limit int64) (data []byte, name, mimeType string, err error) {
	name, mimeType = fileName(f), f.MimeType
	if d.Files == nil {
		return nil, name, mimeType, errors.New("this server reads no files")
	}
	if f.TransferMethod == value.TransferRemoteURL || f.RelatedID == "" {
		url := f.RemoteURL
		if url == "" {
			url = f.URL
		}
		r, err := d.Files.FetchRemote(ctx, url)
		if err != nil {
			return nil, name, mimeType, fmt.Errorf("the remote file could not be fetched: %w", remoteError(err))
		}
		if limit >= 0 && int64(len(r.Data)) > limit {
			return nil, name, mimeType, &files.TooLargeError{Limit: limit}
		}
		if name == "" {
			name = r.Filename
		}
		if mimeType == "" {
			mimeType = r.ContentType
		}
		return r.Data, name, mimeType, nil
	}
	up, err := d.Files.Lookup(ctx, f.RelatedID)
	if err == nil && e.AppID != "" && up.AppID != e.AppID {
		// Files reach the pool checked (the message's own, the app's tool files): one of
		// another app is refused as unknown all the same.
		err = fmt.Errorf("files: file %s: %w", f.RelatedID, files.ErrFileNotFound)
	}
	if err != nil {
		return nil, name, mimeType, err
	}
	if limit >= 0 && up.Size > limit {
		return nil, name, mimeType, &files.TooLargeError{Limit: limit}
	}
	rc, err := d.Files.Open(ctx, up)
	if err != nil {
		return nil, name, mimeType, err
	}
	defer rc.Close()
	var r io.Reader = rc
	if limit >= 0 {
		r = io.LimitReader(rc, limit+1)
	}
	if data, err = io.ReadAll(r); err != nil {
		return nil, name, mimeType, fmt.Errorf("read file %s: %w", up.ID, err)
	}
	if limit >= 0 && int64(len(data)) > limit {
		return nil, name, mimeType, &files.TooLargeError{Limit: limit}
	}
	if name == "" {
		name = up.Name
		if up.Extension != "" && path.Ext(name) == "" {
			name += "." + up.Extension
		}
	}
	if mimeType == "" {
		mimeType = up.MimeType
	}
	return data, name, mimeType, nil
}

// fileBudget is what one tool call may still be given: bytes and files.
type fileBudget struct {
	bytes, files int
}

// toolFileArg is what a tool's file parameter gets for a value of the pool: a file is a
// tools.FileArg with the file's bytes, a list of files a list of them; any other value (no
// file, text) goes as it is, for the tool to refuse. The files take their bytes and count from
// budget.
func (d Deps) toolFileArg(ctx context.Context, e *Env, v any, budget *fileBudget) (any, error) {
	if f, ok := v.(*value.File); ok {
		return d.fileArg(ctx, e, f, budget)
	}
	fs, ok := fileValues(v)
	if _, isList := v.([]any); !isList || !ok || len(fs) == 0 {
		return v, nil
	}
	out := make([]tools.FileArg, 0, len(fs))
	for _, f := range fs {
		a, err := d.fileArg(ctx, e, f, budget)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// fileArg reads one file for a tool.
func (d Deps) fileArg(ctx context.Context, e *Env, f *value.File, budget *fileBudget) (tools.FileArg, error) {
	if budget.files == 0 {
		return tools.FileArg{}, fmt.Errorf("a tool is given at most %d files", tools.MaxFileArgs)
	}
	data, name, mimeType, err := d.readFileUpTo(ctx, e, f, int64(budget.bytes))
	var tooLarge *files.TooLargeError
	if errors.As(err, &tooLarge) {
		return tools.FileArg{}, fmt.Errorf("the files given to a tool are at most %d MB together", tools.MaxFileArgBytes>>20)
	}
	if err != nil {
		return tools.FileArg{}, err
	}
	budget.bytes -= len(data)
	budget.files--
	ext := f.Extension
	if ext == "" {
		ext = path.Ext(name)
	}
	return tools.FileArg{Filename: name, Extension: ext, MIMEType: mimeType, Size: int64(len(data)), Type: f.Type, Data: data}, nil
}

// fileName is a file's name with its extension.
func fileName(f *value.File) string {
	name := f.Filename
	if f.Extension != "" && !strings.EqualFold(path.Ext(name), f.Extension) {
		name += "." + strings.TrimPrefix(f.Extension, ".")
	}
	return name
}

// remoteError keeps the files service's remote errors to what a user may see: they name
// addresses and resolvers, which are for the log.
func remoteError(err error) error {
	var tl *files.TooLargeError
	var se *files.StatusError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, files.ErrRemoteForbidden):
		return errors.New("the address is not allowed")
	case errors.As(err, &tl):
		return tl
	case errors.As(err, &se):
		return fmt.Errorf("status code %d", se.StatusCode)
	case errors.Is(err, files.ErrInvalidURL):
		return errors.New("invalid URL")
	}
	return errors.New("the fetch failed")
}
