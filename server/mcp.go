package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/logctx"
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/tracing"
	"github.com/parleyhq/parley/internal/version"
)

// This file serves apps published as MCP servers (internal/mcpserver): POST
// /mcp/server/{server_code}/mcp at the root of the server, beside the API rather than under /v1,
// where Dify has it.
//
// The endpoint speaks JSON-RPC (MCP's Streamable HTTP transport), which the OpenAPI contract
// cannot describe: one path, one method, and bodies whose shape depends on the JSON-RPC method.
// It is therefore not part of api/openapi.yaml, and is not behind the contract's validators.
// It gets an Echo of its own, mounted in front of the API's (New, through e.Pre), whose
// middleware is the API's guards applied explicitly: the request id, the request's span and
// metrics, the access log (its route is the template, never the code), panic recovery, and the body cap and timer. Every refusal
// is a JSON-RPC error, never the API's {code, message, status} body; see docs/mcp-server.md.
//
// Behind the checks of the request and the server code, the official MCP SDK's Streamable
// HTTP handler speaks the protocol, stateless: any replica answers any request, so sessions
// need no stickiness, and there is no standalone stream (GET answers 405).

// mcpRoute is the endpoint's route; its parameter is the server code, a secret.
const mcpRoute = "/mcp/server/:server_code/mcp"

// mcpPathPrefix is what the paths the MCP Echo serves start with.
const mcpPathPrefix = "/mcp/server/"

// mcpMethodEchoKey holds the JSON-RPC method of an MCP request, for the access log.
const mcpMethodEchoKey = "parley.mcp_method"

// JSON-RPC error codes (the SDK's jsonrpc package names the others).
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
)

// mcpEndpoint is the MCP endpoint's Echo and the SDK handlers behind it.
type mcpEndpoint struct {
	echo *echo.Echo
	// sse answers with an event stream (progress notifications, then the response); json with
	// one JSON body, for clients that accept nothing else.
	sse, json http.Handler
}

// newMCP builds the endpoint with the API's guards.
func (s *Server) newMCP(opts Options) *mcpEndpoint {
	m := &mcpEndpoint{echo: echo.New()}
	getServer := func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(mcpSDKServerKey{}).(*mcp.Server)
		return srv
	}
	for _, jsonOnly := range []bool{false, true} {
		h := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			Stateless:    true,
			JSONResponse: jsonOnly,
			// The body was read (under the API's cap) before the SDK sees it.
			MaxRequestBodyBytes: -1,
			// The SDK refuses a Host other than localhost on a loopback listener, against DNS
			// rebinding of browser pages to unauthenticated local servers. Here every request
			// carries the server's secret code, and Parley commonly sits behind a reverse proxy
			// on the same machine that forwards the public Host: the protection would refuse
			// those and protect nothing the code does not.
			DisableLocalhostProtection: true,
		})
		if jsonOnly {
			m.json = h
		} else {
			m.sse = h
		}
	}
	e := m.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.mcpErrorHandler
	e.Use(requestID()...)
	if tracing.On() || s.metrics != nil {
		e.Use(s.observe)
	}
	e.Use(s.accessLog)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
		// The route, never the path: the path holds the server code.
		s.log.ErrorContext(c.Request().Context(), "panic", "error", err, "route", c.Path(), "stack", string(stack))
		return err
	}}))
	e.Use(guardBody(opts.MaxBodyBytes, opts.MaxUploadBytes, opts.BodyRate))
	e.Any(mcpRoute, func(c echo.Context) error { return s.serveMCP(c, m) })
	return m
}

type mcpSDKServerKey struct{}

// rpcError is a JSON-RPC error answered before the SDK: its HTTP status, its JSON-RPC code and
// message, and the code the access log shows.
type rpcError struct {
	status  int
	code    int64
	message string
	logCode string
}

// serveMCP checks an MCP request (method, media types, body, JSON-RPC envelope, server code,
// app) and hands it to the SDK with the server's one tool.
func (s *Server) serveMCP(c echo.Context, m *mcpEndpoint) error {
	r := c.Request()
	if r.Method != http.MethodPost {
		c.Response().Header().Set("Allow", http.MethodPost)
		return s.writeRPCError(c, nil, rpcError{http.StatusMethodNotAllowed, rpcInvalidRequest,
			"Method not allowed: send JSON-RPC messages with POST (this server keeps no sessions and has no stream to GET).", "method_not_allowed"})
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
		return s.writeRPCError(c, nil, rpcError{http.StatusUnsupportedMediaType, rpcInvalidRequest,
			"Content-Type must be application/json.", "unsupported_media_type"})
	}
	handler, ok := m.pick(r)
	if !ok {
		return s.writeRPCError(c, nil, rpcError{http.StatusNotAcceptable, rpcInvalidRequest,
			"Accept must include application/json, and text/event-stream for progress notifications.", "not_acceptable"})
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		e := toAPIError(err, r)
		return s.writeRPCError(c, nil, rpcError{e.Status, rpcInvalidRequest, e.Message, e.Code})
	}
	id, method, rerr := envelope(body)
	if rerr != nil {
		return s.writeRPCError(c, id, *rerr)
	}
	c.Set(mcpMethodEchoKey, method)

	ctx := r.Context()
	srv, err := s.mcp.Lookup(ctx, c.Param("server_code"))
	switch {
	case errors.Is(err, mcpserver.ErrServerNotFound):
		return s.writeRPCError(c, id, rpcError{http.StatusNotFound, rpcInvalidRequest, err.Error(), "server_not_found"})
	case errors.Is(err, mcpserver.ErrServerInactive):
		return s.writeRPCError(c, id, rpcError{http.StatusForbidden, rpcInvalidRequest, err.Error(), "server_inactive"})
	case err != nil:
		return s.internalRPCError(c, id, err)
	}
	// The access log names the app of a refused request, as it does for an app key.
	c.Set(principalEchoKey, Principal{AppID: srv.AppID})
	app, form, err := s.mcpApp(ctx, srv)
	if errors.Is(err, mcpserver.ErrAppUnavailable) {
		return s.writeRPCError(c, id, rpcError{http.StatusBadRequest, rpcInvalidRequest, err.Error(), "app_unavailable"})
	} else if err != nil {
		return s.internalRPCError(c, id, err)
	}
	if s.publicURL == "" {
		// Links to the run's files start with the address the client reached.
		ctx = context.WithValue(ctx, originKey{}, requestOrigin(r))
	}
	ctx = context.WithValue(ctx, mcpSDKServerKey{}, s.mcpSDKServer(ctx, srv, app, form))
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))

	w := &rpcErrorWriter{ResponseWriter: c.Response(), id: id}
	guarded, done := stallGuard(w, s.streamStall)
	defer done()
	handler.ServeHTTP(guarded, r)
	w.finish()
	if w.status >= 400 {
		c.Set(errorCodeEchoKey, w.logCode())
	}
	return nil
}

// pick chooses the SDK handler for the request's Accept header: an event stream for a client
// that accepts one (as MCP clients do), a JSON body for one that accepts only JSON, or sends no
// Accept at all (as curl does). The SDK wants both media types accepted either way, so the
// header is completed for it.
func (m *mcpEndpoint) pick(r *http.Request) (http.Handler, bool) {
	var jsonOK, sseOK, any bool
	for _, v := range r.Header.Values(echo.HeaderAccept) {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case echo.MIMEApplicationJSON, "application/*":
				jsonOK = true
			case "text/event-stream":
				sseOK = true
			case "*/*":
				any = true
			}
		}
	}
	h := m.sse
	switch {
	case jsonOK && sseOK:
		return h, true
	case jsonOK, any, len(r.Header.Values(echo.HeaderAccept)) == 0:
		h = m.json
	default:
		return nil, false
	}
	r.Header.Set(echo.HeaderAccept, "application/json, text/event-stream")
	return h, true
}

// envelope checks that body is one JSON-RPC message with a method (a request or a
// notification) and returns its id (nil for a notification) and method. A batch is refused, as
// MCP no longer has them.
func envelope(body []byte) (json.RawMessage, string, *rpcError) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if !json.Valid(body) {
			return nil, "", &rpcError{http.StatusBadRequest, rpcParseError, "Parse error: the body is not valid JSON.", "parse_error"}
		}
		return nil, "", &rpcError{http.StatusBadRequest, rpcInvalidRequest, "Batch requests are not supported: send one JSON-RPC message per request.", "invalid_request"}
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, "", &rpcError{http.StatusBadRequest, rpcInvalidRequest, "Invalid Request: a JSON-RPC message is an object with jsonrpc, method and, for a request, id.", "invalid_request"}
		}
		return nil, "", &rpcError{http.StatusBadRequest, rpcParseError, "Parse error: the body is not valid JSON.", "parse_error"}
	}
	id := msg.ID
	if len(id) > 0 {
		// An id is a string or a number (MCP: never null); anything else cannot be echoed.
		var v any
		_ = json.Unmarshal(id, &v) // id is valid JSON: the message decoded
		switch v.(type) {
		case string, float64:
		default:
			return nil, "", &rpcError{http.StatusBadRequest, rpcInvalidRequest, "Invalid Request: the id must be a string or a number.", "invalid_request"}
		}
	}
	switch {
	case msg.JSONRPC != "2.0":
		return id, "", &rpcError{http.StatusBadRequest, rpcInvalidRequest, `Invalid Request: jsonrpc must be "2.0".`, "invalid_request"}
	case msg.Method == nil || *msg.Method == "":
		// A response: this server sends the client no requests it could answer.
		return id, "", &rpcError{http.StatusBadRequest, rpcInvalidRequest, "Invalid Request: the message has no method.", "invalid_request"}
	}
	return id, *msg.Method, nil
}

// mcpApp is the server's app and the app whose input form the tool takes (for an Agent app, its
// published agent's); ErrAppUnavailable when it cannot run.
func (s *Server) mcpApp(ctx context.Context, srv store.MCPServer) (app, form *apps.App, err error) {
	a, err := s.apps.Get(ctx, srv.AppID)
	switch {
	case errors.Is(err, apps.ErrNotFound):
		return nil, nil, mcpserver.ErrAppUnavailable
	case err != nil:
		return nil, nil, err
	case !a.Enabled, a.Versioned() && a.Mode != apps.ModeAgent && a.PublishedVersion == "":
		return nil, nil, mcpserver.ErrAppUnavailable
	}
	form = a
	if a.Mode == apps.ModeAgent {
		if form, err = a.PublishedAgent(); err != nil {
			return nil, nil, mcpserver.ErrAppUnavailable
		}
	}
	return a, form, nil
}

// mcpSDKServer is the MCP server of one request: Parley's name and version, the server's
// description as its instructions, and its one tool, the app.
func (s *Server) mcpSDKServer(reqCtx context.Context, srv store.MCPServer, app, form *apps.App) *mcp.Server {
	desc := srv.Description
	if desc == "" {
		desc = app.Description
	}
	ms := mcp.NewServer(&mcp.Implementation{Name: "Parley", Version: version.String()}, &mcp.ServerOptions{
		Instructions: desc,
		// Tools only, and the list never changes during a session (Dify's capabilities).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}},
	})
	ms.AddTool(&mcp.Tool{
		Name: mcpserver.ToolName(app.Name), Title: app.Name, Description: desc,
		InputSchema: mcpserver.InputSchema(app.Mode, form.UserInputForm, srv.Parameters),
	}, s.mcpTool(reqCtx, srv, app))
	ms.AddReceivingMiddleware(s.recordMCPClient(reqCtx, srv))
	return ms
}

// recordMCPClient keeps the name of the client an initialize request names, as Dify names the
// server's end user after it.
func (s *Server) recordMCPClient(reqCtx context.Context, srv store.MCPServer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && method == "initialize" && p != nil && p.ClientInfo != nil {
				ci := p.ClientInfo
				wctx, cancel := context.WithTimeout(context.WithoutCancel(reqCtx), 5*time.Second)
				if err := s.mcp.RecordClient(wctx, srv.ID, ci.Name, ci.Version); err != nil {
					s.log.WarnContext(reqCtx, "mcp: could not record the client", "mcp_server_id", srv.ID, "error", err)
				}
				cancel()
			}
			return next(ctx, method, req)
		}
	}
}

// mcpTool is the tool's handler: it runs the app with the call's arguments and answers with
// its answer. Arguments the app cannot take are a JSON-RPC error (-32602, as in Dify); a run
// that fails, or that the server refuses to start (the app's concurrency cap, its model's
// provider not set up), is the tool's error (isError, with the message the Service API would
// give), which is what MCP clients show the model; a failure of the server itself is a JSON-RPC
// error (-32603, "Internal server error: …").
func (s *Server) mcpTool(reqCtx context.Context, srv store.MCPServer, app *apps.App) mcp.ToolHandler {
	return func(sdkCtx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				s.log.ErrorContext(reqCtx, "panic", "error", p, "route", mcpRoute, "stack", string(debug.Stack()))
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal server error"}
			}
		}()
		// The run's log lines carry the request's id; the call ends with the SDK's request or
		// the HTTP request, whichever ends first (the run goes on and is stored).
		ctx, cancel := context.WithCancel(logctx.WithRequestID(sdkCtx, logctx.RequestID(reqCtx)))
		defer cancel()
		stop := context.AfterFunc(reqCtx, cancel)
		defer stop()
		var progress func(mcpserver.Progress)
		if tok := req.Params.GetProgressToken(); tok != nil {
			progress = func(p mcpserver.Progress) {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p.Progress, Message: p.Message})
				if err != nil {
					s.log.DebugContext(ctx, "mcp: progress notification not sent", "error", err)
				}
			}
		}
		// Text the database cannot store is refused, as the API refuses it (jsonbody.go).
		var args any
		if json.Unmarshal(req.Params.Arguments, &args) == nil {
			if where, bad := unstorable(args, ""); bad {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errNotStorable(where).Message}
			}
		}
		out, err := mcpserver.Call(ctx, s.runs, app, mcpserver.User(srv.ID), req.Params.Arguments, progress)
		if err != nil {
			return s.mcpToolError(ctx, err)
		}
		return s.mcpResult(reqCtx, app, out), nil
	}
}

// mcpToolError maps a failed call: see mcpTool.
func (s *Server) mcpToolError(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	var argErr *mcpserver.ArgumentError
	var inputErr *apps.InputError
	switch {
	case errors.As(err, &argErr), errors.As(err, &inputErr):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	case ctx.Err() != nil:
		// The client went away: nobody reads the answer.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal server error: the request ended before the answer"}
	}
	e := mapError(err)
	var runErr *mcpserver.RunError
	if e.Status >= 500 {
		s.log.ErrorContext(ctx, "mcp: tool call failed", "status", e.Status, "code", e.Code, "error", err, "error_types", errorTypes(err))
		if !errors.As(err, &runErr) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal server error: " + e.Message}
		}
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: e.Message}}}
	res.IsError = true
	return res, nil
}

// mcpResult is the tool result of a call: its text, a Workflow app's outputs as structured
// content, and the run's files as links.
func (s *Server) mcpResult(ctx context.Context, app *apps.App, out mcpserver.Result) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: out.Failed, Content: []mcp.Content{&mcp.TextContent{Text: out.Text}}}
	if out.Structured != nil && !out.Failed {
		res.StructuredContent = out.Structured
	}
	base := s.publicBase(ctx)
	for _, f := range out.Files {
		uri := f.URL
		if strings.HasPrefix(uri, "/") {
			uri = base + uri
		}
		res.Content = append(res.Content, &mcp.ResourceLink{URI: uri, Name: f.Name, MIMEType: f.MIMEType})
	}
	return res
}

// writeRPCError answers a refused MCP request with a JSON-RPC error (id null when the request's
// is unknown) and notes its code for the access log.
func (s *Server) writeRPCError(c echo.Context, id json.RawMessage, e rpcError) error {
	c.Set(errorCodeEchoKey, e.logCode)
	writeRPC(c.Response(), e.status, id, e.code, e.message)
	return nil
}

// internalRPCError answers an MCP request the server failed: the mapped status and safe
// message, logged once with the cause.
func (s *Server) internalRPCError(c echo.Context, id json.RawMessage, err error) error {
	e := mapError(err)
	s.log.ErrorContext(c.Request().Context(), "mcp request failed", "route", mcpRoute, "status", e.Status, "code", e.Code,
		"error", err, "error_types", errorTypes(err))
	return s.writeRPCError(c, id, rpcError{e.Status, jsonrpc.CodeInternalError, "Internal server error: " + e.Message, e.Code})
}

// mcpErrorHandler is the MCP Echo's error handler: what its middleware refuses (a body over
// the cap, one that came too slowly), a path it does not serve, and a recovered panic get a
// JSON-RPC error with the status the API would give.
func (s *Server) mcpErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := toAPIError(err, c.Request())
	code := int64(rpcInvalidRequest)
	if e.Status >= 500 {
		code = jsonrpc.CodeInternalError
		s.log.ErrorContext(c.Request().Context(), "mcp request failed", "route", c.Path(), "status", e.Status,
			"code", e.Code, "error", err, "error_types", errorTypes(err))
	}
	if e.Status == http.StatusRequestEntityTooLarge {
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	_ = s.writeRPCError(c, nil, rpcError{e.Status, code, e.Message, e.Code})
}

// writeRPC writes a JSON-RPC error response.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, code int64, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	h := w.Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Del("X-Content-Type-Options")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// maxSDKErrorText bounds the text of an SDK refusal kept for its JSON-RPC error.
const maxSDKErrorText = 1024

// rpcErrorWriter turns the plain-text refusals of the SDK's handler (http.Error: a protocol
// version it does not support, a message it cannot decode) into JSON-RPC errors, so that a
// client always gets one. Everything else passes through.
type rpcErrorWriter struct {
	http.ResponseWriter
	id     json.RawMessage
	status int // set while a plain-text error is held back
	text   []byte
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get(echo.HeaderContentType), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrorWriter) Write(p []byte) (int, error) {
	if w.status != 0 {
		if room := maxSDKErrorText - len(w.text); room > 0 {
			w.text = append(w.text, p[:min(len(p), room)]...)
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (the SDK flushes through it).
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the JSON-RPC error of a held-back refusal.
func (w *rpcErrorWriter) finish() {
	if w.status == 0 {
		return
	}
	code := int64(rpcInvalidRequest)
	text := strings.TrimSpace(string(w.text))
	switch {
	case w.status >= 500:
		code = jsonrpc.CodeInternalError
	case strings.HasPrefix(text, "JSON RPC not handled"):
		// The SDK's words for a method it does not have.
		code = jsonrpc.CodeMethodNotFound
	}
	writeRPC(w.ResponseWriter, w.status, w.id, code, text)
}

// logCode is the access log's code of a refusal of the SDK.
func (w *rpcErrorWriter) logCode() string {
	if w.status >= 500 {
		return "internal_server_error"
	}
	return "invalid_request"
}

// mcpAttr is the access log's attribute of an MCP request, its JSON-RPC method; the zero Attr
// for other requests.
func mcpAttr(c echo.Context) slog.Attr {
	if m, ok := c.Get(mcpMethodEchoKey).(string); ok {
		// A method is the client's text: bounded, as a log line should be.
		return slog.String("mcp_method", m[:min(len(m), 64)])
	}
	return slog.Attr{}
}
