// Package mcp exposes the tools of an MCP server as [tools.Tool]s, through the official Go SDK. The
// server is reached over Streamable HTTP or over the older HTTP+SSE transport, which most MCP
// servers in Dify exports still speak: a URL whose path ends in /sse gets HTTP+SSE, any other
// Streamable HTTP first and HTTP+SSE when the handshake's POST is answered with a 4xx. A Provider
// holds one client session; a session the transport broke (an HTTP 500, a dropped connection, an
// oversized answer) or the server ended is dropped and opened again on the next call.
//
// What a server can do to us is bounded: every request goes through the caller's HTTP client (the
// network guard) and stays on the server's origin, each response body (each event of an HTTP+SSE
// stream) is capped, each call has a timeout, and the tool list is capped in number and in schema
// size.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleyhq/parley/internal/tools"
)

// Defaults for the zero values of Options.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 4 << 20
	DefaultMaxTools         = 128
	DefaultMaxSchemaBytes   = 64 << 10
)

// Options configures a connection to one MCP server.
type Options struct {
	// URL is the server's MCP endpoint (http or https): its Streamable HTTP endpoint, or the SSE
	// endpoint of the older HTTP+SSE transport (see the package documentation for how the
	// transport is chosen).
	URL string
	// Provider is the name the server was registered under; it becomes each tool's
	// Identity.Provider.
	Provider string
	// HTTPClient makes every request to the server; the caller passes the network-guarded
	// client. Required. Its Transport (or http.DefaultTransport) is wrapped, not replaced.
	HTTPClient *http.Client
	// Headers are added to every request, e.g. Authorization.
	Headers http.Header
	// Timeout bounds connecting, listing and each tool call; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes caps each HTTP response body; 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxTools caps how many tools a server may list; 0 means DefaultMaxTools.
	MaxTools int
	// MaxSchemaBytes caps one tool's input schema and description; 0 means
	// DefaultMaxSchemaBytes.
	MaxSchemaBytes int
}

// Provider is a connection to one MCP server.
type Provider struct {
	opts   Options
	client *sdk.Client
	http   *http.Client

	mu      sync.Mutex
	session *session
	// kind is the transport of the server, once known.
	kind   transportKind
	closed bool
}

// Connect checks opts and opens a session with the server (the MCP handshake), so that a
// misconfigured or unreachable server is reported at registration.
func Connect(ctx context.Context, opts Options) (*Provider, error) {
	p, err := New(opts)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	if _, err := p.currentSession(cctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("mcp: connecting to %s: %w", opts.URL, err)
	}
	return p, nil
}

// New checks opts and returns a Provider that opens its session on first use: a server that is
// down then fails the call that needs it, not the caller that holds the provider.
func New(opts Options) (*Provider, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcp: server URL %q is not an http(s) URL", opts.URL)
	}
	if opts.HTTPClient == nil {
		return nil, errors.New("mcp: Options.HTTPClient is required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxTools <= 0 {
		opts.MaxTools = DefaultMaxTools
	}
	if opts.MaxSchemaBytes <= 0 {
		opts.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	hc := *opts.HTTPClient
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &boundedTransport{base: base, headers: opts.Headers.Clone(), max: opts.MaxResponseBytes, origin: originOf(u)}
	return &Provider{
		opts:   opts,
		client: sdk.NewClient(&sdk.Implementation{Name: "parley", Version: "1"}, nil),
		http:   &hc,
		kind:   kindOf(u),
	}, nil
}

// ToolInfo describes a tool of the server as listed earlier (see [Provider.Tools]), so that its
// tools can be offered without asking the server again.
type ToolInfo struct {
	Name        string          `json:"name"`
	Label       string          `json:"label,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// OutputSchema is the tool's declared output schema, if it has one: its structured content
	// is then its declared outputs. Tools listed before Parley kept it have none until the
	// server's tools are listed again.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Info describes t, a tool of an MCP provider, for [Provider.Bind]; ok is false for another kind
// of tool.
func Info(t tools.Tool) (ToolInfo, bool) {
	mt, ok := t.(*tool)
	if !ok {
		return ToolInfo{}, false
	}
	return ToolInfo{Name: mt.name, Label: mt.label, Description: mt.description, Parameters: mt.schema, OutputSchema: mt.output}, true
}

// Bind returns the tool info describes, called on this provider's server. Nothing is checked
// against the server: a tool it no longer has fails when called, as an observation.
func (p *Provider) Bind(info ToolInfo) tools.Tool {
	schema := info.Parameters
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	label := info.Label
	if label == "" {
		label = info.Name
	}
	return &tool{p: p, name: info.Name, label: label, description: info.Description, schema: schema, output: info.OutputSchema}
}

// currentSession returns the open session, opening one if there is none or if it has ended.
func (p *Provider) currentSession(ctx context.Context) (*session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("mcp: provider is closed")
	}
	if p.session != nil && !p.session.done() {
		return p.session, nil
	}
	s, err := p.connect(ctx)
	if err != nil {
		return nil, err
	}
	p.session = s
	return s, nil
}

// drop forgets s if it is still the current session, so the next call opens a new one.
func (p *Provider) drop(s *session) {
	p.mu.Lock()
	if p.session != s {
		p.mu.Unlock()
		return
	}
	p.session = nil
	p.mu.Unlock()
	_ = s.Close()
}

// Close ends the session (telling the server, which may take a few seconds if a call is still
// running there). Tools of a closed provider report an error when invoked.
func (p *Provider) Close() error {
	p.mu.Lock()
	s := p.session
	p.session, p.closed = nil, true
	p.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// Tools lists the server's tools.
func (p *Provider) Tools(ctx context.Context) ([]tools.Tool, error) {
	lctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	s, err := p.currentSession(lctx)
	if err != nil {
		return nil, p.listErr(ctx, err)
	}
	var out []tools.Tool
	seen := map[string]bool{}
	cursor := ""
	for {
		res, err := s.ListTools(lctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			if !isProtocolError(err) {
				p.drop(s)
			}
			return nil, p.listErr(ctx, p.explain(s, err))
		}
		for _, t := range res.Tools {
			if len(out) >= p.opts.MaxTools {
				return nil, fmt.Errorf("mcp: %s lists more than %d tools", p.opts.URL, p.opts.MaxTools)
			}
			tool, err := p.newTool(t)
			if err != nil {
				return nil, err
			}
			if seen[t.Name] {
				return nil, fmt.Errorf("mcp: %s lists tool %q twice", p.opts.URL, t.Name)
			}
			seen[t.Name] = true
			out = append(out, tool)
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			return out, nil
		}
		cursor = res.NextCursor
	}
}

func (p *Provider) listErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("mcp: listing the tools of %s: %w", p.opts.URL, err)
}

func (p *Provider) newTool(t *sdk.Tool) (*tool, error) {
	if t == nil || t.Name == "" {
		return nil, fmt.Errorf("mcp: %s lists a tool without a name", p.opts.URL)
	}
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %q: input schema: %w", t.Name, err)
		}
		var obj map[string]any
		if json.Unmarshal(b, &obj) != nil {
			return nil, fmt.Errorf("mcp: tool %q: input schema is not a JSON object", t.Name)
		}
		schema = b
	}
	var output json.RawMessage
	if t.OutputSchema != nil {
		b, err := json.Marshal(t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %q: output schema: %w", t.Name, err)
		}
		output = b
	}
	if len(schema)+len(output)+len(t.Description) > p.opts.MaxSchemaBytes {
		return nil, fmt.Errorf("mcp: tool %q: schema and description exceed %d bytes", t.Name, p.opts.MaxSchemaBytes)
	}
	label := t.Title
	if label == "" && t.Annotations != nil {
		label = t.Annotations.Title
	}
	if label == "" {
		label = t.Name
	}
	return &tool{
		p:           p,
		name:        t.Name,
		label:       label,
		description: t.Description,
		schema:      schema,
		output:      output,
	}, nil
}

// tool is one tool of the server.
type tool struct {
	p           *Provider
	name        string
	label       string
	description string
	schema      json.RawMessage
	// output is the tool's output schema, if it declares one: its structured content is then
	// its declared outputs.
	output json.RawMessage
}

func (t *tool) Identity() tools.Identity {
	return tools.Identity{Provider: t.p.opts.Provider, Name: t.name, Label: map[string]string{"en_US": t.label}}
}

func (t *tool) Description() string { return t.description }

func (t *tool) Parameters() json.RawMessage { return t.schema }

// Invoke calls tools/call. Everything that goes wrong past a cancelled context is reported in the
// Result.
func (t *tool) Invoke(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return failed("%v: the arguments of %s must be a JSON object", tools.ErrBadArguments, t.name), nil
	}
	cctx, cancel := context.WithTimeout(ctx, t.p.opts.Timeout)
	defer cancel()
	cctx, oversize := withOversizeFlag(cctx)
	s, err := t.p.currentSession(cctx)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return failed("the MCP server did not answer within %s", t.p.opts.Timeout), nil
		}
		return failed("the MCP server could not be reached: %s", t.p.scrub(err)), nil
	}
	res, err := s.CallTool(cctx, &sdk.CallToolParams{Name: t.name, Arguments: json.RawMessage(args)})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return failed("tool %s did not answer within %s", t.name, t.p.opts.Timeout), nil
		}
		if we := serverError(err); we != nil {
			return failed("the MCP server rejected the call: %s", we.Message), nil
		}
		t.p.drop(s)
		if oversize.Load() || s.streamOver.Load() {
			return failed("the answer of tool %s is larger than %d bytes", t.name, t.p.opts.MaxResponseBytes), nil
		}
		return failed("calling tool %s failed: %s", t.name, t.p.scrub(err)), nil
	}
	r := toResult(res)
	if len(t.output) > 0 && !res.IsError {
		r.Variables = structured(res.StructuredContent)
	}
	return r, nil
}

// structured is a tool's structured content when it is a JSON object: as Dify does for a tool
// with an output schema, each of its members is an output variable of a workflow's tool node.
func structured(content any) json.RawMessage {
	if content == nil {
		return nil
	}
	b, err := json.Marshal(content)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return nil
	}
	return b
}

// SafeError is err's text without the credentials the server URL may carry, for an error of
// this provider that users read (see scrub).
func (p *Provider) SafeError(err error) string { return p.scrub(err) }

// scrub is err's text without the credentials the server URL may carry (a password, query
// values such as a token), which the model and the app's users would otherwise read.
func (p *Provider) scrub(err error) string {
	s := err.Error()
	u, perr := url.Parse(p.opts.URL)
	if perr != nil {
		return s
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		s = strings.ReplaceAll(s, pw, "xxxxx")
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if v != "" {
				s = strings.ReplaceAll(s, url.QueryEscape(v), "xxxxx")
				s = strings.ReplaceAll(s, v, "xxxxx")
			}
		}
	}
	return s
}

func failed(format string, a ...any) tools.Result {
	return tools.Result{Text: fmt.Sprintf(format, a...), IsError: true}
}

// toResult maps a tools/call result: text parts are joined into the text, images, audio and
// embedded resources become files, and links are mentioned in the text.
func toResult(res *sdk.CallToolResult) tools.Result {
	r := tools.Result{IsError: res.IsError}
	var texts []string
	for i, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			r.Files = append(r.Files, tools.File{Name: partName("image", i, c.MIMEType), MIMEType: c.MIMEType, Data: c.Data})
		case *sdk.AudioContent:
			r.Files = append(r.Files, tools.File{Name: partName("audio", i, c.MIMEType), MIMEType: c.MIMEType, Data: c.Data})
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			f := tools.File{Name: resourceName(c.Resource.URI, i), MIMEType: c.Resource.MIMEType, Data: c.Resource.Blob}
			if c.Resource.Blob == nil {
				f.Data = []byte(c.Resource.Text)
				if f.MIMEType == "" {
					f.MIMEType = "text/plain"
				}
			}
			r.Files = append(r.Files, f)
		case *sdk.ResourceLink:
			texts = append(texts, fmt.Sprintf("[%s](%s)", c.Name, c.URI))
		}
	}
	if len(texts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			texts = append(texts, string(b))
		}
	}
	r.Text = strings.Join(texts, "\n")
	return r
}

// partName names the i-th content part of a result, with the extension its MIME type suggests.
func partName(kind string, i int, mimeType string) string {
	name := fmt.Sprintf("%s-%d", kind, i+1)
	if exts, err := mime.ExtensionsByType(mimeType); err == nil && len(exts) > 0 {
		name += exts[0]
	}
	return name
}

func resourceName(uri string, i int) string {
	if u, err := url.Parse(uri); err == nil {
		if b := path.Base(u.Path); b != "" && b != "." && b != "/" {
			return b
		}
	}
	return fmt.Sprintf("resource-%d", i+1)
}

// isProtocolError says err is a JSON-RPC error the server answered with, after which the session
// is still good.
func isProtocolError(err error) bool { return serverError(err) != nil }

// Codes the SDK's own transport uses for its failures (a request it could not deliver, a
// closing connection); an error with such a code did not come from the server.
const (
	codeServerClosing = -32004
	codeRejected      = -32005
)

// serverError finds, in err's tree, a JSON-RPC error the server answered with, or nil.
func serverError(err error) *jsonrpc.Error {
	switch e := err.(type) {
	case nil:
		return nil
	case *jsonrpc.Error:
		if e.Code != codeRejected && e.Code != codeServerClosing {
			return e
		}
		return nil
	case interface{ Unwrap() []error }:
		for _, u := range e.Unwrap() {
			if we := serverError(u); we != nil {
				return we
			}
		}
		return nil
	case interface{ Unwrap() error }:
		return serverError(e.Unwrap())
	}
	return nil
}
