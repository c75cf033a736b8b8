package netguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestForbiddenAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1":        true,
		"127.1.2.3":        true,
		"10.0.0.1":         true,
		"172.16.0.1":       true,
		"172.31.255.255":   true,
		"192.168.1.1":      true,
		"169.254.169.254":  true, // cloud metadata
		"0.0.0.0":          true,
		"0.1.2.3":          true,
		"100.64.0.1":       true,
		"255.255.255.255":  true,
		"224.0.0.1":        true,
		"::1":              true,
		"::":               true,
		"fe80::1":          true,
		"fe80::1%eth0":     true,
		"fc00::1":          true,
		"fd12:3456::1":     true,
		"fec0::1":          true,
		"ff02::1":          true,
		"::ffff:127.0.0.1": true,
		"::ffff:10.0.0.1":  true,
		"8.8.8.8":          false,
		"172.32.0.1":       false,
		"100.128.0.1":      false,
		"93.184.216.34":    false,
		"2606:4700::1111":  false,
		"::ffff:8.8.8.8":   false,
	} {
		if got := Forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Forbidden(%s) = %v, want %v", addr, got, want)
		}
	}
	if !Forbidden(netip.Addr{}) {
		t.Error("the zero Addr must be forbidden")
	}
}

func TestGuardControl(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		address string
		ok      bool
	}{
		{"8.8.8.8:443", true},
		{"[2606:4700::1111]:80", true},
		{"127.0.0.1:80", false},
		{"[::1]:80", false},
		{"localhost:80", false}, // never a name at dial time; refuse anyway
	} {
		err := control("tcp", tc.address, nil)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrForbidden)) {
			t.Errorf("control(%s) = %v, want ok=%v", tc.address, err, tc.ok)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestClientRefusesLoopback runs the guarded client against a server on 127.0.0.1: the literal
// address and a name resolving to it are refused at dial time, and the server never sees a
// request; with allowPrivate the same request gets through.
func TestClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Client(nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{srv.URL + "/a", "http://localhost:" + u.Port() + "/a"} {
		resp, err := c.Get(raw)
		if err == nil {
			_ = resp.Body.Close()
		}
		if !errors.Is(err, ErrForbidden) {
			t.Errorf("Get(%s) err = %v, want ErrForbidden", raw, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("server saw %d requests, want 0", hits.Load())
	}
	open, err := Client(nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := open.Get(srv.URL + "/a")
	if err != nil {
		t.Fatalf("allowPrivate: %v", err)
	}
	_ = resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("server saw %d requests, want 1", hits.Load())
	}
}

func TestClient(t *testing.T) {
	t.Parallel()
	custom := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("unused")
	})}
	if _, err := Client(custom, false, nil); err == nil || !strings.Contains(err.Error(), "network guard") {
		t.Errorf("Client(custom transport) err = %v, want one about the network guard", err)
	}
	if c, err := Client(custom, true, nil); err != nil || c.Transport == nil {
		t.Errorf("Client(custom, allowPrivate) = %v, %v; want the transport as is", c, err)
	}
	base := &http.Transport{Proxy: http.ProxyFromEnvironment}
	redirect := func(*http.Request, []*http.Request) error { return errors.New("no") }
	c, err := Client(&http.Client{Transport: base}, false, redirect)
	if err != nil {
		t.Fatal(err)
	}
	if base.DialContext != nil || base.Proxy == nil {
		t.Error("Client modified the caller's transport")
	}
	if tr, ok := c.Transport.(*http.Transport); !ok || tr.Proxy != nil || tr.DialContext == nil {
		t.Errorf("guarded transport = %#v, want a direct, guarded dialer", c.Transport)
	}
	if c.CheckRedirect == nil {
		t.Error("checkRedirect not installed")
	}
}

// TestClientAllowing lets through only the addresses of the allowed prefixes: 127.0.0.1/32 opens
// the loopback server, a prefix elsewhere (10.0.0.0/8) leaves it refused.
func TestClientAllowing(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		allowed []netip.Prefix
		ok      bool
	}{
		{[]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, true},
		{[]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, false},
		{nil, false},
	} {
		c, err := ClientAllowing(nil, tc.allowed, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(srv.URL)
		if err == nil {
			_ = resp.Body.Close()
		}
		if tc.ok && err != nil {
			t.Errorf("allowed %v: %v", tc.allowed, err)
		}
		if !tc.ok && !errors.Is(err, ErrForbidden) {
			t.Errorf("allowed %v: err = %v, want ErrForbidden", tc.allowed, err)
		}
	}
}
