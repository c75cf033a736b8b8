package value

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// FileModelIdentity marks a JSON object as a serialised Dify file.
const FileModelIdentity = "__dify__file__"

// File types and transfer methods as Dify spells them.
const (
	FileTypeImage    = "image"
	FileTypeDocument = "document"
	FileTypeAudio    = "audio"
	FileTypeVideo    = "video"
	FileTypeCustom   = "custom"

	TransferRemoteURL  = "remote_url"
	TransferLocalFile  = "local_file"
	TransferToolFile   = "tool_file"
	TransferDatasource = "datasource_file"
)

// FileAttributes are the sub-variables of a file that selectors and conditions may name.
var FileAttributes = []string{"type", "size", "name", "mime_type", "transfer_method", "url", "extension", "related_id"}

// File is a file in the variable pool (an upload, a remote URL or a tool output). Empty optional
// strings serialise as null. Extension carries its leading dot (".png"). URL is the resolved,
// client-facing link (signed for uploads and tool files); when empty the remote URL is used.
type File struct {
	ID             string
	TenantID       string
	Type           string
	TransferMethod string
	RemoteURL      string
	RelatedID      string
	Filename       string
	Extension      string
	MimeType       string
	Size           int64
	URL            string
}

// ResolvedURL is the link Dify would generate for the file.
func (f *File) ResolvedURL() string {
	if f.URL != "" {
		return f.URL
	}
	return f.RemoteURL
}

// Attr returns a file sub-variable by Dify's attribute name: type, size, name (the filename),
// mime_type, transfer_method, url, extension, related_id. Unset optional strings are nil.
// The second result is false for an unknown attribute.
func (f *File) Attr(name string) (any, bool) {
	switch name {
	case "type":
		return f.Type, true
	case "size":
		return f.Size, true
	case "name":
		return optional(f.Filename), true
	case "mime_type":
		return optional(f.MimeType), true
	case "transfer_method":
		return f.TransferMethod, true
	case "url":
		return optional(f.ResolvedURL()), true
	case "extension":
		return optional(f.Extension), true
	case "related_id":
		return optional(f.RelatedID), true
	}
	return nil, false
}

func optional(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Markdown renders the file as an answer node shows it: an image as ![filename](url), anything
// else as [filename](url) (the URL stands in for a missing filename).
func (f *File) Markdown() string {
	url := f.ResolvedURL()
	if f.Type == FileTypeImage {
		return "![" + f.Filename + "](" + url + ")"
	}
	name := f.Filename
	if name == "" {
		name = url
	}
	return "[" + name + "](" + url + ")"
}

// Dict is the file in Dify's serialised dict shape, keys in Dify's order, with the url appended.
func (f *File) Dict() *Object {
	o := f.dictNoURL()
	o.Set("url", optional(f.ResolvedURL()))
	return o
}

// dictNoURL is the model dump Dify nests inside objects (no generated url).
func (f *File) dictNoURL() *Object {
	return ObjectOf(
		"dify_model_identity", FileModelIdentity,
		"id", optional(f.ID),
		"tenant_id", f.TenantID,
		"type", f.Type,
		"transfer_method", f.TransferMethod,
		"remote_url", optional(f.RemoteURL),
		"related_id", optional(f.RelatedID),
		"filename", optional(f.Filename),
		"extension", optional(f.Extension),
		"mime_type", optional(f.MimeType),
		"size", f.Size,
	)
}

// MarshalJSON encodes the file in Dify's dict shape.
func (f *File) MarshalJSON() ([]byte, error) { return f.Dict().MarshalJSON() }

// UnmarshalJSON decodes Dify's file dict (upload_file_id / tool_file_id are accepted for
// related_id, as older payloads carry them).
func (f *File) UnmarshalJSON(b []byte) error {
	v, err := Decode(bytes.TrimSpace(b))
	if err != nil {
		return err
	}
	o, ok := v.(*Object)
	if !ok {
		return fmt.Errorf("value: file JSON is %s, not an object", TypeOf(v))
	}
	nf, ok := FileFromObject(o)
	if !ok {
		return fmt.Errorf("value: object is not a file (no type or transfer_method)")
	}
	*f = *nf
	return nil
}

// IsFileObject reports whether o is a serialised Dify file (it carries the file identity marker).
func IsFileObject(o *Object) bool {
	id, _ := o.Get("dify_model_identity")
	return id == FileModelIdentity
}

// FileFromObject reads Dify's file dict. It needs at least type and transfer_method.
func FileFromObject(o *Object) (*File, bool) {
	str := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := o.Get(k); ok {
				if s, ok := v.(string); ok && s != "" {
					return s
				}
			}
		}
		return ""
	}
	f := &File{
		ID:             str("id"),
		TenantID:       str("tenant_id"),
		Type:           str("type"),
		TransferMethod: str("transfer_method"),
		RemoteURL:      str("remote_url"),
		RelatedID:      str("related_id", "upload_file_id", "tool_file_id", "reference"),
		Filename:       str("filename"),
		Extension:      str("extension"),
		MimeType:       str("mime_type"),
		URL:            str("url"),
		Size:           -1,
	}
	switch s, _ := o.Get("size"); n := s.(type) {
	case int64:
		f.Size = n
	case float64:
		f.Size = int64(n)
	}
	if f.Type == "" || f.TransferMethod == "" {
		return nil, false
	}
	return f, true
}

var _ json.Marshaler = (*File)(nil)
