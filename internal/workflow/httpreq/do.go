package httpreq

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/tracing"
)

// Settings are the server's limits and defaults for http-request nodes; a zero field takes
// Dify's default (the value of the Dify setting named beside it).
type Settings struct {
	// MaxTextSize bounds a text response: 1 MiB (HTTP_REQUEST_NODE_MAX_TEXT_SIZE).
	MaxTextSize int64
	// MaxBinarySize bounds a file response: 10 MiB (HTTP_REQUEST_NODE_MAX_BINARY_SIZE).
	MaxBinarySize int64
	// ConnectTimeout, ReadTimeout and WriteTimeout apply when the node sets none: 10 s, 60 s
	// and 20 s (HTTP_REQUEST_MAX_CONNECT_TIMEOUT, …_READ_…, …_WRITE_…).
	ConnectTimeout, ReadTimeout, WriteTimeout time.Duration
	// SkipSSLVerify is the default of nodes without ssl_verify: false, certificates are checked
	// (HTTP_REQUEST_NODE_SSL_VERIFY=true).
	SkipSSLVerify bool
	// MaxRedirects bounds the redirects followed: 20, as Dify's HTTP client.
	MaxRedirects int
}

// Dify's defaults.
const (
	DefaultMaxTextSize    = 1 << 20
	DefaultMaxBinarySize  = 10 << 20
	DefaultConnectTimeout = 10 * time.Second
	DefaultReadTimeout    = 60 * time.Second
	DefaultWriteTimeout   = 20 * time.Second
	DefaultMaxRedirects   = 20
)

func (s Settings) withDefaults() Settings {
	if s.MaxTextSize <= 0 {
		s.MaxTextSize = DefaultMaxTextSize
	}
	if s.MaxBinarySize <= 0 {
		s.MaxBinarySize = DefaultMaxBinarySize
	}
	if s.ConnectTimeout <= 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if s.ReadTimeout <= 0 {
		s.ReadTimeout = DefaultReadTimeout
	}
	if s.WriteTimeout <= 0 {
		s.WriteTimeout = DefaultWriteTimeout
	}
	if s.MaxRedirects <= 0 {
		s.MaxRedirects = DefaultMaxRedirects
	}
	return s
}

// Response is the node's outputs.
type Response struct {
	// StatusCode is the final response's status (after redirects).
	StatusCode int
	// Body is the response text; empty when the response is a file.
	Body string
	// Headers maps each lower-case header name to its values joined with ", ", as Dify shows.
	Headers map[string]string
	// Files holds the response body when it is a file (at most one), for the engine to store.
	Files []FileData
	// Request is the request as sent, in HTTP/1.1 text with the credentials masked and file
	// contents summarised: Dify's process_data.request.
	Request string
}

// StatusError is the error a response outside 2xx fails the node with, when the node fails on
// status codes at all ([Config.FailsOnStatus]); nil for a 2xx response. The outputs stay those
// of the response, as in Dify. The error is an *Error of type TypeResponseCode.
func (r *Response) StatusError() error {
	if r.StatusCode >= 200 && r.StatusCode < 300 {
		return nil
	}
	return fail(TypeResponseCode, nil, "Request failed with status code %d", r.StatusCode)
}

// Do sends the request the node describes and reads its response. A response of any status
// is a success here (see [Config.FailsOnStatus] and [Response.StatusError] for the node's
// rule). Failures are an *Error carrying Dify's error type; an error from env.Render or
// env.File is wrapped with the field it came from; when ctx ends (the run stopped, or the
// engine's per-node timeout) the error wraps ctx.Err(). The client's own Timeout is not used:
// the node's timeouts and ctx bound the exchange.
func Do(ctx context.Context, c Config, env Env) (*Response, error) {
	if env.Render == nil || env.Client == nil {
		return nil, errors.New("httpreq: Env.Render and Env.Client are required")
	}
	s := env.Settings.withDefaults()
	b, err := build(c, env)
	if err != nil {
		return nil, err
	}
	to := c.Timeout
	if to.Connect <= 0 {
		to.Connect = s.ConnectTimeout
	}
	if to.Read <= 0 {
		to.Read = s.ReadTimeout
	}
	if to.Write <= 0 {
		to.Write = s.WriteTimeout
	}
	verify := !s.SkipSSLVerify
	if c.SSLVerify != nil {
		verify = *c.SSLVerify
	}
	client, closeIdle := prepareClient(env.Client, env.Transports, to, verify, s.MaxRedirects)
	defer closeIdle()

	req, err := http.NewRequestWithContext(ctx, b.method, b.url, b.reader())
	if err != nil {
		return nil, fail(TypeInvalidURL, err, "invalid url: %v", err)
	}
	// A *bytes.Reader body gives the request its length and lets redirects resend it.
	req.Header = b.header
	// A Host header names the virtual host, as Dify keeps it.
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
		req.Header.Del("Host")
	}
	log := b.log(c.Body)
	// After the log: the node's process data shows the request its author configured.
	tracing.Inject(ctx, req.Header)
	resp, err := client.Do(req)
	if err != nil {
		return nil, transportError(ctx, err, to)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := readResponse(resp, s, to)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("http-request: %w", ctx.Err())
		}
		return nil, err
	}
	out.Request = log
	return out, nil
}

// prepareClient returns base with the node's timeouts and TLS verification installed on a clone
// of its transport (keeping its dialer, so the SSRF guard stays on), and Dify's redirect limit.
// The clone comes from pool when there is one, so runs with the same settings share
// connections; otherwise it serves this run alone and is closed with it. When the transport is
// not an *http.Transport it is used as it is.
func prepareClient(base *http.Client, pool *Transports, to Timeout, verify bool, maxRedirects int) (*http.Client, func()) {
	c := *base
	c.Timeout = 0
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return errTooManyRedirects
		}
		if base.CheckRedirect != nil {
			return base.CheckRedirect(req, via)
		}
		return nil
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return &c, func() {}
	}
	if pool != nil {
		c.Transport = pool.get(t, to, verify)
		return &c, func() {}
	}
	nt := nodeTransport(t, to, verify)
	nt.DisableKeepAlives = true
	c.Transport = nt
	return &c, nt.CloseIdleConnections
}

// nodeTransport clones t with the node's timeouts and TLS verification.
func nodeTransport(t *http.Transport, to Timeout, verify bool) *http.Transport {
	t = t.Clone()
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithTimeout(ctx, to.Connect)
		defer cancel()
		conn, err := dial(dctx, network, addr)
		if err != nil {
			if dctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
				return nil, &timeoutError{phase: "connect", after: to.Connect, err: err}
			}
			return nil, err
		}
		return &deadlineConn{Conn: conn, read: to.Read, write: to.Write}, nil
	}
	t.TLSHandshakeTimeout = to.Connect
	if !verify {
		tc := &tls.Config{}
		if t.TLSClientConfig != nil {
			tc = t.TLSClientConfig.Clone()
		}
		tc.InsecureSkipVerify = true //nolint:gosec // the node's ssl_verify: false asks for it
		t.TLSClientConfig = tc
	}
	return t
}

// Transports keeps the transports [Do] builds, one per base transport and per combination of
// timeouts and TLS verification, so that node runs reuse connections (an iteration calling one
// API a hundred times opens one connection, not a hundred). The zero value is ready; the server
// shares one among all runs and closes it at shutdown. Without one, each run opens its own
// connection and closes it.
type Transports struct {
	mu sync.Mutex
	m  map[transportKey]*http.Transport
}

type transportKey struct {
	base   *http.Transport
	to     Timeout
	verify bool
}

// maxTransports bounds the kept transports; past it one is dropped (its idle connections
// closed) to make room. Graphs have few distinct settings, so this is a safety bound.
const maxTransports = 64

func (p *Transports) get(base *http.Transport, to Timeout, verify bool) *http.Transport {
	k := transportKey{base, to, verify}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.m[k]; ok {
		return t
	}
	t := nodeTransport(base, to, verify)
	if p.m == nil {
		p.m = map[transportKey]*http.Transport{}
	}
	if len(p.m) >= maxTransports {
		for old, ot := range p.m {
			ot.CloseIdleConnections()
			delete(p.m, old)
			break
		}
	}
	p.m[k] = t
	return t
}

// Close closes the idle connections of every kept transport and forgets them.
func (p *Transports) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, t := range p.m {
		t.CloseIdleConnections()
		delete(p.m, k)
	}
}

var errTooManyRedirects = errors.New("Exceeded maximum allowed redirects.") //nolint:staticcheck // Dify's text

// timeoutError is a phase of the exchange that went silent for longer than its timeout.
type timeoutError struct {
	phase string
	after time.Duration
	err   error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%s timed out after %s", e.phase, e.after)
}
func (e *timeoutError) Unwrap() error { return e.err }
func (e *timeoutError) Timeout() bool { return true }

// deadlineConn applies the read timeout to each wait for data and the write timeout to each
// write, as Dify's HTTP client does: a slow but steady response is not cut, a silent one is.
// Writing counts as activity for the reader too, so a long upload does not use up the read
// timeout before the server could answer.
type deadlineConn struct {
	net.Conn
	read, write time.Duration
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.read))
	n, err := c.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &timeoutError{phase: "read", after: c.read, err: err}
	}
	return n, err
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.write))
	n, err := c.Conn.Write(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &timeoutError{phase: "write", after: c.write, err: err}
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.read))
	return n, err
}

// transportError turns a failed exchange into the node's error: the context's own error when
// the run was stopped, the SSRF guard's refusal, a timeout, or the network error without the
// URL (which may carry secrets in its query).
func transportError(ctx context.Context, err error, to Timeout) error {
	if ctx.Err() != nil {
		return fmt.Errorf("http-request: %w", ctx.Err())
	}
	if errors.Is(err, netguard.ErrForbidden) {
		return fail(TypeSSRF, err, "Access to the URL was blocked by SSRF protection. The URL resolves to a private, loopback, link-local, or otherwise non-public network address.")
	}
	if errors.Is(err, errTooManyRedirects) {
		return fail(TypeRequest, err, "%v", errTooManyRedirects)
	}
	var te *timeoutError
	if errors.As(err, &te) {
		return fail(TypeRequest, err, "%s", timeoutText(te))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if strings.Contains(err.Error(), "TLS handshake") {
			return fail(TypeRequest, err, "%s", timeoutText(&timeoutError{phase: "connect", after: to.Connect}))
		}
		return fail(TypeRequest, err, "Request timed out")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fail(TypeRequest, err, "%v", err)
}

func timeoutText(te *timeoutError) string {
	switch te.phase {
	case "connect":
		return fmt.Sprintf("Connection timed out: no connection within the connect timeout of %s", te.after)
	case "write":
		return fmt.Sprintf("Write timed out: the request could not be sent within the write timeout of %s", te.after)
	default:
		return fmt.Sprintf("Read timed out: no data received within the read timeout of %s", te.after)
	}
}

// readResponse reads the body under the cap of its kind: it classifies the response from its
// headers and first bytes, then reads at most the cap plus one byte, refusing a larger body
// without holding it (a Content-Length above the cap is refused before reading).
func readResponse(resp *http.Response, s Settings, to Timeout) (*Response, error) {
	out := &Response{StatusCode: resp.StatusCode, Headers: map[string]string{}}
	for k, vs := range resp.Header {
		out.Headers[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	var body io.Reader = resp.Body
	contentLength := resp.ContentLength
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		contentLength = 0 // the length of what a GET would send; no body comes
	}
	// The client decodes gzip itself unless the node's headers asked for an encoding; then a
	// gzip body is decoded here, as Dify's client decodes it, and capped decoded.
	if !resp.Uncompressed && strings.EqualFold(strings.TrimSpace(resp.Header.Get("Content-Encoding")), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, readError(err, to)
		}
		defer func() { _ = zr.Close() }()
		body, contentLength = zr, -1
		delete(out.Headers, "content-encoding")
		delete(out.Headers, "content-length")
	}
	br := bufio.NewReaderSize(body, sniffLen)
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, readError(err, to)
	}
	ct := resp.Header.Get("Content-Type")
	cd := resp.Header.Get("Content-Disposition")
	file := isFile(ct, cd, head)
	limit, kind := s.MaxTextSize, "Text"
	if file {
		limit, kind = s.MaxBinarySize, "File"
	}
	if contentLength > limit {
		return nil, sizeError(kind, limit, readableSize(contentLength))
	}
	data, err := io.ReadAll(io.LimitReader(br, limit+1))
	if err != nil {
		return nil, readError(err, to)
	}
	if int64(len(data)) > limit {
		return nil, sizeError(kind, limit, "more than "+readableSize(limit))
	}
	if file {
		out.Files = []FileData{responseFile(resp, ct, cd, data)}
		return out, nil
	}
	out.Body = decodeText(data, ct)
	return out, nil
}

func readError(err error, to Timeout) error {
	var te *timeoutError
	if errors.As(err, &te) {
		return fail(TypeRequest, err, "%s", timeoutText(te))
	}
	return fail(TypeRequest, err, "reading the response: %v", err)
}

func sizeError(kind string, limit int64, current string) error {
	return fail(TypeResponseSize, nil, "%s size is too large, max size is %.2f MB, but current size is %s.",
		kind, float64(limit)/1024/1024, current)
}

// readableSize writes a size as Dify's messages do.
func readableSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.2f KB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.2f MB", float64(n)/1024/1024)
	}
}
