package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/netguard"
)

// within waits for ch, failing the test after a bound rather than hanging the suite.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
	}
}

func kindOfProvider(p *Provider) transportKind {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kind
}

func currentOf(p *Provider) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.session
}

// TestTransportChoice: a URL ending in /sse gets HTTP+SSE without a probe; another URL is
// probed with Streamable HTTP, which a Streamable server answers (no event stream is asked
// for) and a server of HTTP+SSE alone answers with a 4xx, after which the client asks for the
// stream. The transport found is kept: a session opened again after a failure probes no more.
func TestTransportChoice(t *testing.T) {
	t.Parallel()
	sse := func(path string) func(*testing.T) *testServer {
		return func(t *testing.T) *testServer { return newSSETestServer(t, path) }
	}
	for _, c := range []struct {
		name   string
		server func(*testing.T) *testServer
		want   transportKind
		probe  bool
	}{
		{"streamable", newTestServer, kindStreamable, false},
		{"sse by the URL", sse("/sse"), kindSSE, false},
		{"sse by the URL with a trailing slash", sse("/v1/sse/"), kindSSE, false},
		{"sse by the probe", sse("/mcp"), kindSSE, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ts := c.server(t)
			p, byName := connect(t, ts, nil)
			if res := invoke(t, byName["echo"], `{"text":"hi"}`); res.IsError || res.Text != "you said\nhi" {
				t.Fatalf("call: %+v", res)
			}
			if k := kindOfProvider(p); k != c.want {
				t.Fatalf("transport %d, want %d", k, c.want)
			}
			gets, rejected := ts.gets.Load(), ts.rejected.Load()
			switch {
			case c.want == kindStreamable && gets != 0:
				t.Fatalf("a Streamable HTTP server was asked for %d event streams", gets)
			case c.want == kindSSE && gets != 1:
				t.Fatalf("%d event streams, want 1", gets)
			case c.want == kindSSE && (rejected > 0) != c.probe:
				t.Fatalf("%d POSTs answered 4xx; a probe expected: %v", rejected, c.probe)
			}
			// The server breaks the session; the next call opens one with the transport found.
			invoke(t, byName["boom"], `{}`)
			if res := invoke(t, byName["echo"], `{"text":"again"}`); res.IsError || res.Text != "you said\nagain" {
				t.Fatalf("after a broken session: %+v", res)
			}
			if c.want == kindSSE {
				if n := ts.rejected.Load(); n != rejected {
					t.Errorf("the reopened session probed again (%d more POSTs answered 4xx)", n-rejected)
				}
				if n := ts.gets.Load(); n != gets+1 {
					t.Errorf("%d event streams after reopening, want %d", n, gets+1)
				}
			} else if n := ts.gets.Load(); n != 0 {
				t.Errorf("the reopened Streamable session asked for %d event streams", n)
			}
		})
	}
}

// TestProbeFailures: a server failing the Streamable HTTP handshake with a 5xx is not asked for
// an event stream; one answering a 4xx is, as the specification says, and when that fails too
// the error gives both attempts.
func TestProbeFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status   int
		wantGets int64
		want     []string
	}{
		{http.StatusInternalServerError, 0, []string{"Internal Server Error"}},
		{http.StatusUnauthorized, 1, []string{"streamable HTTP:", "Unauthorized", "HTTP+SSE:"}},
	} {
		t.Run(http.StatusText(c.status), func(t *testing.T) {
			t.Parallel()
			var gets atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					gets.Add(1)
				}
				http.Error(w, "no", c.status)
			}))
			defer srv.Close()
			_, err := Connect(context.Background(), Options{URL: srv.URL + "/mcp", HTTPClient: &http.Client{}})
			if err == nil {
				t.Fatal("connected")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if n := gets.Load(); n != c.wantGets {
				t.Errorf("%d GETs, want %d", n, c.wantGets)
			}
		})
	}
}

// TestSSEStreamEndsWithSession: closing the provider closes the event stream; the server's
// handler of the GET returns.
func TestSSEStreamEndsWithSession(t *testing.T) {
	t.Parallel()
	ts := newSSETestServer(t, "/sse")
	p, byName := connect(t, ts, nil)
	invoke(t, byName["echo"], `{"text":"x"}`)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	within(t, ts.streams, "the server to see the stream closed")
}

// TestSSEServerEndsStream: a server (or a proxy) that ends the event stream between calls ends
// the session; the next call opens a new one instead of failing on the old.
func TestSSEServerEndsStream(t *testing.T) {
	t.Parallel()
	ts := newSSETestServer(t, "/sse")
	_, byName := connect(t, ts, nil)
	p := byName["echo"].(*tool).p
	s := currentOf(p)
	ts.CloseClientConnections()
	within(t, s.ended, "the session to end")
	if res := invoke(t, byName["echo"], `{"text":"back"}`); res.IsError || res.Text != "you said\nback" {
		t.Fatalf("after the stream ended: %+v", res)
	}
	if n := ts.gets.Load(); n != 2 {
		t.Fatalf("%d event streams, want 2", n)
	}
}

// TestSSECapIsPerEvent: the stream of one session carries far more than the cap in answers, each
// under it, without being cut.
func TestSSECapIsPerEvent(t *testing.T) {
	t.Parallel()
	ts := newSSETestServer(t, "/sse")
	_, byName := connect(t, ts, func(o *Options) { o.MaxResponseBytes = 64 << 10 })
	text := strings.Repeat("y", 16<<10)
	for i := range 8 {
		if res := invoke(t, byName["echo"], `{"text":"`+text+`"}`); res.IsError || res.Text != "you said\n"+text {
			t.Fatalf("call %d: IsError=%v, %.100q", i, res.IsError, res.Text)
		}
	}
	if n := ts.gets.Load(); n != 1 {
		t.Fatalf("%d event streams for one session", n)
	}
}

// TestSSEListOverCap: a tool list whose event is over the cap is refused with the cap's error.
// The handshake's events are about 200 bytes, the list's about 650.
func TestSSEListOverCap(t *testing.T) {
	t.Parallel()
	ts := newSSETestServer(t, "/sse")
	p, err := New(Options{URL: ts.Endpoint, HTTPClient: &http.Client{}, MaxResponseBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "larger than 512 bytes") {
		t.Fatalf("Tools: %v", err)
	}
}

// TestSSEEndlessEvent: a server whose stream sends an event that never ends is cut at the cap;
// the handshake waiting on the stream fails saying so, and the server sees the stream closed.
func TestSSEEndlessEvent(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		fmt.Fprint(w, "event: endpoint\ndata: /messages\n\ndata: ")
		chunk := strings.Repeat("x", 4<<10)
		for {
			if _, err := io.WriteString(w, chunk); err != nil || rc.Flush() != nil {
				closed <- struct{}{}
				return
			}
			if r.Context().Err() != nil {
				closed <- struct{}{}
				return
			}
		}
	}))
	defer srv.Close()
	_, err := Connect(context.Background(), Options{URL: srv.URL + "/sse", HTTPClient: &http.Client{}, MaxResponseBytes: 64 << 10})
	if err == nil || !strings.Contains(err.Error(), "larger than 65536 bytes") {
		t.Fatalf("Connect: %v", err)
	}
	within(t, closed, "the server to see the stream closed")
}

// TestSSEEndpointOnAnotherOrigin: a stream naming a message endpoint on another origin is
// refused; the headers and the handshake never reach it.
func TestSSEEndpointOnAnotherOrigin(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer elsewhere.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages\n\n", elsewhere.URL)
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	_, err := Connect(context.Background(), Options{URL: srv.URL + "/sse", HTTPClient: &http.Client{},
		Headers: http.Header{"Authorization": {"Bearer s3cret"}}})
	if err == nil || !strings.Contains(err.Error(), "not the server's origin") {
		t.Fatalf("Connect: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the other origin saw %d requests", n)
	}
}

// TestSSENetworkGuard: through the guarded client, an HTTP+SSE server on loopback is refused
// whether the URL or the probe would choose the transport, and sees no request.
func TestSSENetworkGuard(t *testing.T) {
	t.Parallel()
	guarded, err := netguard.Client(nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/sse", "/mcp"} {
		ts := newSSETestServer(t, path)
		_, err := Connect(context.Background(), Options{URL: ts.Endpoint, HTTPClient: guarded})
		if !errors.Is(err, netguard.ErrForbidden) {
			t.Errorf("%s: Connect: %v", path, err)
		}
		if n := ts.requests.Load(); n != 0 {
			t.Errorf("%s: the server saw %d requests", path, n)
		}
	}
}

// endless reads as an endless run of x.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestEventBody: the cap applies to each event, its blank line included, not to the stream; an
// event that never ends fails at the cap and sets the session's flag.
func TestEventBody(t *testing.T) {
	t.Parallel()
	read := func(r io.Reader, max int64) (string, error, bool) {
		var over atomic.Bool
		b, err := io.ReadAll(&eventBody{rc: io.NopCloser(r), max: max, blank: true, over: &over})
		return string(b), err, over.Load()
	}
	for _, nl := range []string{"\n", "\r\n"} {
		ev := "event: message" + nl + "data: " + strings.Repeat("x", 40) + nl + nl
		stream := ": ping" + nl + nl + strings.Repeat(ev, 1000)
		if got, err, over := read(strings.NewReader(stream), int64(len(ev))); err != nil || over || got != stream {
			t.Errorf("%q: events at the cap: err %v, over %v, %d of %d bytes", nl, err, over, len(got), len(stream))
		}
		if _, err, over := read(strings.NewReader(stream), int64(len(ev)-1)); err == nil || !over {
			t.Errorf("%q: events a byte over the cap: err %v, over %v", nl, err, over)
		}
	}
	got, err, over := read(io.MultiReader(strings.NewReader("data: "), endless{}), 4096)
	if err == nil || err.Error() != "mcp: response larger than 4096 bytes" || !over || len(got) > 4096 {
		t.Errorf("an endless event: err %v, over %v, %d bytes read", err, over, len(got))
	}
}
