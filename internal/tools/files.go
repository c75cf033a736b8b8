package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Files given to tools.
//
// Some Dify tools take a file: their parameters of type "file" (one file) or "files" (a list).
// In a workflow tool node such a parameter is a variable selector naming a file variable, and
// Dify hands the plugin a file object of metadata with a signed download URL, which the plugin
// fetches. Parley's tools run in process, so the tool node reads the file itself, through the
// files service and its guards, and puts the bytes in the arguments: a file parameter's value is
// a FileArg object (a list of them for a list of files). A tool says which of its parameters take
// files by implementing FileTaker; the node does this for those parameters only, so that API and
// MCP tools keep receiving Dify's file dict.
//
// As in Dify, agents never give files: file parameters are not offered to the model (Dify's
// agent runner leaves parameters of types file, files and system-files out of a tool's schema),
// so a file tool called by an agent answers that it was given no file.

// FileArg is a file given to a tool as a parameter's value. In the JSON arguments it is an
// object shaped like the file Dify gives a plugin (filename, extension, mime_type, size, type),
// with the file's bytes, standard base64, in data_base64 where Dify gives a download URL.
type FileArg struct {
	// Filename is the file's name with its extension ("report.xlsx").
	Filename string `json:"filename"`
	// Extension is the extension with its dot (".xlsx"), as Dify spells it; may be empty.
	Extension string `json:"extension,omitempty"`
	// MIMEType is the file's media type; may be empty.
	MIMEType string `json:"mime_type"`
	// Size is the number of bytes of Data.
	Size int64 `json:"size"`
	// Type is Dify's file type: image, document, audio, video or custom.
	Type string `json:"type,omitempty"`
	// Data is the file's content.
	Data []byte `json:"data_base64"`
}

// FileTaker is implemented by a tool some of whose parameters take files.
type FileTaker interface {
	// FileParameters names the parameters of Dify's types "file" and "files".
	FileParameters() []string
}

// Bounds of the files a tool node gives one call, together. The bytes travel base64-encoded in
// the arguments and are decoded by the tool, so a call holds a few times this much at its peak.
const (
	// MaxFileArgBytes is Dify's default upload limit of a document (15 MB).
	MaxFileArgBytes = 15 << 20
	// MaxFileArgs bounds the number of files.
	MaxFileArgs = 20
)

// ErrNoFile: a file parameter holds no file content (left out, null, text, or a file given by
// reference only, as Dify's dict with a URL).
var ErrNoFile = errors.New("no file was given")

// DecodeFileArg reads one file from a file parameter's JSON value. A list holding exactly one
// file is that file, as a single-file variable may reach the node as a list.
func DecodeFileArg(raw json.RawMessage) (FileArg, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return FileArg{}, fmt.Errorf("%w: %v", ErrBadArguments, err)
		}
		if len(list) != 1 {
			return FileArg{}, fmt.Errorf("%w: %d files where one is expected", ErrBadArguments, len(list))
		}
		raw = bytes.TrimSpace(list[0])
	}
	if len(raw) == 0 || raw[0] != '{' {
		return FileArg{}, ErrNoFile
	}
	var f struct {
		FileArg
		Data *[]byte `json:"data_base64"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return FileArg{}, fmt.Errorf("%w: the file is not readable: %v", ErrBadArguments, err)
	}
	if f.Data == nil {
		return FileArg{}, ErrNoFile
	}
	out := f.FileArg
	out.Data = *f.Data
	out.Size = int64(len(out.Data))
	return out, nil
}
