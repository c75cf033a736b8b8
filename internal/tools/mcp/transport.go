package mcp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
)

// boundedTransport adds the configured headers to every request, keeps requests on the server's
// origin and caps every response body: reading past max bytes fails, which the SDK reports as a
// failed call. The long-lived event stream of an HTTP+SSE session is capped per event instead
// (see eventBody).
type boundedTransport struct {
	base    http.RoundTripper
	headers http.Header
	max     int64
	// origin is the server URL's origin (see originOf).
	origin string
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The headers (often a bearer token) and the tool arguments are meant for the server alone.
	// A redirect or an HTTP+SSE message endpoint naming another origin is refused, as the MCP
	// TypeScript SDK refuses such an endpoint: Go's client would drop Authorization on a
	// redirect to another host, but the headers are added back below.
	if o := originOf(req.URL); o != t.origin {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("mcp: refusing a request to %s, which is not the server's origin %s", o, t.origin)
	}
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header.Del(k)
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	if st, ok := ctx.Value(statusKey{}).(*atomic.Int32); ok && req.Method == http.MethodPost {
		st.Store(int32(resp.StatusCode))
	}
	if over, ok := ctx.Value(streamKey{}).(*atomic.Bool); ok {
		resp.Body = &eventBody{rc: resp.Body, max: t.max, blank: true, over: over}
		return resp, nil
	}
	over, _ := ctx.Value(oversizeKey{}).(*atomic.Bool)
	resp.Body = &cappedBody{rc: resp.Body, left: t.max, max: t.max, over: over}
	return resp, nil
}

// originOf is u's scheme, host and port (the scheme's default when u names none), in lower
// case, so that http://Example.com and http://example.com:80 are one origin.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// oversizeKey marks a call's context with a flag its response bodies set when they exceed the
// cap, so that the call can say so (the SDK's own error may not).
type oversizeKey struct{}

func withOversizeFlag(ctx context.Context) (context.Context, *atomic.Bool) {
	f := new(atomic.Bool)
	return context.WithValue(ctx, oversizeKey{}, f), f
}

// statusKey marks the context of a Streamable HTTP handshake with where to record the status of
// the last POST answered, so that a 4xx can send the client to the HTTP+SSE transport.
type statusKey struct{}

// streamKey marks the request of an HTTP+SSE event stream with its session's flag, set when an
// event exceeds the cap.
type streamKey struct{}

// tooLarge is the error of a response or event over the cap.
func tooLarge(max int64) error {
	return fmt.Errorf("mcp: response larger than %d bytes", max)
}

// cappedBody fails once more than max bytes have been read.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
	over *atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left >= 0 && int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n := 0
	var err error
	if b.left >= 0 {
		n, err = b.rc.Read(p)
		b.left -= int64(n)
	}
	if b.left < 0 {
		if b.over != nil {
			b.over.Store(true)
		}
		return 0, tooLarge(b.max)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// eventBody caps each server-sent event of a stream, the bytes from one blank line to the next,
// at max bytes, rather than the whole body: the stream of an HTTP+SSE session lasts as long as
// the session and carries every answer, so a cap on its total would end any long session. The
// SDK bounds each event as well (MaxEventSize), but ends the stream without a word; this sets
// the session's flag first, so that the calls that fail with it can say why. Lines end with
// "\n" (an optional "\r" before it), as the SDK's reader splits them. Once over, every read
// fails: the stream, and so the session, is over.
type eventBody struct {
	rc  io.ReadCloser
	max int64
	// n counts the bytes of the event being read.
	n int64
	// blank says the line being read holds nothing but '\r' so far.
	blank bool
	over  *atomic.Bool
	err   error
}

func (b *eventBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	for _, c := range p[:n] {
		if b.n++; b.n > b.max {
			b.over.Store(true)
			b.err = tooLarge(b.max)
			return 0, b.err
		}
		switch c {
		case '\n':
			if b.blank {
				b.n = 0
			}
			b.blank = true
		case '\r':
		default:
			b.blank = false
		}
	}
	return n, err
}

func (b *eventBody) Close() error { return b.rc.Close() }
