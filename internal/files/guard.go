package files

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Dialer settings of the guarded transport, as in http.DefaultTransport.
const (
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
)

// newClient returns the client remote fetches use: a copy of base (or of
// a zero client), with checkRedirect and, unless allowPrivate, a transport
// whose dialer refuses internal addresses. See [Options.HTTPClient].
func newClient(base *http.Client, allowPrivate bool) *http.Client {
	var c http.Client
	if base != nil {
		c = *base
	}
	c.CheckRedirect = checkRedirect
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if allowPrivate {
		c.Transport = rt
		return &c
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		panic(fmt.Sprintf("files: Options.HTTPClient.Transport is a %T, not an *http.Transport: the network guard cannot be installed (set AllowPrivateNetworks to use it as is)", rt))
	}
	t = t.Clone()
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive, Control: guardControl}
	t.DialContext = d.DialContext
	// Custom TLS dialers would bypass DialContext; https then dials
	// through it and does the handshake itself.
	t.DialTLSContext = nil
	t.DialTLS = nil //nolint:staticcheck // cleared because a caller may have set it
	// Through a proxy the guard would see the proxy's address, not the
	// file server's, so guarded fetches connect directly.
	t.Proxy = nil
	c.Transport = t
	return &c
}

// guardControl is the guarded dialer's Control hook. It runs for every
// connection attempt, after DNS resolution, with the IP address about to
// be connected to, so neither a host name that resolves to an internal
// address nor one whose DNS answer changes between a check and the
// connection (DNS rebinding) gets through.
func guardControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check %s address %q", ErrRemoteForbidden, network, address)
	}
	if forbiddenAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrRemoteForbidden, ap.Addr())
	}
	return nil
}

// extraForbidden are internal ranges netip has no predicate for.
var extraForbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network" (RFC 791); 0.x reaches the local host on Linux
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space / CGNAT (RFC 6598), e.g. some cloud metadata
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast
	netip.MustParsePrefix("fec0::/10"),          // deprecated IPv6 site-local (RFC 3879), still routed by some stacks
}

// forbiddenAddr reports whether a remote fetch must not connect to a:
// loopback, private (RFC 1918, fc00::/7), link-local, unspecified,
// multicast, and the ranges in extraForbidden. IPv4-mapped IPv6 addresses
// are judged as the IPv4 address they carry.
func forbiddenAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsUnspecified() || a.IsMulticast() {
		return true
	}
	for _, p := range extraForbidden {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
