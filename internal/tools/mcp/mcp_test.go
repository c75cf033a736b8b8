package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleyhq/parley/internal/tools"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\nnot really a picture")

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// testServer is a loopback MCP server built with the SDK. It answers HTTP 500 to any request
// naming the tool "boom", counts requests and records the Authorization header it saw.
type testServer struct {
	*httptest.Server
	// Endpoint is the URL clients connect to.
	Endpoint string
	requests atomic.Int64
	gets     atomic.Int64 // GET requests: event streams asked for
	rejected atomic.Int64 // POSTs answered with a 4xx
	auth     atomic.Value
	entered  chan struct{} // hang signals here when it starts
	release  chan struct{} // closed at cleanup so hang returns
	exited   chan string   // hang says why it returned
	streams  chan struct{} // a GET's handler signals here when it returns
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return newTestServerWith(t, nil)
}

// newTestServerWith is newTestServer with options for the SDK's handler (JSONResponse: answers
// as application/json rather than as an event stream).
func newTestServerWith(t *testing.T, hopts *sdk.StreamableHTTPOptions) *testServer {
	t.Helper()
	ts := &testServer{}
	ts.start(t, "", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ts.mcpServer() }, hopts))
	return ts
}

// newSSETestServer is newTestServer serving the HTTP+SSE transport alone (the SDK's SSE
// handler, at every path), reached at path. Its POSTs outside a session are answered 400, as a
// client probing for Streamable HTTP sees.
func newSSETestServer(t *testing.T, path string) *testServer {
	t.Helper()
	ts := &testServer{}
	ts.start(t, path, sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return ts.mcpServer() }, nil))
	return ts
}

// mcpServer is the SDK server with the test tools.
func (ts *testServer) mcpServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Title: "Echo", Description: "Echoes text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "you said"}, &sdk.TextContent{Text: in.Text},
			}}, nil, nil
		})
	obj := map[string]any{"type": "object"}
	s.AddTool(&sdk.Tool{Name: "picture", Description: "Draws.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "here it is"},
				&sdk.ImageContent{MIMEType: "image/png", Data: pngBytes},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes/a.txt", MIMEType: "text/plain", Text: "notes"}},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Fails.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "hang", Description: "Never answers.", InputSchema: obj},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ts.entered <- struct{}{}
			select {
			case <-ctx.Done():
				ts.exited <- "cancelled"
			case <-ts.release:
				ts.exited <- "released"
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "big", Description: "Answers a lot.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", 200<<10)}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "boom", Description: "The server fails.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "unreachable"}}}, nil
		})
	return s
}

// start serves h at path on a new loopback server.
func (ts *testServer) start(t *testing.T, path string, h http.Handler) {
	t.Helper()
	ts.entered, ts.release, ts.exited = make(chan struct{}, 8), make(chan struct{}), make(chan string, 8)
	ts.streams = make(chan struct{}, 64)
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.requests.Add(1)
		ts.auth.Store(r.Header.Get("Authorization"))
		if r.Method == http.MethodGet {
			ts.gets.Add(1)
			defer func() { ts.streams <- struct{}{} }()
		}
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"name":"boom"`)) {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.Method == http.MethodPost {
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				if sw.code >= 400 && sw.code < 500 {
					ts.rejected.Add(1)
				}
			}()
			w = sw
		}
		h.ServeHTTP(w, r)
	}))
	ts.Endpoint = ts.URL + path
	t.Cleanup(func() {
		close(ts.release)
		ts.Close()
	})
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// eachTransport runs f against a server of each transport: Streamable HTTP, HTTP+SSE at a URL
// ending in /sse (chosen by the URL), and HTTP+SSE at another URL (found by the probe).
func eachTransport(t *testing.T, f func(t *testing.T, ts *testServer)) {
	t.Helper()
	for _, c := range []struct {
		name string
		new  func(t *testing.T) *testServer
	}{
		{"streamable", newTestServer},
		{"sse", func(t *testing.T) *testServer { return newSSETestServer(t, "/sse") }},
		{"sse fallback", func(t *testing.T) *testServer { return newSSETestServer(t, "/mcp") }},
	} {
		t.Run(c.name, func(t *testing.T) { f(t, c.new(t)) })
	}
}

// countingTransport counts the requests that go through the caller's client.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, ts *testServer, mod func(*Options)) (*Provider, map[string]tools.Tool) {
	t.Helper()
	opts := Options{URL: ts.Endpoint, Provider: "test_mcp", HTTPClient: &http.Client{Transport: &countingTransport{}}}
	if mod != nil {
		mod(&opts)
	}
	p, err := Connect(context.Background(), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	list, err := p.Tools(context.Background())
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	byName := map[string]tools.Tool{}
	for _, tl := range list {
		byName[tl.Identity().Name] = tl
	}
	return p, byName
}

func invoke(t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	res, err := tl.Invoke(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("Invoke(%s): %v", args, err)
	}
	return res
}

func TestToolsListsServerTools(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, nil)
		if len(byName) != 6 {
			t.Fatalf("got %d tools, want 6: %v", len(byName), byName)
		}
		echo := byName["echo"]
		id := echo.Identity()
		if id.Provider != "test_mcp" || id.Label["en_US"] != "Echo" || echo.Description() != "Echoes text." {
			t.Errorf("identity %+v, description %q", id, echo.Description())
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(echo.Parameters(), &schema); err != nil {
			t.Fatal(err)
		}
		if schema.Type != "object" || schema.Properties["text"] == nil {
			t.Errorf("parameters %s", echo.Parameters())
		}
	})
}

func TestInvokeText(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, nil)
		res := invoke(t, byName["echo"], `{"text":"hello"}`)
		if res.IsError || res.Text != "you said\nhello" || len(res.Files) != 0 {
			t.Errorf("got %+v", res)
		}
	})
}

func TestInvokeImageAndResource(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, nil)
		res := invoke(t, byName["picture"], `{}`)
		if res.IsError || res.Text != "here it is" || len(res.Files) != 2 {
			t.Fatalf("got %+v", res)
		}
		if f := res.Files[0]; f.Name != "image-2.png" || f.MIMEType != "image/png" || !bytes.Equal(f.Data, pngBytes) {
			t.Errorf("image %+v", f)
		}
		if f := res.Files[1]; f.Name != "a.txt" || f.MIMEType != "text/plain" || string(f.Data) != "notes" {
			t.Errorf("resource %+v", f)
		}
	})
}

func TestInvokeToolError(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, nil)
		res := invoke(t, byName["fail"], `{}`)
		if !res.IsError || res.Text != "disk full" {
			t.Errorf("got %+v", res)
		}
	})
}

func TestInvokeTimeout(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, func(o *Options) { o.Timeout = 500 * time.Millisecond })
		res := invoke(t, byName["hang"], `{}`)
		if !res.IsError || !strings.Contains(res.Text, "did not answer within") {
			t.Errorf("got %+v", res)
		}
		// The server is told to stop: its handler sees its context cancelled.
		if why := <-ts.exited; why != "cancelled" {
			t.Errorf("server-side handler %s", why)
		}
	})
}

func TestInvokeCancelledContext(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-ts.entered
			cancel()
		}()
		_, err := byName["hang"].Invoke(ctx, json.RawMessage(`{}`))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if why := <-ts.exited; why != "cancelled" {
			t.Errorf("server-side handler %s", why)
		}
	})
}

func TestInvokeHTTP500ThenRecovers(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, nil)
		res := invoke(t, byName["boom"], `{}`)
		if !res.IsError || !strings.Contains(res.Text, "Internal Server Error") {
			t.Errorf("got %+v", res)
		}
		// The session the 500 broke is replaced, and the new one outlives the call that opened it.
		for _, text := range []string{"again", "and again"} {
			if res := invoke(t, byName["echo"], `{"text":"`+text+`"}`); res.IsError || res.Text != "you said\n"+text {
				t.Errorf("after a 500: %+v", res)
			}
		}
	})
}

func TestInvokeMalformedArguments(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		_, byName := connect(t, ts, nil)
		before := ts.requests.Load()
		for _, args := range []string{`[1,2]`, `"text"`, `{"text":`, `null`} {
			res := invoke(t, byName["echo"], args)
			if !res.IsError || !strings.Contains(res.Text, tools.ErrBadArguments.Error()) {
				t.Errorf("%s: got %+v", args, res)
			}
		}
		if n := ts.requests.Load(); n != before {
			t.Errorf("malformed arguments reached the server (%d requests)", n-before)
		}
		// Well-formed JSON that does not fit the schema is the server's to reject.
		if res := invoke(t, byName["echo"], `{"text":5}`); !res.IsError {
			t.Errorf("schema mismatch: got %+v", res)
		}
	})
}

// TestResponseSizeCap: an answer over the cap fails the call with the same words, whether it came
// as a Streamable HTTP event stream, as JSON, or as an event of an HTTP+SSE stream.
func TestResponseSizeCap(t *testing.T) {
	for name, newServer := range map[string]func(*testing.T) *testServer{
		"event stream": newTestServer,
		"json": func(t *testing.T) *testServer {
			return newTestServerWith(t, &sdk.StreamableHTTPOptions{JSONResponse: true})
		},
		"sse": func(t *testing.T) *testServer { return newSSETestServer(t, "/sse") },
	} {
		t.Run(name, func(t *testing.T) {
			ts := newServer(t)
			_, byName := connect(t, ts, func(o *Options) { o.MaxResponseBytes = 64 << 10 })
			res := invoke(t, byName["big"], `{}`)
			if !res.IsError || res.Text != "the answer of tool big is larger than 65536 bytes" {
				t.Errorf("got IsError=%v, %.100q", res.IsError, res.Text)
			}
			if res := invoke(t, byName["echo"], `{"text":"small"}`); res.IsError || res.Text != "you said\nsmall" {
				t.Errorf("after an oversized answer: %+v", res)
			}
		})
	}
}

func TestListCaps(t *testing.T) {
	ts := newTestServer(t)
	hc := &http.Client{}
	p, err := Connect(context.Background(), Options{URL: ts.URL, HTTPClient: hc, MaxTools: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "more than 3 tools") {
		t.Errorf("MaxTools: got %v", err)
	}
	p2, err := Connect(context.Background(), Options{URL: ts.URL, HTTPClient: hc, MaxSchemaBytes: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if _, err := p2.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "exceed 40 bytes") {
		t.Errorf("MaxSchemaBytes: got %v", err)
	}
}

func TestEveryRequestUsesCallerClientAndHeaders(t *testing.T) {
	eachTransport(t, func(t *testing.T, ts *testServer) {
		ct := &countingTransport{}
		p, byName := connect(t, ts, func(o *Options) {
			o.HTTPClient = &http.Client{Transport: ct}
			o.Headers = http.Header{"Authorization": {"Bearer s3cret"}}
		})
		invoke(t, byName["echo"], `{"text":"x"}`)
		invoke(t, byName["boom"], `{}`) // breaks the session; the next call reconnects
		invoke(t, byName["echo"], `{"text":"y"}`)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := ct.n.Load(), ts.requests.Load(); got != want || got == 0 {
			t.Errorf("caller's client made %d requests, server saw %d", got, want)
		}
		if a, _ := ts.auth.Load().(string); a != "Bearer s3cret" {
			t.Errorf("Authorization %q", a)
		}
	})
}

func TestConnectErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Connect(ctx, Options{URL: "ftp://x", HTTPClient: &http.Client{}}); err == nil {
		t.Error("ftp URL accepted")
	}
	if _, err := Connect(ctx, Options{URL: "http://127.0.0.1:1"}); err == nil {
		t.Error("nil HTTPClient accepted")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	if _, err := Connect(ctx, Options{URL: srv.URL, HTTPClient: &http.Client{}}); err == nil {
		t.Error("a server answering 500 was connected")
	}
}

// TestNewIsLazyAndBindCalls: New sends nothing; a tool bound from a stored description opens the
// session on its first call and reuses it; a tool the server does not have is an observation.
func TestNewIsLazyAndBindCalls(t *testing.T) {
	ts := newTestServer(t)
	p, err := New(Options{URL: ts.URL, Provider: "test_mcp", HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if n := ts.requests.Load(); n != 0 {
		t.Fatalf("New sent %d requests", n)
	}
	_, listed := connect(t, ts, nil)
	info, ok := Info(listed["echo"])
	if !ok || info.Name != "echo" || info.Label != "Echo" || !strings.Contains(string(info.Parameters), "text") {
		t.Fatalf("Info = %+v, %v", info, ok)
	}
	echo := p.Bind(info)
	if id := echo.Identity(); id.Provider != "test_mcp" || id.Name != "echo" || id.Label["en_US"] != "Echo" {
		t.Fatalf("identity %+v", id)
	}
	before := ts.requests.Load()
	if res := invoke(t, echo, `{"text":"hi"}`); res.IsError || res.Text != "you said\nhi" {
		t.Fatalf("first call %+v", res)
	}
	first := ts.requests.Load() - before
	if res := invoke(t, echo, `{"text":"again"}`); res.IsError || res.Text != "you said\nagain" {
		t.Fatalf("second call %+v", res)
	}
	if again := ts.requests.Load() - before - first; again >= first {
		t.Fatalf("the second call sent %d requests, the first (with the handshake) %d: the session was not reused", again, first)
	}
	if res := invoke(t, p.Bind(ToolInfo{Name: "vanished"}), `{}`); !res.IsError {
		t.Fatalf("a tool the server does not have: %+v", res)
	}
	if _, ok := Info(nil); ok {
		t.Fatal("Info of nil")
	}
}

// TestFailureHidesURLCredentials: the observation of a server that cannot be reached does not
// carry the token or password of its URL.
func TestFailureHidesURLCredentials(t *testing.T) {
	p, err := New(Options{URL: "http://bob:hunter2@127.0.0.1:1/mcp?token=abc123", Provider: "x", HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	res := invoke(t, p.Bind(ToolInfo{Name: "echo"}), `{}`)
	if !res.IsError || strings.Contains(res.Text, "hunter2") || strings.Contains(res.Text, "abc123") || !strings.Contains(res.Text, "could not be reached") {
		t.Fatalf("result %+v", res)
	}
}

// TestRedirectToAnotherOriginRefused: a server that redirects elsewhere is not followed, so the
// configured headers (a token) and the request never reach the other origin.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer elsewhere.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	_, err := Connect(context.Background(), Options{URL: srv.URL + "/mcp", HTTPClient: &http.Client{},
		Headers: http.Header{"Authorization": {"Bearer s3cret"}}})
	if err == nil || !strings.Contains(err.Error(), "not the server's origin") {
		t.Fatalf("Connect: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the other origin saw %d requests", n)
	}
}

func TestOriginOf(t *testing.T) {
	for in, want := range map[string]string{
		"http://Example.com/mcp":         "http://example.com:80",
		"http://example.com:80/sse":      "http://example.com:80",
		"HTTPS://example.com/":           "https://example.com:443",
		"https://example.com:8443/x?y=1": "https://example.com:8443",
		"http://[::1]:9000/mcp":          "http://[::1]:9000",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := originOf(u); got != want {
			t.Errorf("originOf(%s) = %s, want %s", in, got, want)
		}
	}
}
