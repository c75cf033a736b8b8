package mcp

import (
	"fmt"
	"io"
	"net/http"
)

// boundedTransport adds the configured headers to every request and caps every response body:
// reading past max bytes fails, which the SDK reports as a failed call.
type boundedTransport struct {
	base    http.RoundTripper
	headers http.Header
	max     int64
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
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
	resp.Body = &cappedBody{rc: resp.Body, left: t.max, max: t.max}
	return resp, nil
}

// cappedBody fails once more than max bytes have been read.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("mcp: response larger than %d bytes", b.max)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("mcp: response larger than %d bytes", b.max)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
