package httpreq

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/htmlindex"
)

// sniffLen is how much of the body the text-or-file decision looks at.
const sniffLen = 1024

// textApplicationTypes are application/* subtypes that are text when the type contains them.
var textApplicationTypes = []string{"json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "graphql"}

// textMarkers are beginnings that make an undeclared application/* body text.
var textMarkers = [][]byte{[]byte("{"), []byte("["), []byte("<"), []byte("function"), []byte("var "), []byte("const "), []byte("let ")}

// isFile decides, as Dify does, whether a response is a file (output in files, body empty) or
// text:
//  1. a Content-Disposition of type attachment, or with a filename, makes a file;
//  2. text/* is text;
//  3. application/* is text when its subtype names a text format (json, xml, javascript,
//     x-www-form-urlencoded, yaml, graphql) or when its first 1 KiB is valid UTF-8 holding a
//     text marker ({, [, <, function, var, const, let);
//  4. other application/*, image/*, audio/* and video/* are files; anything else is text.
//
// Dify asks Python's table of known types at step 4, so an application/* type that table does
// not know is text there; here every such type is a file, since a body the sender did not
// declare as text is safer stored than decoded.
func isFile(contentType, disposition string, head []byte) bool {
	if disposition != "" {
		typ, params, err := mime.ParseMediaType(disposition)
		if err == nil && (typ == "attachment" || params["filename"] != "") {
			return true
		}
		if err != nil && (strings.HasPrefix(strings.ToLower(strings.TrimSpace(disposition)), "attachment") ||
			strings.Contains(strings.ToLower(disposition), "filename")) {
			return true
		}
	}
	ct := strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	if strings.HasPrefix(ct, "text/") {
		return false
	}
	if strings.HasPrefix(ct, "application/") {
		for _, t := range textApplicationTypes {
			if strings.Contains(ct, t) {
				return false
			}
		}
		if utf8.Valid(head) {
			for _, m := range textMarkers {
				if bytes.Contains(head, m) {
					return false
				}
			}
		}
		return true
	}
	return strings.HasPrefix(ct, "image/") || strings.HasPrefix(ct, "audio/") || strings.HasPrefix(ct, "video/")
}

// responseFile names a file response and picks its media type as Dify does: the type the
// Content-Disposition filename suggests, else the Content-Type, else the type the URL's last
// path segment suggests, else application/octet-stream. The name is the disposition's filename,
// else that last segment.
func responseFile(resp *http.Response, contentType, disposition string, data []byte) FileData {
	var name, mt string
	if disposition != "" {
		if _, params, err := mime.ParseMediaType(disposition); err == nil {
			name = params["filename"]
		} else if m := looseFilename.FindStringSubmatch(disposition); m != nil {
			// Servers send unquoted names with spaces; read them as mail readers do.
			name = strings.TrimSpace(m[1])
		}
	}
	if name != "" {
		mt = typeByName(name)
	}
	if mt == "" && contentType != "" {
		if t, _, err := mime.ParseMediaType(contentType); err == nil {
			mt = t
		} else {
			mt = strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0])
		}
	}
	last := ""
	if resp.Request != nil && resp.Request.URL != nil {
		last = path.Base(resp.Request.URL.Path)
		if last == "/" || last == "." {
			last = ""
		}
		if u, err := url.PathUnescape(last); err == nil {
			last = u
		}
	}
	if mt == "" && last != "" {
		mt = typeByName(last)
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	if name == "" {
		name = last
	}
	if name != "" {
		// A name is a name, never a path.
		name = path.Base(strings.ReplaceAll(name, "\\", "/"))
		if name == "/" || name == "." || name == ".." {
			name = ""
		}
	}
	return FileData{Name: name, MimeType: mt, Data: data}
}

var looseFilename = regexp.MustCompile(`(?i)filename\s*=\s*"?([^";]+)`)

// commonTypes are the types of common file extensions, so that naming a file does not depend on
// the machine's type tables (mime.TypeByExtension reads them) for the usual documents.
var commonTypes = map[string]string{
	".pdf": "application/pdf", ".zip": "application/zip", ".json": "application/json",
	".doc": "application/msword", ".xls": "application/vnd.ms-excel", ".ppt": "application/vnd.ms-powerpoint",
	".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".csv":  "text/csv", ".txt": "text/plain", ".md": "text/markdown", ".html": "text/html", ".xml": "text/xml",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".svg": "image/svg+xml",
	".mp3": "audio/mpeg", ".wav": "audio/x-wav", ".m4a": "audio/mp4", ".mp4": "video/mp4", ".mov": "video/quicktime",
}

// typeByName is the media type a file name's extension suggests, without parameters.
func typeByName(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" {
		return ""
	}
	if t, ok := commonTypes[ext]; ok {
		return t
	}
	t := mime.TypeByExtension(ext)
	if t == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(t); err == nil {
		return mt
	}
	return t
}

// decodeText decodes a text body in the charset its Content-Type names, UTF-8 by default;
// undecodable bytes become U+FFFD, as in Dify.
func decodeText(data []byte, contentType string) string {
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "utf8" {
			if enc, err := htmlindex.Get(cs); err == nil {
				if out, err := enc.NewDecoder().Bytes(data); err == nil {
					return string(out)
				}
			}
		}
	}
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.Write(data[:n])
		}
		data = data[n:]
	}
	return b.String()
}

// log writes the request as Dify's process_data.request shows it: the request line, Host,
// the headers with the credentials masked, and the body, with file contents summarised.
func (b *built) log(body Body) string {
	u, _ := url.Parse(b.url)
	var sb strings.Builder
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	fmt.Fprintf(&sb, "%s %s HTTP/1.1\r\nHost: %s\r\n", b.method, p, u.Host)
	keys := make([]string, 0, len(b.header))
	for k := range b.header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.Join(b.header[k], ", ")
		if b.authKey != "" && strings.EqualFold(k, b.authKey) {
			v = strings.Repeat("*", len(v))
		}
		fmt.Fprintf(&sb, "%s: %s\r\n", k, v)
	}
	var text string
	switch body.Type {
	case BodyBinary:
		if b.body != nil {
			text = fmt.Sprintf("<binary_content: size=%d bytes>", len(b.body))
		}
	case BodyFormData:
		text = summariseMultipart(b.body, b.header.Get("Content-Type"))
	default:
		text = string(b.body)
	}
	if text != "" {
		fmt.Fprintf(&sb, "Content-Length: %d\r\n", len(text))
	}
	sb.WriteString("\r\n")
	sb.WriteString(text)
	return sb.String()
}

// summariseMultipart writes a form-data body for the log, each file part as a one-line
// summary of its name, type and size instead of its bytes.
func summariseMultipart(body []byte, contentType string) string {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["boundary"] == "" {
		return ""
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var sb strings.Builder
	for {
		part, err := r.NextPart()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(part)
		fmt.Fprintf(&sb, "--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n", params["boundary"], part.FormName())
		if part.FileName() != "" || part.Header.Get("Content-Type") != "" {
			fmt.Fprintf(&sb, "<file_content_binary: '%s', type='%s', size=%d bytes>\r\n", part.FileName(), part.Header.Get("Content-Type"), len(data))
		} else {
			sb.Write(data)
			sb.WriteString("\r\n")
		}
	}
	fmt.Fprintf(&sb, "--%s--\r\n", params["boundary"])
	return sb.String()
}
