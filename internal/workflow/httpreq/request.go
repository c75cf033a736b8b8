package httpreq

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/kaptinlin/jsonrepair"
)

// Error types, as Dify names them in a failed node's error_type.
const (
	TypeInvalidURL   = "InvalidURLError"
	TypeAuthConfig   = "AuthorizationConfigError"
	TypeRequestBody  = "RequestBodyError"
	TypeFileFetch    = "FileFetchError"
	TypeRequest      = "HttpRequestNodeError"
	TypeResponseSize = "ResponseSizeError"
	TypeResponseCode = "HTTPResponseCodeError"
	TypeSSRF         = "ToolSSRFError"
)

// Error is a failure of the node: Type is Dify's error_type for it (the fail-branch and
// default-value outputs carry it), Msg its error text.
type Error struct {
	Type string
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

func fail(typ string, cause error, format string, args ...any) *Error {
	return &Error{Type: typ, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// FileData is a file sent in a body or received as a response.
type FileData struct {
	// Name is the file name (may be empty).
	Name string
	// MimeType is the media type without parameters.
	MimeType string
	Data     []byte
}

// Env is what the engine lends one run of the node.
type Env struct {
	// Render substitutes the {{#node.var#}} references of a template. Required.
	Render func(text string) (string, error)
	// File returns the file or files a variable selector names; none (and no error) when the
	// variable is missing or holds no file. Needed for file items and binary bodies.
	File func(selector []string) ([]FileData, error)
	// Client sends the request: the server's SSRF-guarded client. Required.
	Client *http.Client
	// Settings are the server's limits and defaults; zero fields take Dify's defaults.
	Settings Settings
	// Transports, when set, lets runs share connections (one per server); nil opens a
	// connection per run.
	Transports *Transports
}

// built is a request ready to send.
type built struct {
	method  string
	url     string
	header  http.Header
	body    []byte
	authKey string // the header holding the credentials, masked in the log
}

// build renders the node's templates and assembles the request, as Dify's executor does:
// credentials first, then URL, params, headers and body.
func build(c Config, env Env) (*built, error) {
	b := &built{method: c.Method, header: http.Header{}}
	var authValue string
	if c.Auth.Type == AuthAPIKey {
		key, err := env.Render(c.Auth.APIKey)
		if err != nil {
			return nil, fmt.Errorf("authorization api_key: %w", err)
		}
		if strings.TrimSpace(key) == "" {
			return nil, fail(TypeAuthConfig, nil, "API key is required for authorization but was empty. Please provide a valid API key.")
		}
		b.authKey = c.Auth.Header
		if b.authKey == "" {
			b.authKey = "Authorization"
		}
		switch c.Auth.KeyType {
		case KeyBearer:
			authValue = "Bearer " + key
		case KeyBasic:
			// A "user:password" key is encoded; any other is taken to be encoded already.
			if strings.Contains(key, ":") {
				key = base64.StdEncoding.EncodeToString([]byte(key))
			}
			authValue = "Basic " + key
		case KeyCustom:
			authValue = key
		default:
			b.authKey = ""
		}
	}

	raw, err := env.Render(c.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	// A URL produced by a model or a code node often ends with a newline.
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, fail(TypeInvalidURL, nil, "url is required")
	}
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		return nil, fail(TypeInvalidURL, nil, "url should start with http:// or https://")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fail(TypeInvalidURL, err, "invalid url %q", raw)
	}
	u.RawQuery = escapeQuery(u.RawQuery)

	params, err := pairs(c.Params, env.Render, true)
	if err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	if len(params) > 0 {
		u.RawQuery = mergeQuery(u.RawQuery, params)
	}
	b.url = u.String()

	// Headers are rendered as one text, then split (a rendered value may add lines); a
	// repeated key keeps its last value.
	htext, err := env.Render(c.Headers)
	if err != nil {
		return nil, fmt.Errorf("headers: %w", err)
	}
	hs, _ := pairs(htext, nil, false)
	for _, kv := range hs {
		if !validHeaderName(kv[0]) {
			return nil, fail(TypeRequest, nil, "headers: invalid header name %q", kv[0])
		}
		b.header[textproto.CanonicalMIMEHeaderKey(kv[0])] = []string{kv[1]}
	}
	if b.authKey != "" {
		if !validHeaderName(b.authKey) {
			return nil, fail(TypeAuthConfig, nil, "authorization header: invalid header name %q", b.authKey)
		}
		b.header.Set(b.authKey, authValue)
	}
	if err := b.buildBody(c.Body, env); err != nil {
		return nil, err
	}
	return b, nil
}

// contentTypes are the Content-Type a body type sends unless the headers name one.
var contentTypes = map[string]string{
	BodyJSON:       "application/json",
	BodyURLEncoded: "application/x-www-form-urlencoded",
	BodyRawText:    "text/plain",
}

func (b *built) buildBody(body Body, env Env) error {
	one := func() (Item, error) {
		if len(body.Items) != 1 {
			return Item{}, fail(TypeRequestBody, nil, "%s body type should have exactly one item", body.Type)
		}
		return body.Items[0], nil
	}
	if ct := contentTypes[body.Type]; ct != "" && b.header.Get("Content-Type") == "" {
		b.header.Set("Content-Type", ct)
	}
	switch body.Type {
	case BodyNone:
	case BodyRawText:
		it, err := one()
		if err != nil {
			return err
		}
		s, err := env.Render(it.Value)
		if err != nil {
			return fmt.Errorf("body: %w", err)
		}
		b.body = []byte(s)
	case BodyJSON:
		it, err := one()
		if err != nil {
			return err
		}
		s, err := env.Render(it.Value)
		if err != nil {
			return fmt.Errorf("body: %w", err)
		}
		if b.body, err = jsonBody(s); err != nil {
			return err
		}
	case BodyBinary:
		it, err := one()
		if err != nil {
			return err
		}
		files, err := files(env, it.File)
		if err != nil {
			return err
		}
		if len(files) != 1 {
			return fail(TypeFileFetch, nil, "cannot fetch file with selector %s", pySelector(it.File))
		}
		b.body = files[0].Data
	case BodyURLEncoded:
		kvs, err := renderItems(body.Items, env, false)
		if err != nil {
			return err
		}
		var sb strings.Builder
		for i, kv := range kvs {
			if i > 0 {
				sb.WriteByte('&')
			}
			sb.WriteString(url.QueryEscape(kv[0]) + "=" + url.QueryEscape(kv[1]))
		}
		b.body = []byte(sb.String())
	case BodyFormData:
		return b.multipartBody(body, env)
	}
	return nil
}

// jsonBody renders the json body as Dify sends it: parsed (control characters inside strings
// allowed, and broken JSON repaired as far as possible, since rendered values often carry raw
// newlines or quotes), then sent compact with its key order kept.
func jsonBody(s string) ([]byte, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if json.Valid([]byte(s)) {
		var out bytes.Buffer
		if err := json.Compact(&out, []byte(s)); err == nil {
			return out.Bytes(), nil
		}
	}
	repaired, err := jsonrepair.Repair(s)
	if err != nil || !json.Valid([]byte(repaired)) {
		return nil, fail(TypeRequestBody, err, "Failed to parse JSON: %s", s)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(repaired)); err != nil {
		return nil, fail(TypeRequestBody, err, "Failed to parse JSON: %s", s)
	}
	return out.Bytes(), nil
}

// renderItems renders the keys and values of the items (only the text ones with textOnly);
// a repeated key keeps its first position and its last value, like the dict Dify builds.
func renderItems(items []Item, env Env, textOnly bool) ([][2]string, error) {
	var out [][2]string
	pos := map[string]int{}
	for i, it := range items {
		if textOnly && it.Type != ItemText {
			continue
		}
		k, err := env.Render(it.Key)
		if err != nil {
			return nil, fmt.Errorf("body.data[%d].key: %w", i, err)
		}
		v, err := env.Render(it.Value)
		if err != nil {
			return nil, fmt.Errorf("body.data[%d].value: %w", i, err)
		}
		if p, ok := pos[k]; ok {
			out[p][1] = v
			continue
		}
		pos[k] = len(out)
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

func (b *built) multipartBody(body Body, env Env) error {
	texts, err := renderItems(body.Items, env, true)
	if err != nil {
		return err
	}
	type fileField struct {
		key string
		sel []string
	}
	var fileFields []fileField
	pos := map[string]int{}
	for i, it := range body.Items {
		if it.Type != ItemFile {
			continue
		}
		k, err := env.Render(it.Key)
		if err != nil {
			return fmt.Errorf("body.data[%d].key: %w", i, err)
		}
		if p, ok := pos[k]; ok {
			fileFields[p].sel = it.File
			continue
		}
		pos[k] = len(fileFields)
		fileFields = append(fileFields, fileField{k, it.File})
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, kv := range texts {
		if err := w.WriteField(kv[0], kv[1]); err != nil {
			return fail(TypeRequestBody, err, "form-data: %v", err)
		}
	}
	for _, ff := range fileFields {
		fs, err := files(env, ff.sel)
		if err != nil {
			return err
		}
		// A selector naming no file adds no part, as in Dify.
		for _, f := range fs {
			mt := f.MimeType
			if mt == "" {
				mt = "application/octet-stream"
			}
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quoteEscaper.Replace(ff.key), quoteEscaper.Replace(f.Name)))
			h.Set("Content-Type", mt)
			p, err := w.CreatePart(h)
			if err != nil {
				return fail(TypeRequestBody, err, "form-data: %v", err)
			}
			if _, err := p.Write(f.Data); err != nil {
				return fail(TypeRequestBody, err, "form-data: %v", err)
			}
		}
	}
	if err := w.Close(); err != nil {
		return fail(TypeRequestBody, err, "form-data: %v", err)
	}
	// The boundary is ours: a Content-Type from the headers would not match it.
	b.header.Set("Content-Type", w.FormDataContentType())
	b.body = buf.Bytes()
	return nil
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "%0D", "\n", "%0A")

func files(env Env, sel []string) ([]FileData, error) {
	if env.File == nil {
		return nil, fail(TypeFileFetch, nil, "cannot fetch file with selector %s", pySelector(sel))
	}
	fs, err := env.File(sel)
	if err != nil {
		return nil, fail(TypeFileFetch, err, "cannot fetch file with selector %s: %v", pySelector(sel), err)
	}
	return fs, nil
}

// pySelector writes a selector as Dify's messages show it: ['node', 'var'].
func pySelector(sel []string) string {
	parts := make([]string, len(sel))
	for i, s := range sel {
		parts[i] = "'" + s + "'"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// pairs reads "Key:Value" lines: split at the first ':', both sides trimmed, blank lines and
// lines with an empty key skipped (a line without ':' is a key with an empty value). With
// render, key and value are rendered after the split (params); duplicates are all kept.
func pairs(text string, render func(string) (string, error), skipEmptyKey bool) ([][2]string, error) {
	var out [][2]string
	for _, line := range splitLines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" && skipEmptyKey {
			continue
		}
		if render != nil {
			var err error
			if k, err = render(k); err != nil {
				return nil, err
			}
			if v, err = render(v); err != nil {
				return nil, err
			}
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// splitLines splits at the line boundaries Python's str.splitlines knows, as Dify does.
func splitLines(s string) []string {
	var out []string
	rs := []rune(s)
	var cur strings.Builder
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, cur.String())
			cur.Reset()
		case '\r':
			out = append(out, cur.String())
			cur.Reset()
			if i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// escapeQuery percent-encodes the bytes a query may not hold raw (spaces, non-ASCII, quotes),
// as Dify's HTTP client does, leaving valid escapes and the rest as typed.
func escapeQuery(q string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c > ' ' && c < 0x7f && strings.IndexByte(`"<>\^`+"`{|}", c) < 0 {
			if c == '%' && (i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2])) {
				b.WriteString("%25")
				continue
			}
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// mergeQuery merges params into a URL's query as Dify's HTTP client does: the query is read as
// an ordered map of key → values; a key the params name takes the params' values (every one,
// in order) in place, new keys follow in the params' order; the result is encoded afresh.
func mergeQuery(raw string, params [][2]string) string {
	var keys []string
	vals := map[string][]string{}
	add := func(k, v string) {
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = append(vals[k], v)
	}
	for _, s := range strings.Split(raw, "&") {
		if s == "" {
			continue
		}
		k, v, _ := strings.Cut(s, "=")
		dk, err1 := url.QueryUnescape(k)
		dv, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			dk, dv = k, v
		}
		add(dk, dv)
	}
	fromParams := map[string]bool{}
	for _, p := range params {
		if !fromParams[p[0]] {
			fromParams[p[0]] = true
			if _, ok := vals[p[0]]; ok {
				vals[p[0]] = nil
			}
		}
		add(p[0], p[1])
	}
	var parts []string
	for _, k := range keys {
		for _, v := range vals[k] {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	return strings.Join(parts, "&")
}

// reader returns the body as a fresh reader (for redirects that resend it).
func (b *built) reader() io.Reader {
	if b.body == nil {
		return nil
	}
	return bytes.NewReader(b.body)
}
