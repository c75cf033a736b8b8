package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
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
	over, _ := req.Context().Value(oversizeKey{}).(*atomic.Bool)
	resp.Body = &cappedBody{rc: resp.Body, left: t.max, max: t.max, over: over}
	return resp, nil
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
