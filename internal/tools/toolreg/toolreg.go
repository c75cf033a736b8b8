// Package toolreg is the workspace's registry of tool providers: custom API tools (an OpenAPI 3
// or Swagger 2 document with its credentials) and MCP servers (Streamable HTTP or HTTP+SSE),
// registered once and used by every agent app that names them. Registrations live in the store,
// so that the CLI can change them while a server runs; the server re-reads them when their
// revision changes (one primary-key read per lookup).
//
// Registering validates: an API document must parse into tools, an MCP server must answer the
// handshake and list its tools, which are kept with the registration (as Dify keeps them), so
// that agents are offered them without asking the server first. A session with an MCP server
// opens on the first call, is reused, and is opened again after a failure; a server that is
// down fails the call, which the model reads as the observation.
//
// Credentials (API keys, header values) are stored for use and never shown: [Summary] names the
// auth type and header names only.
package toolreg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/mcp"
	"github.com/parleyhq/parley/internal/tools/openapi"
)

// Store is what the registry needs from storage; *store.Store implements it.
type Store interface {
	CreateToolProvider(ctx context.Context, p store.ToolProvider) (store.ToolProvider, error)
	ReplaceToolProvider(ctx context.Context, p store.ToolProvider) (store.ToolProvider, error)
	UpdateToolProviderDefinition(ctx context.Context, name, definition string) error
	DeleteToolProvider(ctx context.Context, name string) error
	ToolProviders(ctx context.Context) ([]store.ToolProvider, error)
	ToolProvidersRevision(ctx context.Context) (int64, error)
}

// Errors of registration.
var (
	// ErrInvalid: the registration is refused (a bad name, a document that does not parse, an
	// MCP server that does not answer); the message says why.
	ErrInvalid = errors.New("toolreg: invalid tool provider")
	// ErrExists: a provider of that name (or MCP server identifier) is registered already.
	ErrExists = errors.New("toolreg: tool provider exists")
	// ErrNotFound: no provider of that name.
	ErrNotFound = errors.New("toolreg: no such tool provider")
)

// Options configure a Registry.
type Options struct {
	Store Store
	// Builtin finds the built-in tools (builtin.Find); nil offers none.
	Builtin func(ctx context.Context, ref tools.Ref) (tools.Tool, error)
	// Workflow finds the workflow tools, Workflow apps of this server (workflowtool.Set.Find);
	// nil offers none.
	Workflow func(ctx context.Context, ref tools.Ref) (tools.Tool, error)
	// HTTPClient makes every request to an API or MCP server: the network-guarded client.
	// Required.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Registry registers tool providers and finds the tools apps name.
type Registry struct {
	o Options

	mu      sync.Mutex
	loaded  bool
	rev     int64
	entries []*entry
	closed  bool
}

// New returns a Registry; nothing is read until it is used.
func New(o Options) (*Registry, error) {
	if o.Store == nil || o.HTTPClient == nil {
		return nil, errors.New("toolreg: Options.Store and Options.HTTPClient are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Registry{o: o}, nil
}

// Auth types of an API provider.
const (
	AuthNone   = "none"
	AuthAPIKey = "api_key" // the key as is, in a header (Authorization unless named)
	AuthBearer = "bearer"  // Authorization: Bearer <key>
	AuthBasic  = "basic"   // Authorization: Basic <base64 user:password, or the value if encoded>
	AuthQuery  = "query"   // the key as a query parameter
)

// API is the registration of a custom API tool provider.
type API struct {
	// Schema is the OpenAPI 3 or Swagger 2 document, JSON or YAML.
	Schema string `json:"schema"`
	// ServerURL replaces the document's servers when set.
	ServerURL string `json:"server_url,omitempty"`
	// Auth is one of the Auth* types (empty is none).
	Auth string `json:"auth,omitempty"`
	// KeyHeader names the header of an api_key (Authorization when empty); KeyQuery names the
	// query parameter of a query key ("key" when empty).
	KeyHeader string `json:"key_header,omitempty"`
	KeyQuery  string `json:"key_query,omitempty"`
	// Key is the secret.
	Key string `json:"key,omitempty"`
	// Headers are sent with every request.
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds one call (openapi.DefaultTimeout when zero).
	Timeout Duration `json:"timeout,omitempty"`
}

// MCP is the registration of an MCP server.
type MCP struct {
	// ServerIdentifier is how apps (Dify's DSL: provider_id) name the server.
	ServerIdentifier string `json:"server_identifier"`
	// URL is the server's Streamable HTTP endpoint or HTTP+SSE (SSE) endpoint; see package mcp
	// for how the transport is chosen.
	URL string `json:"url"`
	// Headers are sent with every request (e.g. Authorization).
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout bounds connecting, listing and each call (mcp.DefaultTimeout when zero).
	Timeout Duration `json:"timeout,omitempty"`
	// Tools are the server's tools as it listed them at registration or the last refresh.
	Tools []mcp.ToolInfo `json:"tools,omitempty"`
}

// Duration is a time.Duration stored as text ("30s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Summary describes a registered provider without its secrets.
type Summary struct {
	ID, Name, Kind string
	// ServerIdentifier is an MCP server's identifier.
	ServerIdentifier string
	// Endpoint is the MCP server's URL, or the API's server URL when set.
	Endpoint string
	// Auth is an API provider's auth type.
	Auth string
	// Headers are the names of the custom headers.
	Headers []string
	// Tools are the tool names apps use.
	Tools     []string
	CreatedAt time.Time
}

// maxNameLen bounds a provider name.
const maxNameLen = 128

// serverIdentifier is what Dify accepts as an MCP server identifier.
var serverIdentifier = regexp.MustCompile(`^[a-z0-9_-]{1,24}$`)

func checkName(name string) error {
	if strings.TrimSpace(name) != name || name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: a provider name is 1 to %d characters without leading or trailing spaces", ErrInvalid, maxNameLen)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: a provider name has no control characters", ErrInvalid)
	}
	return nil
}

// AddAPI registers a custom API tool provider: the document must give at least one tool with the
// credentials given. With replace, a provider of that name is replaced, keeping its id (which
// apps may name). It returns the provider's summary.
func (r *Registry) AddAPI(ctx context.Context, name string, a API, replace bool) (Summary, error) {
	if err := checkName(name); err != nil {
		return Summary{}, err
	}
	list, err := r.apiTools(name, a)
	if err != nil {
		return Summary{}, err
	}
	if len(list) == 0 {
		return Summary{}, fmt.Errorf("%w: the document has no operations", ErrInvalid)
	}
	def, err := json.Marshal(a)
	if err != nil {
		return Summary{}, err
	}
	row, err := r.save(ctx, store.ToolProvider{Kind: store.ToolProviderAPI, Name: name, Definition: string(def)}, replace)
	if err != nil {
		return Summary{}, err
	}
	return summarize(&entry{row: row, api: &a, apiTools: list}), nil
}

// AddMCP registers an MCP server: it must answer the handshake and list its tools, which are
// kept. An empty server identifier is the name, when that is a valid identifier. With replace, a
// provider of that name is replaced, keeping its id.
func (r *Registry) AddMCP(ctx context.Context, name string, m MCP, replace bool) (Summary, error) {
	if err := checkName(name); err != nil {
		return Summary{}, err
	}
	if m.ServerIdentifier == "" {
		m.ServerIdentifier = name
	}
	if !serverIdentifier.MatchString(m.ServerIdentifier) {
		return Summary{}, fmt.Errorf("%w: server identifier %q: 1 to 24 lower-case letters, digits, _ or - (set one with --id)", ErrInvalid, m.ServerIdentifier)
	}
	infos, err := r.listMCP(ctx, name, m)
	if err != nil {
		return Summary{}, err
	}
	m.Tools = infos
	def, err := json.Marshal(m)
	if err != nil {
		return Summary{}, err
	}
	row, err := r.save(ctx, store.ToolProvider{Kind: store.ToolProviderMCP, Name: name,
		ServerIdentifier: m.ServerIdentifier, Definition: string(def)}, replace)
	if err != nil {
		return Summary{}, err
	}
	return summarize(&entry{row: row, mcp: &m}), nil
}

// Refresh lists the tools of the named MCP server again and keeps the new list.
func (r *Registry) Refresh(ctx context.Context, name string) (Summary, error) {
	rows, err := r.o.Store.ToolProviders(ctx)
	if err != nil {
		return Summary{}, err
	}
	i := slices.IndexFunc(rows, func(p store.ToolProvider) bool { return p.Name == name })
	if i < 0 {
		return Summary{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	e := decode(rows[i])
	if e.err != nil {
		return Summary{}, e.err
	}
	if e.mcp == nil {
		return Summary{}, fmt.Errorf("%w: %q is an API provider; its tools come from its document", ErrInvalid, name)
	}
	m := *e.mcp
	if m.Tools, err = r.listMCP(ctx, name, m); err != nil {
		return Summary{}, err
	}
	def, err := json.Marshal(m)
	if err != nil {
		return Summary{}, err
	}
	if err := r.o.Store.UpdateToolProviderDefinition(ctx, name, string(def)); err != nil {
		return Summary{}, notFound(err, name)
	}
	e.mcp = &m
	return summarize(e), nil
}

// Delete removes the named provider. Apps naming its tools keep them; calling one fails with an
// observation.
func (r *Registry) Delete(ctx context.Context, name string) error {
	return notFound(r.o.Store.DeleteToolProvider(ctx, name), name)
}

// List describes the registered providers, by name, without their secrets.
func (r *Registry) List(ctx context.Context) ([]Summary, error) {
	rows, err := r.o.Store.ToolProviders(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(rows))
	for _, row := range rows {
		e := decode(row)
		if e.api != nil && e.err == nil {
			e.apiTools, _ = r.apiTools(row.Name, *e.api)
		}
		out = append(out, summarize(e))
	}
	return out, nil
}

// save stores a new provider, or with replace, replaces the one of that name if there is one.
func (r *Registry) save(ctx context.Context, p store.ToolProvider, replace bool) (store.ToolProvider, error) {
	if replace {
		row, err := r.o.Store.ReplaceToolProvider(ctx, p)
		if err == nil {
			return row, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			if errors.Is(err, store.ErrConflict) {
				return store.ToolProvider{}, fmt.Errorf("%w: %q is a provider of another kind, or its server identifier is taken: %w", ErrExists, p.Name, err)
			}
			return store.ToolProvider{}, err
		}
	}
	row, err := r.o.Store.CreateToolProvider(ctx, p)
	if errors.Is(err, store.ErrConflict) {
		return store.ToolProvider{}, fmt.Errorf("%w: %q (or its server identifier) is taken; replace it with --replace or delete it first", ErrExists, p.Name)
	}
	return row, err
}

func notFound(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return err
}

// apiTools builds the tools of an API registration.
func (r *Registry) apiTools(name string, a API) ([]tools.Tool, error) {
	opts := openapi.Options{Provider: name, HTTPClient: r.o.HTTPClient, ServerURL: a.ServerURL, Timeout: time.Duration(a.Timeout)}
	switch a.Auth {
	case "", AuthNone:
	case AuthAPIKey:
		opts.Auth = openapi.Auth{Type: openapi.AuthAPIKeyHeader, Header: a.KeyHeader, Prefix: openapi.PrefixCustom, Value: a.Key}
	case AuthBearer:
		opts.Auth = openapi.Auth{Type: openapi.AuthAPIKeyHeader, Prefix: openapi.PrefixBearer, Value: a.Key}
	case AuthBasic:
		opts.Auth = openapi.Auth{Type: openapi.AuthAPIKeyHeader, Prefix: openapi.PrefixBasic, Value: a.Key}
	case AuthQuery:
		opts.Auth = openapi.Auth{Type: openapi.AuthAPIKeyQuery, QueryParam: a.KeyQuery, Value: a.Key}
	default:
		return nil, fmt.Errorf("%w: auth %q: want none, api_key, bearer, basic or query", ErrInvalid, a.Auth)
	}
	if a.Auth != "" && a.Auth != AuthNone && a.Key == "" {
		return nil, fmt.Errorf("%w: auth %s needs a key", ErrInvalid, a.Auth)
	}
	if len(a.Headers) > 0 {
		opts.Headers = http.Header{}
		for k, v := range a.Headers {
			opts.Headers.Set(k, v)
		}
	}
	list, err := openapi.New([]byte(a.Schema), opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return list, nil
}

// mcpProvider returns a provider for the registration that connects on first use.
func (r *Registry) mcpProvider(name string, m MCP) (*mcp.Provider, error) {
	var h http.Header
	if len(m.Headers) > 0 {
		h = http.Header{}
		for k, v := range m.Headers {
			if strings.ContainsAny(k+v, "\r\n") || k == "" {
				return nil, fmt.Errorf("%w: header %q: a name is required and line breaks are not allowed", ErrInvalid, k)
			}
			h.Set(k, v)
		}
	}
	p, err := mcp.New(mcp.Options{URL: m.URL, Provider: name, HTTPClient: r.o.HTTPClient, Headers: h, Timeout: time.Duration(m.Timeout)})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return p, nil
}

// listMCP connects to the server of a registration and lists its tools.
func (r *Registry) listMCP(ctx context.Context, name string, m MCP) ([]mcp.ToolInfo, error) {
	p, err := r.mcpProvider(name, m)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	list, err := p.Tools(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	infos := make([]mcp.ToolInfo, 0, len(list))
	for _, t := range list {
		if info, ok := mcp.Info(t); ok {
			infos = append(infos, info)
		}
	}
	return infos, nil
}

// entry is a registered provider as the server holds it.
type entry struct {
	row store.ToolProvider
	api *API
	mcp *MCP
	// err says why the registration cannot be used (it no longer decodes or parses).
	err error

	apiTools []tools.Tool
	provider *mcp.Provider
}

// decode reads a row's definition.
func decode(row store.ToolProvider) *entry {
	e := &entry{row: row}
	switch row.Kind {
	case store.ToolProviderAPI:
		e.api = &API{}
		e.err = json.Unmarshal([]byte(row.Definition), e.api)
	case store.ToolProviderMCP:
		e.mcp = &MCP{}
		e.err = json.Unmarshal([]byte(row.Definition), e.mcp)
	default:
		e.err = fmt.Errorf("unknown kind %q", row.Kind)
	}
	if e.err != nil {
		e.err = fmt.Errorf("tool provider %q cannot be read: %w", row.Name, e.err)
	}
	return e
}

func summarize(e *entry) Summary {
	s := Summary{ID: e.row.ID, Name: e.row.Name, Kind: e.row.Kind, ServerIdentifier: e.row.ServerIdentifier, CreatedAt: e.row.CreatedAt}
	var headers map[string]string
	switch {
	case e.api != nil:
		s.Endpoint, s.Auth, headers = e.api.ServerURL, e.api.Auth, e.api.Headers
		if s.Auth == "" {
			s.Auth = AuthNone
		}
		for _, t := range e.apiTools {
			s.Tools = append(s.Tools, t.Identity().Name)
		}
	case e.mcp != nil:
		s.Endpoint, headers = e.mcp.URL, e.mcp.Headers
		for _, t := range e.mcp.Tools {
			s.Tools = append(s.Tools, t.Name)
		}
	}
	s.Endpoint = redactURL(s.Endpoint)
	for k := range headers {
		s.Headers = append(s.Headers, http.CanonicalHeaderKey(k))
	}
	slices.Sort(s.Headers)
	return s
}

// redactURL hides what a URL may carry as credentials: the password of its user info and the
// values of its query parameters.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return raw
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Find returns the tool ref names, configured with the app's values: built-in tools through
// Options.Builtin, workflow tools through Options.Workflow, API tools by provider id or name and the tool's name (its operationId or the
// name derived from its path), MCP tools by server identifier, provider name or id and the
// tool's name. An unknown tool gives an error wrapping tools.ErrUnknownTool that says why.
func (r *Registry) Find(ctx context.Context, ref tools.Ref) (tools.Tool, error) {
	switch ref.Type {
	case "", tools.TypeBuiltin, tools.TypePlugin:
		if r.o.Builtin == nil {
			return nil, fmt.Errorf("%w: no built-in tools", tools.ErrUnknownTool)
		}
		return r.o.Builtin(ctx, ref)
	case tools.TypeWorkflow:
		if r.o.Workflow == nil {
			return nil, fmt.Errorf("%w: no workflow tools", tools.ErrUnknownTool)
		}
		return r.o.Workflow(ctx, ref)
	case tools.TypeAPI, tools.TypeMCP:
	default:
		return nil, fmt.Errorf("%w: %s tools are not supported", tools.ErrUnknownTool, ref.Type)
	}
	entries, err := r.current(ctx)
	if err != nil {
		return nil, err
	}
	e := match(entries, ref)
	if e == nil {
		return nil, fmt.Errorf("%w: no %s tool provider %q is registered (parley tools list)", tools.ErrUnknownTool, ref.Type, ref.Provider())
	}
	if e.err != nil {
		return nil, fmt.Errorf("%w: %w", tools.ErrUnknownTool, e.err)
	}
	var t tools.Tool
	switch {
	case e.api != nil:
		for _, at := range e.apiTools {
			if at.Identity().Name == ref.Name {
				t = at
				break
			}
		}
	case e.mcp != nil:
		for _, info := range e.mcp.Tools {
			if info.Name == ref.Name {
				t = e.provider.Bind(info)
				break
			}
		}
	}
	if t == nil {
		return nil, fmt.Errorf("%w: tool provider %q has no tool %q", tools.ErrUnknownTool, e.row.Name, ref.Name)
	}
	return withConfigured(t, ref.Configured), nil
}

// match finds the provider ref names: by id, by MCP server identifier, then by name.
func match(entries []*entry, ref tools.Ref) *entry {
	kind := store.ToolProviderAPI
	if ref.Type == tools.TypeMCP {
		kind = store.ToolProviderMCP
	}
	tests := []func(*entry) bool{
		func(e *entry) bool { return ref.ProviderID != "" && e.row.ID == ref.ProviderID },
		func(e *entry) bool { return ref.ProviderID != "" && e.row.ServerIdentifier == ref.ProviderID },
		func(e *entry) bool { return ref.ProviderName != "" && e.row.Name == ref.ProviderName },
		func(e *entry) bool {
			return ref.ProviderName == "" && ref.ProviderID != "" && e.row.Name == ref.ProviderID
		},
	}
	for _, test := range tests {
		for _, e := range entries {
			if e.row.Kind == kind && test(e) {
				return e
			}
		}
	}
	return nil
}

// current returns the providers as of the store's revision, re-reading them when it changed.
// An entry whose definition did not change is kept, with its MCP session.
func (r *Registry) current(ctx context.Context) ([]*entry, error) {
	rev, err := r.o.Store.ToolProvidersRevision(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.loaded && r.rev == rev {
		entries := r.entries
		r.mu.Unlock()
		return entries, nil
	}
	r.mu.Unlock()
	rows, err := r.o.Store.ToolProviders(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("toolreg: the registry is closed")
	}
	if r.loaded && r.rev >= rev {
		return r.entries, nil
	}
	old := map[string]*entry{}
	for _, e := range r.entries {
		old[e.row.ID] = e
	}
	entries := make([]*entry, 0, len(rows))
	for _, row := range rows {
		if e, ok := old[row.ID]; ok && e.row.Definition == row.Definition && e.row.Name == row.Name {
			delete(old, row.ID)
			entries = append(entries, e)
			continue
		}
		entries = append(entries, r.build(row))
	}
	for _, e := range old {
		if e.provider != nil {
			// Tells the server the session is over; a call still running on it fails.
			go e.provider.Close()
		}
	}
	r.entries, r.rev, r.loaded = entries, rev, true
	return entries, nil
}

// build decodes a row and prepares its tools.
func (r *Registry) build(row store.ToolProvider) *entry {
	e := decode(row)
	if e.err != nil {
		r.o.Logger.Warn("a tool provider cannot be used", "tool_provider", row.Name, "error", e.err)
		return e
	}
	switch {
	case e.api != nil:
		e.apiTools, e.err = r.apiTools(row.Name, *e.api)
	case e.mcp != nil:
		e.provider, e.err = r.mcpProvider(row.Name, *e.mcp)
	}
	if e.err != nil {
		e.err = fmt.Errorf("tool provider %q cannot be used: %w", row.Name, e.err)
		r.o.Logger.Warn("a tool provider cannot be used", "tool_provider", row.Name, "error", e.err)
	}
	return e
}

// Close ends the MCP sessions; the registry finds no more tools.
func (r *Registry) Close() error {
	r.mu.Lock()
	entries := r.entries
	r.entries, r.closed = nil, true
	r.mu.Unlock()
	var errs []error
	for _, e := range entries {
		if e.provider != nil {
			errs = append(errs, e.provider.Close())
		}
	}
	return errors.Join(errs...)
}

// withConfigured gives t the values an app configured for its parameters: they are sent unless
// the model gives its own (an empty string counts as unset, as Dify exports unset values).
func withConfigured(t tools.Tool, configured map[string]any) tools.Tool {
	set := map[string]any{}
	for k, v := range configured {
		if s, ok := v.(string); (ok && s == "") || v == nil {
			continue
		}
		set[k] = v
	}
	if len(set) == 0 {
		return t
	}
	return &configuredTool{Tool: t, set: set}
}

type configuredTool struct {
	tools.Tool
	set map[string]any
}

// Invoke merges the model's arguments over the app's values. Arguments that are not a JSON object
// are passed on as they are, for the tool to refuse.
func (c *configuredTool) Invoke(ctx context.Context, args json.RawMessage) (tools.Result, error) {
	model := map[string]json.RawMessage{}
	if s := strings.TrimSpace(string(args)); s != "" && s != "null" {
		if err := json.Unmarshal(args, &model); err != nil || model == nil {
			return c.Tool.Invoke(ctx, args)
		}
	}
	merged := map[string]any{}
	for k, v := range c.set {
		merged[k] = v
	}
	for k, v := range model {
		merged[k] = v
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return c.Tool.Invoke(ctx, args)
	}
	return c.Tool.Invoke(ctx, b)
}
