// Package netguard builds HTTP clients that refuse to connect to internal addresses: loopback,
// private, link-local, multicast and similar ranges, so that a URL a user or a model supplies
// cannot reach the server's own network (SSRF). The check runs in the dialer, after DNS
// resolution, on the address actually connected to, so neither a host name resolving to an
// internal address nor a DNS answer that changes between a check and the connection gets through.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrForbidden: the guard refused to connect to an internal address. Callers translate it into
// their own error (the files service into files.ErrRemoteForbidden).
var ErrForbidden = errors.New("netguard: address forbidden")

// Dialer settings of the guarded transport, as in http.DefaultTransport.
const (
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
)

// Client returns a copy of base (or of a zero client) with checkRedirect as its CheckRedirect
// (nil keeps base's) and, unless allowPrivate, a transport whose dialer refuses internal
// addresses with an error wrapping [ErrForbidden]. The guarded transport is a clone of base's
// *http.Transport (http.DefaultTransport when base has none) that connects directly, never
// through a proxy: through a proxy the guard would see the proxy's address. base's transport is
// not changed. An error means base's transport is not an *http.Transport, so the guard cannot be
// installed; with allowPrivate the transport is used as is.
func Client(base *http.Client, allowPrivate bool, checkRedirect func(*http.Request, []*http.Request) error) (*http.Client, error) {
	return client(base, allowPrivate, nil, checkRedirect)
}

// ClientAllowing is [Client] with the guard on, except for the addresses in allowed: an operator
// lets tools reach a few internal networks (an intranet API, a local MCP server) without opening
// all of them. No prefixes is Client with the guard on.
func ClientAllowing(base *http.Client, allowed []netip.Prefix, checkRedirect func(*http.Request, []*http.Request) error) (*http.Client, error) {
	return client(base, false, allowed, checkRedirect)
}

// allows reports whether a is in one of the prefixes.
func allows(prefixes []netip.Prefix, a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func client(base *http.Client, allowPrivate bool, allowed []netip.Prefix, checkRedirect func(*http.Request, []*http.Request) error) (*http.Client, error) {
	var c http.Client
	if base != nil {
		c = *base
	}
	if checkRedirect != nil {
		c.CheckRedirect = checkRedirect
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if allowPrivate {
		c.Transport = rt
		return &c, nil
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("netguard: the transport is a %T, not an *http.Transport: the network guard cannot be installed", rt)
	}
	t = t.Clone()
	ctl := control
	if len(allowed) > 0 {
		ctl = func(network, address string, c syscall.RawConn) error {
			if ap, err := netip.ParseAddrPort(address); err == nil && allows(allowed, ap.Addr()) {
				return nil
			}
			return control(network, address, c)
		}
	}
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive, Control: ctl}
	t.DialContext = d.DialContext
	// Custom TLS dialers would bypass DialContext; https then dials
	// through it and does the handshake itself.
	t.DialTLSContext = nil
	t.DialTLS = nil //nolint:staticcheck // cleared because a caller may have set it
	t.Proxy = nil
	c.Transport = t
	return &c, nil
}

// control is the guarded dialer's Control hook. It runs for every connection attempt, after DNS
// resolution, with the IP address about to be connected to.
func control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check %s address %q", ErrForbidden, network, address)
	}
	if Forbidden(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrForbidden, ap.Addr())
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

// Forbidden reports whether the guard refuses to connect to a: loopback, private (RFC 1918,
// fc00::/7), link-local, unspecified, multicast, and a few more internal ranges. IPv4-mapped IPv6
// addresses are judged as the IPv4 address they carry; the zero Addr is forbidden.
func Forbidden(a netip.Addr) bool {
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
