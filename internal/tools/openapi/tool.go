package openapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/tools"
)

// Auth types, as Dify's API tool credentials spell auth_type.
const (
	AuthNone = "none"
	// AuthAPIKey sends the key in a header (Dify's older "api_key", the same as "api_key_header").
	AuthAPIKey       = "api_key"
	AuthAPIKeyHeader = "api_key_header"
	// AuthAPIKeyQuery sends the key as a query parameter.
	AuthAPIKeyQuery = "api_key_query"
)

// Header prefixes, as Dify's api_key_header_prefix spells them.
const (
	PrefixCustom = "custom" // the value as given
	PrefixBearer = "bearer" // "Bearer <value>"
	PrefixBasic  = "basic"  // "Basic <value>"
)

// Auth is a provider's credentials.
type Auth struct {
	// Type is AuthNone (or empty), AuthAPIKey / AuthAPIKeyHeader, or AuthAPIKeyQuery.
	Type string
	// Header names the header the key goes in; "Authorization" when empty.
	Header string
	// Prefix is PrefixCustom (or empty), PrefixBearer or PrefixBasic. With PrefixBasic a Value
	// holding "user:password" is base64-encoded first; otherwise, as in Dify, the value is taken
	// to be encoded already.
	Prefix string
	// QueryParam names the query parameter for AuthAPIKeyQuery; "key" when empty.
	QueryParam string
	// Value is the secret.
	Value string
}

// Options configure the tools of one document.
type Options struct {
	// Provider is the provider name the tools report in their Identity.
	Provider string
	// HTTPClient makes the requests; required. The server passes its SSRF-guarded client.
	HTTPClient *http.Client
	// Auth is the provider's credentials.
	Auth Auth
	// Timeout bounds one call, response included; DefaultTimeout when zero.
	Timeout time.Duration
	// MaxResponseBytes bounds the response body; DefaultMaxResponseBytes when zero. A larger
	// response is reported to the model as an error.
	MaxResponseBytes int64
	// ServerURL, when set, replaces the document's servers.
	ServerURL string
	// Headers are sent with every request (an operator's custom headers, which may carry
	// secrets): they override header parameters of the same name, the credentials override
	// them, and they are dropped, like a custom key header, when a redirect leaves the host.
	Headers http.Header
}

// Defaults for Options.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxResponseBytes = 1 << 20
)

// excerptBytes is how much of an error response the model sees.
const excerptBytes = 1024

// New returns one tool per operation of doc. It fails with ErrInvalidDocument when the document
// cannot be used, and with a plain error when opts are incomplete.
func New(doc []byte, opts Options) ([]tools.Tool, error) {
	if opts.HTTPClient == nil {
		return nil, errors.New("openapi: Options.HTTPClient is required")
	}
	switch opts.Auth.Type {
	case "", AuthNone, AuthAPIKey, AuthAPIKeyHeader, AuthAPIKeyQuery:
	default:
		return nil, fmt.Errorf("openapi: unknown auth type %q", opts.Auth.Type)
	}
	switch opts.Auth.Prefix {
	case "", PrefixCustom, PrefixBearer, PrefixBasic:
	default:
		return nil, fmt.Errorf("openapi: unknown api_key_header_prefix %q", opts.Auth.Prefix)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	t, err := load(doc)
	if err != nil {
		return nil, err
	}
	ops, err := operations(t)
	if err != nil {
		return nil, err
	}
	for k, vs := range opts.Headers {
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n") || k == "" {
				return nil, fmt.Errorf("openapi: header %q: a name is required and line breaks are not allowed", k)
			}
		}
	}
	opts.Headers = opts.Headers.Clone()
	opts.HTTPClient = withoutKeyOnRedirect(opts.HTTPClient, opts.Auth, opts.Headers)
	out := make([]tools.Tool, 0, len(ops))
	for _, o := range ops {
		server := opts.ServerURL
		if server == "" {
			if len(o.serverURLs) == 0 {
				return nil, invalid("no server URL for %s %s (declare servers, or host for Swagger 2.0)", o.method, o.path)
			}
			server = o.serverURLs[0]
		}
		if _, err := joinURL(server, "/"); err != nil {
			return nil, invalid("%v", err)
		}
		out = append(out, &Tool{op: o, server: server, opts: opts})
	}
	return out, nil
}

// Tool is one operation of an API document.
type Tool struct {
	op     operation
	server string
	opts   Options
}

var _ tools.Tool = (*Tool)(nil)

// Identity implements tools.Tool.
func (t *Tool) Identity() tools.Identity {
	return tools.Identity{Provider: t.opts.Provider, Name: t.op.name, Label: map[string]string{"en_US": t.op.name}}
}

// Description implements tools.Tool.
func (t *Tool) Description() string { return t.op.description }

// Parameters implements tools.Tool.
func (t *Tool) Parameters() json.RawMessage { return t.op.schema }

func failed(format string, args ...any) tools.Result {
	return tools.Result{IsError: true, Text: fmt.Sprintf(format, args...)}
}

func badArgs(format string, args ...any) tools.Result {
	return tools.Result{IsError: true, Text: fmt.Sprintf("%v: %s", tools.ErrBadArguments, fmt.Sprintf(format, args...))}
}

// Invoke implements tools.Tool: it makes the operation's HTTP request. Failures on the other side
// (bad arguments, a refused connection, a timeout, a status of 400 or more, a response over the
// cap) come back as a Result with IsError; only a cancelled ctx is an error.
func (t *Tool) Invoke(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	values := map[string]any{}
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return badArgs("the arguments must be a JSON object"), nil
		}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(&values); err != nil {
			return badArgs("the arguments are not a JSON object: %v", err), nil
		}
	}
	req, res := t.request(ctx, values)
	if req == nil {
		return res, nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	req = req.WithContext(cctx)
	resp, err := t.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil {
			return failed("%s %s: no answer within %s", req.Method, redacted(req.URL), t.opts.Timeout), nil
		}
		return failed("%s %s failed: %v", req.Method, redacted(req.URL), unwrapURLError(err)), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.opts.MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		if cctx.Err() != nil {
			return failed("%s %s: the response did not finish within %s", req.Method, redacted(req.URL), t.opts.Timeout), nil
		}
		return failed("%s %s: reading the response failed: %v", req.Method, redacted(req.URL), err), nil
	}
	if int64(len(body)) > t.opts.MaxResponseBytes {
		return failed("%s %s: the response is larger than %d bytes (HTTP %d)", req.Method, redacted(req.URL), t.opts.MaxResponseBytes, resp.StatusCode), nil
	}
	if resp.StatusCode >= 400 {
		return failed("%s %s: HTTP %s: %s", req.Method, redacted(req.URL), resp.Status, excerpt(body)), nil
	}
	return t.result(resp.Header.Get("Content-Type"), body), nil
}

// result turns a successful response into the observation: text as text, anything else as a
// file.
func (t *Tool) result(contentType string, body []byte) tools.Result {
	mt, _, _ := mime.ParseMediaType(contentType)
	textual := mt == "" || strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") ||
		strings.HasSuffix(mt, "xml") || mt == "application/x-www-form-urlencoded" || mt == "application/javascript"
	if textual && utf8.Valid(body) {
		return tools.Result{Text: string(body)}
	}
	name := t.op.name
	if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
		name += exts[0]
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	return tools.Result{
		Text:  fmt.Sprintf("the API returned a file (%s, %d bytes)", mt, len(body)),
		Files: []tools.File{{Name: name, MIMEType: mt, Data: body}},
	}
}

// request builds the HTTP request from the arguments, or returns the observation saying why not.
func (t *Tool) request(ctx context.Context, values map[string]any) (*http.Request, tools.Result) {
	var missing []string
	for _, name := range t.op.required {
		if v, ok := values[name]; !ok || v == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, badArgs("missing required argument(s): %s", strings.Join(missing, ", "))
	}

	used := map[string]bool{}
	path := t.op.path
	query := url.Values{}
	header := http.Header{}
	for _, p := range t.op.params {
		v, ok := values[p.name]
		if !ok || v == nil {
			continue
		}
		used[p.name] = true
		switch p.in {
		case "path":
			s, err := scalar(v)
			if err != nil {
				return nil, badArgs("path parameter %q: %v", p.name, err)
			}
			path = strings.ReplaceAll(path, "{"+p.name+"}", url.PathEscape(s))
		case "query":
			list, err := strings1(v)
			if err != nil {
				return nil, badArgs("query parameter %q: %v", p.name, err)
			}
			for _, s := range list {
				query.Add(p.name, s)
			}
		case "header":
			s, err := scalar(v)
			if err != nil {
				return nil, badArgs("header %q: %v", p.name, err)
			}
			if strings.ContainsAny(s, "\r\n") {
				return nil, badArgs("header %q: line breaks are not allowed", p.name)
			}
			header.Set(p.name, s)
		}
	}
	u, err := joinURL(t.server, path)
	if err != nil {
		return nil, failed("the tool's server URL is not usable: %v", err)
	}
	q := u.Query()
	for k, vs := range query {
		for _, v := range vs {
			q.Add(k, v)
		}
	}

	var body io.Reader
	switch t.op.body {
	case bodyObject:
		rest := map[string]any{}
		for k, v := range values {
			if !used[k] {
				rest[k] = v
			}
		}
		b, err := json.Marshal(rest)
		if err != nil {
			return nil, badArgs("the request body does not encode: %v", err)
		}
		body = bytes.NewReader(b)
	case bodyValue:
		if v, ok := values["body"]; ok {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, badArgs("the request body does not encode: %v", err)
			}
			body = bytes.NewReader(b)
		}
	}

	for k, vs := range t.opts.Headers {
		header.Del(k)
		for _, v := range vs {
			header.Add(k, v)
		}
	}
	a := t.opts.Auth
	switch a.Type {
	case AuthAPIKey, AuthAPIKeyHeader:
		name := a.Header
		if name == "" {
			name = "Authorization"
		}
		header.Set(name, authValue(a))
	case AuthAPIKeyQuery:
		name := a.QueryParam
		if name == "" {
			name = "key"
		}
		q.Set(name, a.Value)
	}
	u.RawQuery = q.Encode()

	req, err := http.NewRequestWithContext(ctx, t.op.method, u.String(), body)
	if err != nil {
		return nil, failed("the request cannot be built: %v", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, */*;q=0.5")
	}
	return req, tools.Result{}
}

func authValue(a Auth) string {
	switch a.Prefix {
	case PrefixBearer:
		return "Bearer " + a.Value
	case PrefixBasic:
		v := a.Value
		// A base64 value never holds a colon, so "user:password" is unambiguous.
		if strings.Contains(v, ":") {
			v = base64.StdEncoding.EncodeToString([]byte(v))
		}
		return "Basic " + v
	default:
		return a.Value
	}
}

// scalar renders a JSON scalar as a string for a path segment or a header.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	default:
		return "", errors.New("must be a string, number or boolean")
	}
}

// strings1 renders a query value: a scalar, or an array of scalars repeated.
func strings1(v any) ([]string, error) {
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for _, item := range list {
			s, err := scalar(item)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := scalar(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func excerpt(body []byte) string {
	if len(body) == 0 {
		return "(empty body)"
	}
	if len(body) <= excerptBytes {
		return string(bytes.ToValidUTF8(body, []byte("?")))
	}
	cut := body[:excerptBytes]
	for len(cut) > 0 && !utf8.Valid(cut) {
		cut = cut[:len(cut)-1]
	}
	return string(cut) + "…"
}

// redacted is the URL without its query, which may hold the API key.
func redacted(u *url.URL) string {
	c := *u
	c.RawQuery = ""
	c.User = nil
	return c.String()
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// withoutKeyOnRedirect returns a copy of c (sharing its transport) that drops a custom API key
// header when a redirect leaves the original host. Go drops Authorization on such redirects by
// itself, but not a header of another name.
func withoutKeyOnRedirect(c *http.Client, a Auth, custom http.Header) *http.Client {
	var names []string
	if (a.Type == AuthAPIKey || a.Type == AuthAPIKeyHeader) && a.Header != "" {
		names = append(names, a.Header)
	}
	for k := range custom {
		names = append(names, k)
	}
	if len(names) == 0 {
		return c
	}
	cp := *c
	next := c.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && req.URL.Host != via[0].URL.Host {
			for _, name := range names {
				req.Header.Del(name)
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cp
}
