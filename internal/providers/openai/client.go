// Package openai implements providers.ChatModel, providers.Embedder and
// providers.Reranker over the OpenAI chat completions and embeddings HTTP
// protocol, as spoken by OpenAI itself, Azure OpenAI (base URLs with
// ?api-version=…), vLLM, Ollama, llama.cpp's server and LM Studio, plus the
// Jina/Cohere-style rerank endpoint that OpenAI-compatible servers add.
//
// The wire protocol is implemented here with net/http and encoding/json;
// there is no SDK. One [Client] per configured provider owns one
// http.Client whose transport is tuned for many concurrent, long-lived
// streams (see [New]).
//
// Timeouts: the configured timeout bounds the wait for response headers
// and, once a body is flowing, any silence between two reads (the idle
// timeout); keep-alive comments count as data. The call timeout caps the
// whole call, from the request to the end of the response body: a stream
// that keeps making progress, or that sends only keep-alive comments, is
// cut there.
package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/tracing"
)

// DefaultTimeout is used when Config.Timeout is zero (the same default as
// config.DefaultProviderTimeout).
const DefaultTimeout = 60 * time.Second

// DefaultCallTimeout is used when Config.CallTimeout is zero (the same
// default as PARLEY_MODEL_CALL_TIMEOUT).
const DefaultCallTimeout = 10 * time.Minute

// Config configures a Client.
type Config struct {
	// Name is the provider name used in error messages ("[openai] …");
	// defaults to "openai".
	Name string
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or an Azure
	// deployment URL with ?api-version=…; requests go to
	// <BaseURL>/chat/completions, <BaseURL>/embeddings and <BaseURL>/rerank
	// with the query string preserved.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when non-empty, and
	// also as "api-key: <key>" when BaseURL looks like Azure (an
	// api-version query parameter or an *.azure.com host).
	APIKey string
	// Timeout bounds the wait for response headers and the silence between
	// two reads of a response body; 0 means DefaultTimeout.
	Timeout time.Duration
	// StreamIdleTimeout overrides Timeout for the silence between reads of
	// a body; 0 means Timeout.
	StreamIdleTimeout time.Duration
	// CallTimeout caps the whole of one call, from sending the request to
	// the end of the response body, however steadily data arrives; 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// HTTPClient replaces the client built by New (tests, proxies). Its
	// own Timeout, if any, applies on top of ours and would cut long
	// streams; leave it zero.
	HTTPClient *http.Client
}

// Client talks to one OpenAI-compatible provider. It is safe for
// concurrent use; build one per provider and reuse it so that connections
// are pooled.
type Client struct {
	name      string
	chatURL   string
	embedURL  string
	rerankURL string
	// sttURL and ttsURL are the audio endpoints (audio.go).
	sttURL, ttsURL string
	urlErr         error
	// base is the provider's base URL, for the hints of failed requests.
	base    *url.URL
	apiKey  string
	azure   bool
	timeout time.Duration
	idle    time.Duration
	callCap time.Duration
	hc      *http.Client

	// noStreamOptions is set once the upstream rejected stream_options
	// and accepted the same stream without it (older vLLM and Ollama
	// builds): later streams skip it, and report no usage.
	noStreamOptions atomic.Bool
}

var (
	_ providers.ChatModel = (*Client)(nil)
	_ providers.Embedder  = (*Client)(nil)
	_ providers.Reranker  = (*Client)(nil)
)

// New returns a client for cfg. Unless cfg.HTTPClient is set, it builds an
// http.Client without an overall timeout over a transport with a 10 s dial
// and TLS handshake timeout, a response-header timeout of cfg.Timeout, TCP
// keep-alive, HTTP/2 when the server offers it, and up to 256 idle
// connections per host so that concurrent streams reuse connections.
//
// An unusable BaseURL is not reported here (config validation owns that);
// every call then fails with a KindInvocation error.
func New(cfg Config) *Client {
	c := &Client{
		name:    cmp.Or(strings.TrimSpace(cfg.Name), "openai"),
		apiKey:  strings.TrimSpace(cfg.APIKey),
		timeout: cfg.Timeout,
		idle:    cfg.StreamIdleTimeout,
		callCap: cfg.CallTimeout,
		hc:      cfg.HTTPClient,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.callCap <= 0 {
		c.callCap = DefaultCallTimeout
	}
	if c.idle <= 0 {
		c.idle = c.timeout
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: newTransport(c.timeout)}
	}
	base, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	switch {
	case err != nil:
		c.urlErr = err
	case (base.Scheme != "http" && base.Scheme != "https") || base.Host == "":
		c.urlErr = fmt.Errorf("base URL %q must be an absolute http(s) URL", cfg.BaseURL)
	default:
		c.base = base
		c.chatURL = base.JoinPath("chat/completions").String()
		c.embedURL = base.JoinPath("embeddings").String()
		c.rerankURL = base.JoinPath("rerank").String()
		c.sttURL = base.JoinPath("audio/transcriptions").String()
		c.ttsURL = base.JoinPath("audio/speech").String()
		c.azure = base.Query().Has("api-version") || strings.HasSuffix(strings.ToLower(base.Hostname()), ".azure.com")
	}
	return c
}

func newTransport(headerTimeout time.Duration) *http.Transport {
	dial := &net.Dialer{Timeout: min(10*time.Second, headerTimeout), KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   min(10*time.Second, headerTimeout),
		ResponseHeaderTimeout: headerTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
	}
}

// Name returns the provider name used in error messages.
func (c *Client) Name() string { return c.name }

// CloseIdleConnections closes pooled connections that are not in use
// (shutdown, tests).
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Watchdog causes: the request context is cancelled with one of these so
// that the error path can tell our timeouts and our Close from the
// caller's cancellation.
var (
	errIdle   = errors.New("no data from upstream within the timeout")
	errCapped = errors.New("the call took longer than its cap")
	errClosed = errors.New("stream closed by the caller")
)

// exchange is one HTTP request in flight: its context (cancelled by the
// watchdog, by the call cap, by Close, or by the caller) and the timers.
type exchange struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	watch  *time.Timer
	limit  *time.Timer // the call cap; never reset
	idle   time.Duration
	body   io.ReadCloser // the response body, reads reset the watchdog
	header http.Header   // the response headers
}

// Read implements io.Reader over the response body. The idle watchdog is
// armed only while a read waits for the upstream, so a caller that is slow
// to call Recv (a slow downstream client) never trips it.
func (x *exchange) Read(p []byte) (int, error) {
	x.watch.Reset(x.idle)
	n, err := x.body.Read(p)
	x.watch.Stop()
	return n, err
}

// finish stops the watchdog and releases the request's context. When
// drain is true the rest of the body is read (bounded in size and by a
// short watchdog) so that the connection goes back to the pool.
func (x *exchange) finish(drain bool) {
	if x.body != nil {
		if drain {
			// Bounded: a server that does not end the response promptly
			// after its last event loses the connection instead.
			x.watch.Reset(min(x.idle, time.Second))
			_, _ = io.CopyN(io.Discard, x.body, 64<<10)
		}
		_ = x.body.Close()
	}
	x.watch.Stop()
	if x.limit != nil {
		x.limit.Stop()
	}
	x.cancel(errClosed)
}

// post sends body to endpoint and returns the exchange once response
// headers with a 2xx status arrived. Any failure is a *providers.Error.
func (c *Client) post(ctx context.Context, endpoint string, body []byte, stream bool) (*exchange, error) {
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	return c.send(ctx, endpoint, body, "application/json", accept)
}

// send is post with the request's content type and accepted type.
func (c *Client) send(ctx context.Context, endpoint string, body []byte, contentType, accept string) (*exchange, error) {
	if c.urlErr != nil {
		return nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid base URL", c.urlErr)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	x := &exchange{ctx: cctx, cancel: cancel, idle: c.idle}
	x.watch = time.AfterFunc(c.timeout, func() { cancel(errIdle) })
	x.limit = time.AfterFunc(c.callCap, func() { cancel(errCapped) })

	req, err := http.NewRequestWithContext(cctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		x.finish(false)
		return nil, providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "parley")
	// The provider continues the trace of the call, when tracing is on.
	tracing.Inject(ctx, req.Header)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
		if c.azure {
			req.Header.Set("Api-Key", c.apiKey)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		e := c.transportError(cctx, err, false)
		x.finish(false)
		return nil, c.locate(e, endpoint)
	}
	x.body, x.header = resp.Body, resp.Header
	x.watch.Stop() // re-armed by each body read
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// A failed read leaves a partial body, which still parses as well
		// as it can; the status alone decides the kind.
		raw, rerr := io.ReadAll(io.LimitReader(x, maxErrorBody))
		e := c.statusError(resp.StatusCode, raw)
		x.finish(rerr == nil)
		return nil, c.locate(e, endpoint)
	}
	return x, nil
}

// locate adds to e, for the log, the URL that failed and a hint when the failure looks like a
// wrong base URL: a 404 from a base URL without /v1 (OpenAI-compatible servers serve the API
// under /v1), or a refused connection.
func (c *Client) locate(e *providers.Error, endpoint string) *providers.Error {
	e.URL, _, _ = strings.Cut(endpoint, "?") // an Azure api-version: nothing the operator needs here
	switch {
	case e.StatusCode == http.StatusNotFound && !c.azure && !strings.Contains(c.base.Path, "/v1"):
		e.Hint = fmt.Sprintf("the provider's base_url %s has no /v1; OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LM Studio) serve the API under /v1: try %s",
			c.base.String(), c.base.JoinPath("v1").String())
	case e.StatusCode == 0 && errors.Is(e, syscall.ECONNREFUSED):
		e.Hint = fmt.Sprintf("nothing listens at %s: is the model server running, and is the provider's base_url right?", c.base.Host)
	}
	return e
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// transportError turns a failed round trip or body read into a
// *providers.Error. midStream marks failures after a 2xx response started,
// which make the answer incomplete (ErrTruncated).
func (c *Client) transportError(ctx context.Context, err error, midStream bool) *providers.Error {
	cause := context.Cause(ctx)
	idle := errors.Is(cause, errIdle)
	switch {
	case errors.Is(cause, errCapped):
		// Classified as a timeout, like the idle one: Dify maps an invocation that times
		// out to completion_request_error.
		msg := fmt.Sprintf("the model call took longer than its %s limit", c.callCap)
		wrapped := fmt.Errorf("%w: %w: %w", providers.ErrTimeout, errCapped, err)
		if midStream {
			msg = fmt.Sprintf("stream cut: the model call took longer than its %s limit", c.callCap)
			wrapped = fmt.Errorf("%w: %w: %w: %w", providers.ErrTruncated, providers.ErrTimeout, errCapped, err)
		}
		return providers.NewError(c.name, providers.KindInvocation, 0, msg, wrapped)
	case !idle && ctx.Err() != nil && !errors.Is(cause, errClosed):
		// The caller's context ended: keep its cause (context.Canceled,
		// DeadlineExceeded) reachable for errors.Is.
		return providers.NewError(c.name, providers.KindInvocation, 0, "request cancelled", fmt.Errorf("%w (%w)", cause, err))
	case idle || isTimeout(err):
		msg := "request timed out"
		wrapped := fmt.Errorf("%w: %w", providers.ErrTimeout, err)
		if midStream {
			msg = "stream stalled: no data within the timeout"
			wrapped = fmt.Errorf("%w: %w: %w", providers.ErrTruncated, providers.ErrTimeout, err)
		}
		return providers.NewError(c.name, providers.KindInvocation, 0, msg, wrapped)
	case midStream:
		return providers.NewError(c.name, providers.KindInvocation, 0, "stream ended before completion",
			fmt.Errorf("%w: %w", providers.ErrTruncated, err))
	default:
		return providers.NewError(c.name, providers.KindInvocation, 0, "connection error", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// statusError maps a non-2xx response to a *providers.Error.
func (c *Client) statusError(status int, body []byte) *providers.Error {
	e := parseErrorBody(body)
	msg := c.scrub(e.Message)
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	}
	return providers.NewError(c.name, classify(status, e), status, msg,
		fmt.Errorf("upstream HTTP %d (type %q, code %q)", status, e.Type, e.Code))
}

// scrub removes the API key from upstream text (some servers echo it).
func (c *Client) scrub(s string) string {
	if len(c.apiKey) >= 8 {
		s = strings.ReplaceAll(s, c.apiKey, "[redacted]")
	}
	return strings.TrimSpace(s)
}

// apiError is the decoded error of an OpenAI-style error body.
type apiError struct {
	Message, Type, Code string
}

// parseErrorBody understands OpenAI's {"error":{"message","type","code"}},
// {"error":"text"} (Ollama), vLLM's {"object":"error","message",…,"code":400}
// and FastAPI's {"detail":"text"}. Anything else yields an empty apiError:
// the raw body never reaches a client.
func parseErrorBody(body []byte) apiError {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &top) != nil {
		return apiError{}
	}
	if len(top.Error) > 0 && top.Error[0] == '{' {
		var inner struct {
			Message json.RawMessage `json:"message"`
			Type    json.RawMessage `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(top.Error, &inner) == nil {
			return apiError{Message: scalar(inner.Message), Type: scalar(inner.Type), Code: scalar(inner.Code)}
		}
	}
	if s := scalar(top.Error); s != "" {
		return apiError{Message: s}
	}
	if s := scalar(top.Message); s != "" {
		return apiError{Message: s, Type: scalar(top.Type), Code: scalar(top.Code)}
	}
	return apiError{Message: scalar(top.Detail)}
}

// scalar renders a JSON string or number as text; null, objects and arrays
// give "".
func scalar(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return string(raw)
	}
	return ""
}

// classify picks the Kind of an upstream error, which decides the Dify error code a client sees
// (docs/dify-compat.md, "Model provider failures").
func classify(status int, e apiError) providers.Kind {
	code, typ := strings.ToLower(e.Code), strings.ToLower(e.Type)
	msg := strings.ToLower(e.Message)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || code == "invalid_api_key":
		return providers.KindCredentials
	case status == http.StatusTooManyRequests || slices.Contains(quotaCodes, code) || slices.Contains(quotaCodes, typ):
		return providers.KindQuota
	case status == http.StatusNotFound || code == "model_not_found":
		return providers.KindModel
	case status == http.StatusBadRequest && strings.Contains(msg, "model") &&
		(strings.Contains(msg, "does not exist") || strings.Contains(msg, "not found")):
		return providers.KindModel
	}
	return providers.KindInvocation
}

var quotaCodes = []string{"insufficient_quota", "rate_limit_exceeded", "rate_limit_error"}
