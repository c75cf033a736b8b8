package httpreq

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/tracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/netguard"
)

// captured is what the test server received.
type captured struct {
	Method string
	URI    string
	Header http.Header
	Body   []byte
}

// echoServer records each request and answers with respond (200 "ok" when nil).
func echoServer(t *testing.T, respond http.HandlerFunc) (*httptest.Server, func() captured) {
	t.Helper()
	var mu sync.Mutex
	var last captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = captured{Method: r.Method, URI: r.RequestURI, Header: r.Header.Clone(), Body: body}
		mu.Unlock()
		if respond != nil {
			respond(w, r)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, func() captured {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

var refRE = regexp.MustCompile(`\{\{#([a-zA-Z0-9_]+(?:\.[a-zA-Z0-9_]+)+)#\}\}`)

// renderer substitutes {{#a.b#}} references from vars; an unknown reference is an error.
func renderer(vars map[string]string) func(string) (string, error) {
	return func(s string) (string, error) {
		var missing string
		out := refRE.ReplaceAllStringFunc(s, func(m string) string {
			k := refRE.FindStringSubmatch(m)[1]
			v, ok := vars[k]
			if !ok {
				missing = k
			}
			return v
		})
		if missing != "" {
			return "", fmt.Errorf("variable %s not found", missing)
		}
		return out, nil
	}
}

// loopbackClient is the SSRF-guarded client with loopback allowed, as an operator's allow-list
// lets it; the test servers live on loopback.
func loopbackClient(t *testing.T) *http.Client {
	t.Helper()
	c, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func env(t *testing.T, vars map[string]string) Env {
	return Env{Render: renderer(vars), Client: loopbackClient(t)}
}

func mustParse(t *testing.T, data map[string]any) Config {
	t.Helper()
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func do(t *testing.T, c Config, e Env) *Response {
	t.Helper()
	resp, err := Do(context.Background(), c, e)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	return resp
}

func errType(t *testing.T, err error, want string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *Error of type %s, got %T %v", want, err, err)
	}
	if e.Type != want {
		t.Fatalf("error type %s (%v), want %s", e.Type, e, want)
	}
	return e
}

func TestBodyNoneGET(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	c := mustParse(t, map[string]any{
		"method": "get", "url": srv.URL + "/weather?stationid=58367",
		"authorization": map[string]any{"type": "no-auth", "config": nil},
		"body":          map[string]any{"type": "none", "data": []any{}},
		"headers":       "", "params": "",
	})
	resp := do(t, c, env(t, nil))
	got := last()
	if got.Method != "GET" || got.URI != "/weather?stationid=58367" || len(got.Body) != 0 {
		t.Errorf("server got %+v", got)
	}
	if resp.StatusCode != 200 || resp.Body != `{"ok":true}` || len(resp.Files) != 0 {
		t.Errorf("response %+v", resp)
	}
	if resp.Headers["content-type"] != "application/json" || resp.Headers["x-multi"] != "a, b" {
		t.Errorf("headers %v", resp.Headers)
	}
	if !strings.HasPrefix(resp.Request, "GET /weather?stationid=58367 HTTP/1.1\r\nHost: ") {
		t.Errorf("request log %q", resp.Request)
	}
}

func TestBodyRawText(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	// The node of a public export: raw text, Content-Type from the headers.
	c := mustParse(t, map[string]any{
		"method": "post", "url": srv.URL + "/macros/s/{{#env.deploy_id#}}/exec",
		"headers": "Content-Type:application/json",
		"body":    map[string]any{"type": "raw-text", "data": []any{map[string]any{"key": "", "type": "text", "value": "{{#1746786554629.text#}}"}}},
	})
	vars := map[string]string{"env.deploy_id": "D1", "1746786554629.text": "{\"date\": \"2024-05-09\"}\n"}
	resp := do(t, c, env(t, vars))
	got := last()
	if got.URI != "/macros/s/D1/exec" || string(got.Body) != vars["1746786554629.text"] || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("server got %+v %q", got, got.Body)
	}
	if resp.Body != "ok" {
		t.Errorf("body %q", resp.Body)
	}

	// Without a Content-Type header, raw text is text/plain.
	c = mustParse(t, map[string]any{"method": "put", "url": srv.URL, "body": map[string]any{"type": "raw-text", "data": "plain"}})
	do(t, c, env(t, nil))
	if got := last(); got.Method != "PUT" || got.Header.Get("Content-Type") != "text/plain" || string(got.Body) != "plain" {
		t.Errorf("server got %+v", got)
	}
}

func TestBodyJSON(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	// A public export's json body: a rendered value holding raw newlines and quotes lands
	// inside a JSON string; Dify parses leniently, so the request still goes out as JSON.
	c := mustParse(t, map[string]any{
		"method": "post", "url": srv.URL + "/segments",
		"headers": "Authorization:Bearer {{#env.KB_API#}}\nContent-Type:application/json",
		"body": map[string]any{"type": "json", "data": []any{map[string]any{
			"key": "", "type": "text",
			"value": "{\n  \"segments\": [\n    {\n      \"content\": \"{{#n.updated_content#}}\",\n      \"keywords\": [\n        \"{{#n.company_name#}}\"\n      ]\n    }\n  ]\n}",
		}}},
	})
	vars := map[string]string{"env.KB_API": "kb-1", "n.updated_content": "line one\nline\ttwo", "n.company_name": "Acme"}
	do(t, c, env(t, vars))
	got := last()
	if got.Header.Get("Authorization") != "Bearer kb-1" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", got.Header)
	}
	want := `{"segments":[{"content":"line one\nline\ttwo","keywords":["Acme"]}]}`
	if string(got.Body) != want {
		t.Errorf("body %s\nwant %s", got.Body, want)
	}

	// Key order is kept; a code value inserted raw is valid JSON as is.
	c = mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		"body": map[string]any{"type": "json", "data": []any{map[string]any{"type": "text", "value": `{"code":{{#c.code#}},"language":"python3"}`}}},
	})
	do(t, c, env(t, map[string]string{"c.code": `"print(1)"`}))
	if got := last(); string(got.Body) != `{"code":"print(1)","language":"python3"}` || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("body %s headers %v", got.Body, got.Header)
	}

	// A trailing comma is repaired, as Dify's parser does.
	c = mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		"body": map[string]any{"type": "json", "data": []any{map[string]any{"type": "text", "value": `{"b": 2, "a": [1, 2,],}`}}},
	})
	do(t, c, env(t, nil))
	if got := last(); string(got.Body) != `{"b":2,"a":[1,2]}` {
		t.Errorf("repaired body %s", got.Body)
	}

	// Unescaped quotes from a rendered value are repaired too.
	c = mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		"body": map[string]any{"type": "json", "data": []any{map[string]any{"type": "text", "value": `{"q": "{{#s.q#}}", "n": 1}`}}},
	})
	do(t, c, env(t, map[string]string{"s.q": `say "hi" now`}))
	if got := last(); string(got.Body) != `{"q":"say \"hi\" now","n":1}` {
		t.Errorf("repaired quotes %s", got.Body)
	}

	// What cannot be repaired fails with Dify's text.
	c = mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		"body": map[string]any{"type": "json", "data": []any{map[string]any{"type": "text", "value": "}"}}},
	})
	_, err0 := Do(context.Background(), c, env(t, nil))
	if e := errType(t, err0, TypeRequestBody); e.Msg != "Failed to parse JSON: }" {
		t.Errorf("message %q", e.Msg)
	}

	// Two items: refused as Dify does.
	c = mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		"body": map[string]any{"type": "json", "data": []any{map[string]any{"value": "{}"}, map[string]any{"value": "{}"}}},
	})
	_, err := Do(context.Background(), c, env(t, nil))
	if e := errType(t, err, TypeRequestBody); e.Msg != "json body type should have exactly one item" {
		t.Errorf("message %q", e.Msg)
	}

	// A reference the engine cannot resolve fails with the field named.
	c = mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		"body": map[string]any{"type": "json", "data": []any{map[string]any{"value": `{"a":"{{#x.y#}}"}`}}},
	})
	if _, err := Do(context.Background(), c, env(t, nil)); err == nil || !strings.Contains(err.Error(), "body: variable x.y not found") {
		t.Errorf("err %v", err)
	}
}

func TestBodyURLEncoded(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	c := mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		"body": map[string]any{"type": "x-www-form-urlencoded", "data": []any{
			map[string]any{"key": "q", "type": "text", "value": "{{#s.q#}}"},
			map[string]any{"key": "lang", "type": "text", "value": "en"},
			map[string]any{"key": "q", "type": "text", "value": "{{#s.q#}} again"},
		}},
	})
	do(t, c, env(t, map[string]string{"s.q": "a&b=c d"}))
	got := last()
	if got.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("content type %q", got.Header.Get("Content-Type"))
	}
	// A repeated key keeps its first place and its last value.
	if string(got.Body) != "q=a%26b%3Dc+d+again&lang=en" {
		t.Errorf("body %s", got.Body)
	}
}

func TestBodyFormData(t *testing.T) {
	t.Parallel()
	type part struct{ name, filename, ctype, data string }
	var mu sync.Mutex
	var parts []part
	srv, last := echoServer(t, nil)
	_ = srv
	parse := func(got captured) {
		mt, params, err := mime.ParseMediaType(got.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/form-data" {
			t.Fatalf("content type %q", got.Header.Get("Content-Type"))
		}
		r := multipart.NewReader(bytes.NewReader(got.Body), params["boundary"])
		mu.Lock()
		defer mu.Unlock()
		parts = nil
		for {
			p, err := r.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			d, _ := io.ReadAll(p)
			parts = append(parts, part{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(d)})
		}
	}
	files := map[string][]FileData{
		"sys.files": {{Name: "a.png", MimeType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nA")}, {Name: "b.txt", Data: []byte("bee")}},
		"start.doc": {{Name: "doc.pdf", MimeType: "application/pdf", Data: []byte("%PDF-1.4")}},
	}
	e := env(t, map[string]string{"start.title": "Quarterly report"})
	e.File = func(sel []string) ([]FileData, error) { return files[strings.Join(sel, ".")], nil }
	c := mustParse(t, map[string]any{
		"method": "post", "url": srv.URL,
		// A Content-Type from the headers cannot carry our boundary: it is replaced.
		"headers": "Content-Type: multipart/form-data",
		"body": map[string]any{"type": "form-data", "data": []any{
			map[string]any{"key": "title", "type": "text", "value": "{{#start.title#}}"},
			map[string]any{"key": "images", "type": "file", "file": []any{"sys", "files"}},
			map[string]any{"key": "doc", "type": "file", "file": []any{"start", "doc"}},
			map[string]any{"key": "none", "type": "file", "file": []any{"start", "missing"}},
		}},
	})
	resp := do(t, c, e)
	parse(last())
	want := []part{
		{"title", "", "", "Quarterly report"},
		{"images", "a.png", "image/png", "\x89PNG\r\n\x1a\nA"},
		{"images", "b.txt", "application/octet-stream", "bee"},
		{"doc", "doc.pdf", "application/pdf", "%PDF-1.4"},
	}
	if fmt.Sprint(parts) != fmt.Sprint(want) {
		t.Errorf("parts %q\nwant %q", parts, want)
	}
	// The log shows the text fields and summarises the files.
	if !strings.Contains(resp.Request, "\r\n\r\nQuarterly report\r\n") || !strings.Contains(resp.Request, "<file_content_binary: 'doc.pdf', type='application/pdf', size=8 bytes>") || strings.Contains(resp.Request, "%PDF") {
		t.Errorf("log %q", resp.Request)
	}

	// A failing file lookup fails the node.
	e.File = func([]string) ([]FileData, error) { return nil, errors.New("storage down") }
	_, err := Do(context.Background(), c, e)
	if ee := errType(t, err, TypeFileFetch); !strings.Contains(ee.Msg, "['sys', 'files']") {
		t.Errorf("message %q", ee.Msg)
	}
}

func TestBodyBinary(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	blob := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1000)
	e := env(t, nil)
	e.File = func(sel []string) ([]FileData, error) {
		if strings.Join(sel, ".") == "start.upload" {
			return []FileData{{Name: "x.bin", MimeType: "application/octet-stream", Data: blob}}, nil
		}
		return nil, nil
	}
	c := mustParse(t, map[string]any{
		"method": "put", "url": srv.URL,
		"body": map[string]any{"type": "binary", "data": []any{map[string]any{"type": "file", "file": []any{"start", "upload"}}}},
	})
	resp := do(t, c, e)
	if got := last(); !bytes.Equal(got.Body, blob) || got.Header.Get("Content-Type") != "" {
		t.Errorf("server got %d bytes, content type %q", len(got.Body), got.Header.Get("Content-Type"))
	}
	if !strings.HasSuffix(resp.Request, "<binary_content: size=4000 bytes>") {
		t.Errorf("log %q", resp.Request)
	}

	c.Body.Items[0].File = []string{"start", "nothing"}
	_, err := Do(context.Background(), c, e)
	if ee := errType(t, err, TypeFileFetch); ee.Msg != "cannot fetch file with selector ['start', 'nothing']" {
		t.Errorf("message %q", ee.Msg)
	}
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	b64 := base64.StdEncoding.EncodeToString([]byte("user:pa:ss"))
	cases := []struct {
		name             string
		config           map[string]any
		header, want     string
		maskedInLogValue string
	}{
		{"bearer", map[string]any{"type": "bearer", "api_key": "{{#env.token#}}"}, "Authorization", "Bearer tok-1", "Authorization: ************"},
		{"basic user:password", map[string]any{"type": "basic", "api_key": "user:pa:ss"}, "Authorization", "Basic " + b64, "Authorization: " + strings.Repeat("*", len("Basic "+b64))},
		{"basic pre-encoded", map[string]any{"type": "basic", "api_key": "dXNlcjpwYXNz"}, "Authorization", "Basic dXNlcjpwYXNz", ""},
		{"custom header", map[string]any{"type": "custom", "api_key": "k-{{#env.token#}}", "header": "X-Api-Key"}, "X-Api-Key", "k-tok-1", "X-Api-Key: *******"},
		{"custom without header", map[string]any{"type": "custom", "api_key": "raw"}, "Authorization", "raw", ""},
		{"bearer on a custom header", map[string]any{"type": "bearer", "api_key": "t", "header": "X-Token"}, "X-Token", "Bearer t", ""},
	}
	for _, tc := range cases {
		c := mustParse(t, map[string]any{
			"method": "get", "url": srv.URL,
			// The credentials override a header of the same name.
			"headers":       tc.header + ": from-headers",
			"authorization": map[string]any{"type": "api-key", "config": tc.config},
		})
		resp := do(t, c, env(t, map[string]string{"env.token": "tok-1"}))
		if got := last().Header.Values(tc.header); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.name, tc.header, got, tc.want)
		}
		if tc.maskedInLogValue != "" && !strings.Contains(resp.Request, tc.maskedInLogValue+"\r\n") {
			t.Errorf("%s: log %q", tc.name, resp.Request)
		}
		if strings.Contains(resp.Request, "tok-1") {
			t.Errorf("%s: the log shows the key: %q", tc.name, resp.Request)
		}
	}

	// An API key that renders empty is refused.
	c := mustParse(t, map[string]any{
		"method": "get", "url": srv.URL,
		"authorization": map[string]any{"type": "api-key", "config": map[string]any{"type": "bearer", "api_key": "{{#env.empty#}}"}},
	})
	_, err := Do(context.Background(), c, env(t, map[string]string{"env.empty": " "}))
	errType(t, err, TypeAuthConfig)

	// no-auth ignores a leftover config.
	c = mustParse(t, map[string]any{
		"method": "get", "url": srv.URL,
		"authorization": map[string]any{"type": "no-auth", "config": map[string]any{"type": "bearer", "api_key": "x"}},
	})
	do(t, c, env(t, nil))
	if got := last().Header.Get("Authorization"); got != "" {
		t.Errorf("no-auth sent %q", got)
	}
}

func TestHeadersAndParams(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	c := mustParse(t, map[string]any{
		"method": "get", "url": srv.URL + "/search?lang=en&page=1&q=old",
		"headers": "X-Time: 12:30:00\n\n   \nX-Url:https://example.com/a?b=c\nX-Dup: first\nx-dup: second\nX-Empty\nX-Ref: {{#start.ref#}}\r\nX-Last:z",
		"params":  "q: {{#sys.query#}}\n\ntag:a\ntag: b:c\n: no key\nflag\npage:2",
	})
	do(t, c, env(t, map[string]string{"start.ref": "r1", "sys.query": "hello world & more"}))
	got := last()
	want := map[string]string{
		"X-Time": "12:30:00", "X-Url": "https://example.com/a?b=c", "X-Dup": "second",
		"X-Empty": "", "X-Ref": "r1", "X-Last": "z",
	}
	for k, v := range want {
		if vs, ok := got.Header[k]; !ok || len(vs) != 1 || vs[0] != v {
			t.Errorf("header %s = %q, want %q", k, got.Header[k], v)
		}
	}
	// The URL's own keys keep their place; a key the params name takes their values; repeated
	// params are all sent; a line without a value is a key with an empty one.
	if got.URI != "/search?lang=en&page=2&q=hello+world+%26+more&tag=a&tag=b%3Ac&flag=" {
		t.Errorf("uri %s", got.URI)
	}

	// A rendered URL's surrounding whitespace is dropped.
	c = mustParse(t, map[string]any{"method": "get", "url": "{{#llm.text#}}"})
	do(t, c, env(t, map[string]string{"llm.text": " " + srv.URL + "/from-llm\n"}))
	if got := last(); got.URI != "/from-llm" {
		t.Errorf("uri %s", got.URI)
	}

	// A rendered value may hold spaces and non-ASCII: they are escaped, not sent raw.
	c = mustParse(t, map[string]any{"method": "get", "url": srv.URL + "/q?text={{#sys.query#}}"})
	do(t, c, env(t, map[string]string{"sys.query": "北京 weather"}))
	if got := last(); got.URI != "/q?text=%E5%8C%97%E4%BA%AC%20weather" {
		t.Errorf("uri %s", got.URI)
	}

	// A header value rendered with a newline adds a line, as in Dify.
	c = mustParse(t, map[string]any{"method": "get", "url": srv.URL, "headers": "X-A: {{#v.x#}}"})
	do(t, c, env(t, map[string]string{"v.x": "1\nX-B: 2"}))
	if got := last(); got.Header.Get("X-A") != "1" || got.Header.Get("X-B") != "2" {
		t.Errorf("headers %v", got.Header)
	}

	// An invalid header name is refused before sending.
	c = mustParse(t, map[string]any{"method": "get", "url": srv.URL, "headers": "Bad Name: 1"})
	_, err := Do(context.Background(), c, env(t, nil))
	errType(t, err, TypeRequest)
}

func TestInvalidURL(t *testing.T) {
	t.Parallel()
	for raw, msg := range map[string]string{
		"":                   "url is required",
		"{{#start.u#}}":      "url is required",
		"ftp://example.com":  "url should start with http:// or https://",
		"example.com/path":   "url should start with http:// or https://",
		"http://":            `invalid url "http://"`,
		"http://exa mple.co": `invalid url "http://exa mple.co"`,
	} {
		c := mustParse(t, map[string]any{"method": "get", "url": raw})
		_, err := Do(context.Background(), c, env(t, map[string]string{"start.u": ""}))
		if e := errType(t, err, TypeInvalidURL); e.Msg != msg {
			t.Errorf("%q: %q, want %q", raw, e.Msg, msg)
		}
	}
}

// Dify's node succeeds with any status; only a node with retries or an error strategy fails
// on a status outside 2xx.
func TestErrorStatus(t *testing.T) {
	t.Parallel()
	srv, _ := echoServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":"busy"}`)
	})
	c := mustParse(t, map[string]any{"method": "get", "url": srv.URL})
	resp := do(t, c, env(t, nil))
	if resp.StatusCode != 503 || resp.Body != `{"error":"busy"}` {
		t.Errorf("response %+v", resp)
	}
	if c.FailsOnStatus() {
		t.Error("a node without retry or strategy fails on status")
	}
	if e := errType(t, resp.StatusError(), TypeResponseCode); e.Msg != "Request failed with status code 503" {
		t.Errorf("status error %v", e)
	}
	c = mustParse(t, map[string]any{"method": "get", "url": srv.URL, "retry_config": map[string]any{"retry_enabled": true, "max_retries": 3, "retry_interval": 100}})
	if !c.FailsOnStatus() {
		t.Error("a node with retries does not fail on status")
	}
	ok := &Response{StatusCode: 204}
	if ok.StatusError() != nil {
		t.Error("204 is an error")
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/new", http.StatusFound)
		case "/post":
			http.Redirect(w, r, "/new", http.StatusSeeOther)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			_, _ = io.WriteString(w, "landed")
		}
	}))
	t.Cleanup(srv.Close)

	resp := do(t, mustParse(t, map[string]any{"method": "get", "url": srv.URL + "/old"}), env(t, nil))
	if resp.StatusCode != 200 || resp.Body != "landed" {
		t.Errorf("response %+v", resp)
	}
	resp = do(t, mustParse(t, map[string]any{"method": "post", "url": srv.URL + "/post", "body": map[string]any{"type": "raw-text", "data": "x"}}), env(t, nil))
	if resp.Body != "landed" {
		t.Errorf("response %+v", resp)
	}
	mu.Lock()
	if fmt.Sprint(seen) != "[GET /old GET /new POST /post GET /new]" {
		t.Errorf("seen %v", seen)
	}
	seen = nil
	mu.Unlock()

	_, err := Do(context.Background(), mustParse(t, map[string]any{"method": "get", "url": srv.URL + "/loop"}), env(t, nil))
	if e := errType(t, err, TypeRequest); e.Msg != "Exceeded maximum allowed redirects." {
		t.Errorf("message %q", e.Msg)
	}
	mu.Lock()
	if len(seen) != DefaultMaxRedirects+1 {
		t.Errorf("%d requests for a redirect loop, want %d", len(seen), DefaultMaxRedirects+1)
	}
	mu.Unlock()
}

// The SSRF guard the engine passes in stays on: loopback is refused unless allowed.
func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, nil)
	guarded, err := netguard.Client(nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mustParse(t, map[string]any{"method": "get", "url": srv.URL + "/secret"})
	_, err = Do(context.Background(), c, Env{Render: renderer(nil), Client: guarded})
	e := errType(t, err, TypeSSRF)
	if !errors.Is(err, netguard.ErrForbidden) || !strings.Contains(e.Msg, "blocked by SSRF protection") {
		t.Errorf("err %v", err)
	}
	if got := last(); got.URI != "" {
		t.Errorf("the server was reached: %+v", got)
	}
	// Nor can a public URL redirect to it: the guard checks every connection. (The test cannot
	// serve a public address, so the redirect comes from an allowed loopback server to
	// another loopback port, refused by a guard that allows only the first.)
	target, _ := echoServer(t, nil)
	redirector := httptest.NewServer(http.RedirectHandler(target.URL+"/x", http.StatusFound))
	t.Cleanup(redirector.Close)
	port := netip.MustParseAddrPort(redirector.Listener.Addr().String())
	only := onlyAddr(t, port)
	_, err = Do(context.Background(), mustParse(t, map[string]any{"method": "get", "url": redirector.URL}), Env{Render: renderer(nil), Client: only})
	errType(t, err, TypeSSRF)

	// Allowed: the request goes through.
	if resp := do(t, c, env(t, nil)); resp.Body != "ok" || last().URI != "/secret" {
		t.Errorf("allowed client: %+v", resp)
	}
}

// onlyAddr is a client whose dialer refuses every address but ap, with the netguard error.
func onlyAddr(t *testing.T, ap netip.AddrPort) *http.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != ap.String() {
			return nil, fmt.Errorf("%w: %s", netguard.ErrForbidden, addr)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

func TestSSLVerify(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "secure") }))
	t.Cleanup(srv.Close)
	c := mustParse(t, map[string]any{"method": "get", "url": srv.URL})
	_, err := Do(context.Background(), c, env(t, nil))
	if e := errType(t, err, TypeRequest); !strings.Contains(e.Msg, "certificate") {
		t.Errorf("message %q", e.Msg)
	}
	c = mustParse(t, map[string]any{"method": "get", "url": srv.URL, "ssl_verify": false})
	if resp := do(t, c, env(t, nil)); resp.Body != "secure" {
		t.Errorf("body %q", resp.Body)
	}
	// HTTP/2 over TLS works with the node's connection settings.
	h2 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) }))
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	c = mustParse(t, map[string]any{"method": "get", "url": h2.URL, "ssl_verify": false})
	if resp := do(t, c, env(t, nil)); resp.Body != "HTTP/2.0" {
		t.Errorf("h2 body %q", resp.Body)
	}
	// The server's default applies to nodes without ssl_verify.
	c = mustParse(t, map[string]any{"method": "get", "url": srv.URL})
	e := env(t, nil)
	e.Settings.SkipSSLVerify = true
	if resp := do(t, c, e); resp.Body != "secure" {
		t.Errorf("body %q", resp.Body)
	}
}

func TestResponseFiles(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/img/chart.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(png)
		case "/download":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="report.pdf"`)
			_, _ = io.WriteString(w, "%PDF-1.7 ...")
		case "/loose-name":
			w.Header().Set("Content-Disposition", `attachment; filename=Q3 report.xlsx`)
			_, _ = io.WriteString(w, "PK")
		case "/inline-name":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Disposition", `inline; filename="notes.txt"`)
			_, _ = io.WriteString(w, "notes")
		case "/json":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, `{"a":1}`)
		case "/undeclared-json":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = io.WriteString(w, `{"a":1}`)
		case "/csv":
			w.Header().Set("Content-Type", "text/csv")
			_, _ = io.WriteString(w, "a,b\n1,2\n")
		case "/gbk":
			w.Header().Set("Content-Type", "text/plain; charset=gbk")
			_, _ = w.Write([]byte{0xc4, 0xe3, 0xba, 0xc3}) // 你好
		case "/latin1-declared-utf8":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("caf\xe9"))
		}
	}))
	t.Cleanup(srv.Close)
	get := func(p string) *Response {
		return do(t, mustParse(t, map[string]any{"method": "get", "url": srv.URL + p + "?v=1"}), env(t, nil))
	}

	r := get("/img/chart.png")
	if r.Body != "" || len(r.Files) != 1 || !bytes.Equal(r.Files[0].Data, png) || r.Files[0].MimeType != "image/png" || r.Files[0].Name != "chart.png" {
		t.Errorf("png: body %q files %+v", r.Body, r.Files)
	}
	r = get("/download")
	if r.Body != "" || len(r.Files) != 1 || r.Files[0].Name != "report.pdf" || r.Files[0].MimeType != "application/pdf" || string(r.Files[0].Data) != "%PDF-1.7 ..." {
		t.Errorf("attachment: %+v", r.Files)
	}
	r = get("/loose-name")
	if len(r.Files) != 1 || r.Files[0].Name != "Q3 report.xlsx" || r.Files[0].MimeType != "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" {
		t.Errorf("loose disposition: %+v", r.Files)
	}
	r = get("/inline-name")
	if len(r.Files) != 1 || r.Files[0].MimeType != "text/plain" {
		t.Errorf("a disposition filename makes a file: %+v", r)
	}
	for p, body := range map[string]string{"/json": `{"a":1}`, "/undeclared-json": `{"a":1}`, "/csv": "a,b\n1,2\n", "/gbk": "你好", "/latin1-declared-utf8": "caf\uFFFD"} {
		r = get(p)
		if len(r.Files) != 0 || r.Body != body {
			t.Errorf("%s: body %q files %d", p, r.Body, len(r.Files))
		}
	}
}

func TestIsFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ct, cd string
		head   string
		want   bool
	}{
		{"", "", "hello", false},
		{"text/html", "", "<html>", false},
		{"text/html", "attachment", "<html>", true},
		{"application/xml", "", "\x00\x01", false},
		{"application/vnd.api+json", "", "\x00", false},
		{"application/x-yaml", "", "a: 1", false},
		{"application/pdf", "", "%PDF", true},
		{"application/octet-stream", "", "[1,2]", false},
		{"application/octet-stream", "", "\xff\xfe{", true},
		{"application/zip", "", "PK\x03\x04", true},
		{"audio/mpeg", "", "ID3", true},
		{"video/mp4", "", "", true},
		{"font/woff2", "", "wOF2", false},
		{"IMAGE/JPEG; q=1", "", "", true},
	}
	for _, tc := range cases {
		if got := isFile(tc.ct, tc.cd, []byte(tc.head)); got != tc.want {
			t.Errorf("isFile(%q, %q, %q) = %v", tc.ct, tc.cd, tc.head, got)
		}
	}
}

func TestResponseSizeLimits(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big-text": // Content-Length known: refused before reading
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", strconv.Itoa(2<<20))
			_, _ = w.Write(bytes.Repeat([]byte("a"), 2<<20))
		case "/endless": // chunked, never ends: reading stops at the cap
			w.Header().Set("Content-Type", "text/plain")
			chunk := bytes.Repeat([]byte("b"), 32<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		case "/big-file":
			w.Header().Set("Content-Type", "application/zip")
			w.Header().Set("Content-Length", strconv.Itoa(3<<20))
			_, _ = w.Write(bytes.Repeat([]byte{0xff}, 3<<20))
		case "/head-big": // a HEAD answer announces a length but sends nothing
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", strconv.Itoa(50<<20))
		case "/small-file":
			w.Header().Set("Content-Type", "application/zip")
			_, _ = w.Write(bytes.Repeat([]byte{0xff}, 1500<<10))
		}
	}))
	t.Cleanup(srv.Close)
	get := func(p string, s Settings) (*Response, error) {
		e := env(t, nil)
		e.Settings = s
		return Do(context.Background(), mustParse(t, map[string]any{"method": "get", "url": srv.URL + p}), e)
	}
	_, err := get("/big-text", Settings{})
	if e := errType(t, err, TypeResponseSize); e.Msg != "Text size is too large, max size is 1.00 MB, but current size is 2.00 MB." {
		t.Errorf("message %q", e.Msg)
	}
	_, err = get("/endless", Settings{})
	if e := errType(t, err, TypeResponseSize); e.Msg != "Text size is too large, max size is 1.00 MB, but current size is more than 1.00 MB." {
		t.Errorf("message %q", e.Msg)
	}
	// A file may be larger than a text (10 MB by default) …
	r, err := get("/small-file", Settings{})
	if err != nil || len(r.Files) != 1 || len(r.Files[0].Data) != 1500<<10 {
		t.Errorf("1.5 MB file: %v", err)
	}
	// … up to its own cap, configurable.
	_, err = get("/big-file", Settings{MaxBinarySize: 2 << 20})
	if e := errType(t, err, TypeResponseSize); e.Msg != "File size is too large, max size is 2.00 MB, but current size is 3.00 MB." {
		t.Errorf("message %q", e.Msg)
	}
	e := env(t, nil)
	r, err = Do(context.Background(), mustParse(t, map[string]any{"method": "head", "url": srv.URL + "/head-big"}), e)
	if err != nil || r.Headers["content-length"] != strconv.Itoa(50<<20) || r.Body != "" {
		t.Errorf("head: %v %+v", err, r)
	}
	r, err = get("/big-text", Settings{MaxTextSize: 4 << 20})
	if err != nil || len(r.Body) != 2<<20 {
		t.Errorf("raised text cap: %v", err)
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/silent": // answers nothing
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/stalls": // starts, then goes silent
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "part")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/no-read": // never reads the request body
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: lets the handlers end before Close
	run := func(c Config, e Env) error {
		_, err := Do(context.Background(), c, e)
		return err
	}
	c := mustParse(t, map[string]any{"method": "get", "url": srv.URL + "/silent"})
	c.Timeout.Read = 150 * time.Millisecond
	if e := errType(t, run(c, env(t, nil)), TypeRequest); e.Msg != "Read timed out: no data received within the read timeout of 150ms" {
		t.Errorf("silent: %q", e.Msg)
	}
	c.URL = srv.URL + "/stalls"
	if e := errType(t, run(c, env(t, nil)), TypeRequest); !strings.HasPrefix(e.Msg, "Read timed out") {
		t.Errorf("stalls: %q", e.Msg)
	}
	// The server's default read timeout applies to a node without one.
	c.Timeout.Read = 0
	e := env(t, nil)
	e.Settings.ReadTimeout = 120 * time.Millisecond
	if ee := errType(t, run(c, e), TypeRequest); ee.Msg != "Read timed out: no data received within the read timeout of 120ms" {
		t.Errorf("default read timeout: %q", ee.Msg)
	}

	// Write: a body the server never reads fills the socket buffers.
	c = mustParse(t, map[string]any{"method": "post", "url": srv.URL + "/no-read", "body": map[string]any{"type": "raw-text", "data": strings.Repeat("w", 64<<20)}})
	c.Timeout.Write = 150 * time.Millisecond
	if ee := errType(t, run(c, env(t, nil)), TypeRequest); !strings.HasPrefix(ee.Msg, "Write timed out") {
		t.Errorf("write: %q", ee.Msg)
	}

	// Connect: a dialer that never connects (a black-holed address).
	hang := http.DefaultTransport.(*http.Transport).Clone()
	hang.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c = mustParse(t, map[string]any{"method": "get", "url": "http://192.0.2.1/", "timeout": map[string]any{"connect": 0.1}})
	if ee := errType(t, run(c, Env{Render: renderer(nil), Client: &http.Client{Transport: hang}}), TypeRequest); ee.Msg != "Connection timed out: no connection within the connect timeout of 100ms" {
		t.Errorf("connect: %q", ee.Msg)
	}
}

// Stopping the run ends the request with the context's error.
func TestContextCancel(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-entered:
		case <-time.After(20 * time.Second):
		}
		cancel()
	}()
	_, err := Do(ctx, mustParse(t, map[string]any{"method": "get", "url": srv.URL}), env(t, nil))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, err = Do(context.Background(), mustParse(t, map[string]any{"method": "get", "url": "http://" + addr + "/?token=secret"}), env(t, nil))
	e := errType(t, err, TypeRequest)
	if !strings.Contains(e.Msg, "connection refused") || strings.Contains(e.Msg, "secret") {
		t.Errorf("message %q", e.Msg)
	}
}

func TestMethods(t *testing.T) {
	t.Parallel()
	srv, last := echoServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"m": r.Method})
	})
	for _, m := range []string{"get", "POST", "put", "patch", "delete", "head", "options"} {
		resp := do(t, mustParse(t, map[string]any{"method": m, "url": srv.URL}), env(t, nil))
		if got := last().Method; got != strings.ToUpper(m) {
			t.Errorf("%s sent as %s", m, got)
		}
		if m == "head" && resp.Body != "" {
			t.Errorf("head body %q", resp.Body)
		}
	}
}

func TestHostHeader(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var host string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		host = r.Host
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	do(t, mustParse(t, map[string]any{"method": "get", "url": srv.URL, "headers": "Host: api.internal.example"}), env(t, nil))
	mu.Lock()
	defer mu.Unlock()
	if host != "api.internal.example" {
		t.Errorf("host %q", host)
	}
}

// A gzip body the node's headers asked for is decoded, and capped decoded.
func TestGzipRequestedByHeaders(t *testing.T) {
	t.Parallel()
	var plain = bytes.Repeat([]byte("z"), 3<<20)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write(plain[:1000])
	_ = zw.Close()
	var bomb bytes.Buffer
	zw = gzip.NewWriter(&bomb)
	_, _ = zw.Write(plain)
	_ = zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		if r.URL.Path == "/bomb" {
			_, _ = w.Write(bomb.Bytes())
			return
		}
		_, _ = w.Write(zipped.Bytes())
	}))
	t.Cleanup(srv.Close)
	c := mustParse(t, map[string]any{"method": "get", "url": srv.URL, "headers": "Accept-Encoding: gzip"})
	resp := do(t, c, env(t, nil))
	if resp.Body != string(plain[:1000]) || resp.Headers["content-encoding"] != "" {
		t.Errorf("body %d bytes, headers %v", len(resp.Body), resp.Headers)
	}
	c.URL = srv.URL + "/bomb"
	_, err := Do(context.Background(), c, env(t, nil))
	errType(t, err, TypeResponseSize)
}

// BenchmarkDo is one node run against a loopback server (parse excluded; rendering, request
// and response included, connections shared through Transports), beside the same request sent
// directly with a plain keep-alive client: the difference is the node's cost.
func BenchmarkDo(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	b.Cleanup(srv.Close)
	c, err := Parse(map[string]any{
		"method": "post", "url": srv.URL + "/v1/items?x={{#a.b#}}",
		"headers": "Content-Type:application/json\nX-Trace: {{#a.b#}}",
		"body":    map[string]any{"type": "json", "data": []any{map[string]any{"type": "text", "value": `{"name": "{{#a.b#}}", "n": 1}`}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	client, err := netguard.ClientAllowing(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	e := Env{Render: renderer(map[string]string{"a.b": "value"}), Client: client, Transports: &Transports{}}
	b.Cleanup(e.Transports.Close)
	b.Run("node", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Do(context.Background(), c, e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		direct := &http.Client{Transport: client.Transport.(*http.Transport).Clone()}
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest("POST", srv.URL+"/v1/items?x=value", strings.NewReader(`{"name":"value","n":1}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Trace", "value")
			resp, err := direct.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
	})
}

// With Transports, runs with the same settings share a connection; without, each run opens its
// own and closes it.
func TestTransportsReuseConnections(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	remotes := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr]++
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := len(remotes)
		clear(remotes)
		return n
	}
	c := mustParse(t, map[string]any{"method": "get", "url": srv.URL})
	e := env(t, nil)
	for range 3 {
		do(t, c, e)
	}
	if n := count(); n != 3 {
		t.Errorf("without Transports: %d connections for 3 runs", n)
	}
	e.Transports = &Transports{}
	t.Cleanup(e.Transports.Close)
	for range 3 {
		do(t, c, e)
	}
	if n := count(); n != 1 {
		t.Errorf("with Transports: %d connections for 3 runs", n)
	}
	// Other settings, another transport.
	c.Timeout.Read = 5 * time.Second
	do(t, c, e)
	if n := count(); n != 1 || len(e.Transports.m) != 2 {
		t.Errorf("other settings: %d connections, %d transports", n, len(e.Transports.m))
	}
}

// With tracing on, the target continues the run's trace; the node's request log shows only what
// its author configured. Not parallel: it turns tracing on for the process.
func TestSendsTheTraceparent(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	tracing.Use(tp.Tracer("test"), false)
	t.Cleanup(func() { tracing.Use(nil, false) })
	ctx, span := tracing.Start(context.Background(), "node", trace.SpanKindInternal)
	defer span.End()
	srv, last := echoServer(t, nil)
	resp, err := Do(ctx, mustParse(t, map[string]any{"method": "get", "url": srv.URL}), env(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if got := last().Header.Get("Traceparent"); got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
	if strings.Contains(strings.ToLower(resp.Request), "traceparent") {
		t.Errorf("request log %q shows the traceparent", resp.Request)
	}
	// An author's own traceparent is sent as written.
	own := "00-11111111111111111111111111111111-2222222222222222-01"
	c := mustParse(t, map[string]any{"method": "get", "url": srv.URL, "headers": "traceparent: " + own})
	if _, err := Do(ctx, c, env(t, nil)); err != nil {
		t.Fatal(err)
	}
	if got := last().Header.Get("Traceparent"); got != own {
		t.Errorf("traceparent %q, want the author's", got)
	}
}
