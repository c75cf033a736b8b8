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
// failed call.
type boundedTransport struct {
	base    http.RoundTripper
	headers http.Header
	max     int64
	// origin is the server URL's origin (see originOf).
	origin string
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The headers (often a bearer token) and the tool arguments are meant for the server alone.
	// A redirect naming another origin is refused: Go's client would drop Authorization on a
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
	over, _ := req.Context().Value(oversizeKey{}).(*atomic.Bool)
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
		return 0, fmt.Errorf("mcp: response larger than %d bytes", b.max)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
