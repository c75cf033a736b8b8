package mcp

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// transportKind is the MCP transport a Provider speaks to its server.
type transportKind int

const (
	// kindUnknown: Streamable HTTP is tried first, and HTTP+SSE after a 4xx (see
	// Provider.connect).
	kindUnknown transportKind = iota
	// kindStreamable is the Streamable HTTP transport (MCP 2025-03-26 and later).
	kindStreamable
	// kindSSE is the older HTTP+SSE transport (MCP 2024-11-05): a GET opens an event stream that
	// names, in its first event, the URL to POST messages to, and carries every answer.
	kindSSE
)

// kindOf is the transport a server URL names: most MCP servers in Dify exports are reached at a
// URL whose path ends in /sse, the HTTP+SSE transport's usual endpoint, and those get it
// straight away. Any other URL is probed.
func kindOf(u *url.URL) transportKind {
	if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/sse") {
		return kindSSE
	}
	return kindUnknown
}

// sseProtocolVersion is the version a client offers over HTTP+SSE. The SDK's newest version
// first sends a server/discover request, which HTTP+SSE servers, older by design, do not know;
// the version before it starts with initialize, and the server may still answer with its own.
const sseProtocolVersion = "2025-11-25"

// session is an open MCP session.
type session struct {
	*sdk.ClientSession
	// streamOver is set when the event stream of an HTTP+SSE session brought an event over the
	// size cap, which ends the stream: every call waiting on it then failed because of it.
	streamOver atomic.Bool
	// ended is closed when the session has ended, whoever ended it. A server (or a proxy) may
	// close the event stream of an HTTP+SSE session between calls; the next call then opens a
	// new session rather than failing on the old one.
	ended chan struct{}
}

func newSession() *session { return &session{ended: make(chan struct{})} }

// done reports whether s has ended.
func (s *session) done() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// explain adds to err, the failure of a request on s, that an event over the cap ended the
// session's stream, when that is why.
func (p *Provider) explain(s *session, err error) error {
	if s.streamOver.Load() {
		return fmt.Errorf("%w: %w", tooLarge(p.opts.MaxResponseBytes), err)
	}
	return err
}

// connect opens a session with the transport known to work for the server. While none is known,
// it follows the backwards-compatibility section of the MCP specification: the handshake is
// POSTed to the URL (Streamable HTTP), and a 4xx answer to it (a server of the HTTP+SSE transport
// alone answers 400, 404 or 405) means a GET of the URL for an event stream. The transport that
// worked is kept for the provider's lifetime, so only the first session pays for the probe. The
// caller holds p.mu.
func (p *Provider) connect(ctx context.Context) (*session, error) {
	switch p.kind {
	case kindStreamable:
		return p.connectStreamable(ctx)
	case kindSSE:
		return p.connectSSE(ctx)
	}
	status := new(atomic.Int32)
	s, err := p.connectStreamable(context.WithValue(ctx, statusKey{}, status))
	if err == nil {
		p.kind = kindStreamable
		return s, nil
	}
	if code := status.Load(); code < 400 || code > 499 || ctx.Err() != nil {
		return nil, err
	}
	s, sseErr := p.connectSSE(ctx)
	if sseErr != nil {
		return nil, fmt.Errorf("streamable HTTP: %w; HTTP+SSE: %w", err, sseErr)
	}
	p.kind = kindSSE
	return s, nil
}

// connectStreamable opens a session over Streamable HTTP.
func (p *Provider) connectStreamable(ctx context.Context) (*session, error) {
	t := &sdk.StreamableClientTransport{
		Endpoint:   p.opts.URL,
		HTTPClient: p.http,
		// No retries: a failed answer is reported to the model, not retried behind its back.
		MaxRetries: -1,
		// Server-initiated messages are not used, and a standing stream would only hold a
		// connection open.
		DisableStandaloneSSE: true,
		MaxEventSize:         int(p.opts.MaxResponseBytes),
	}
	return p.open(ctx, t, newSession(), nil)
}

// connectSSE opens a session over HTTP+SSE.
func (p *Provider) connectSSE(ctx context.Context) (*session, error) {
	s := newSession()
	t := &sseTransport{
		inner: sdk.SSEClientTransport{
			Endpoint:   p.opts.URL,
			HTTPClient: p.http,
			// The stream's body caps events at this size already and says so (eventBody); the
			// SDK's own cap is the same, as a second line.
			MaxEventSize: int(p.opts.MaxResponseBytes),
		},
		over: &s.streamOver,
	}
	return p.open(ctx, t, s, &sdk.ClientSessionOptions{ProtocolVersion: sseProtocolVersion})
}

// open runs the MCP handshake over t, and watches the session so that its end is noticed
// between calls.
func (p *Provider) open(ctx context.Context, t sdk.Transport, s *session, opts *sdk.ClientSessionOptions) (*session, error) {
	cs, err := p.client.Connect(ctx, t, opts)
	if err != nil {
		return nil, p.explain(s, err)
	}
	s.ClientSession = cs
	go func() {
		_ = cs.Wait()
		close(s.ended)
	}()
	return s, nil
}

// sseTransport is the SDK's HTTP+SSE client transport with its event stream detached from the
// call that opens the session. The stream is the session's only way back (every answer arrives
// on it), so it must outlive that call and end with the session; the SDK would tie it to the
// context it is given.
type sseTransport struct {
	inner sdk.SSEClientTransport
	// over is the session's streamOver, set when an event of the stream exceeds the cap.
	over *atomic.Bool
}

// Connect opens the event stream and waits for the endpoint event within ctx's deadline.
func (t *sseTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	// The stream keeps ctx's values but not its deadline, and is marked so that its body is
	// capped by event (boundedTransport).
	sctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), streamKey{}, t.over))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.inner.Connect(sctx)
	if !stop() {
		// ctx ended while the stream was opening: cancel has run, and the stream with it.
		if err == nil {
			_ = conn.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &sseConn{Connection: conn, cancel: cancel}, nil
}

// sseConn is the SDK's HTTP+SSE connection, which closes the event stream's body when closed;
// closing it also ends the stream's context, so that a stream still connecting ends as well.
type sseConn struct {
	sdk.Connection
	cancel context.CancelFunc
}

// Close closes the connection and ends its event stream.
func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
