package httpsend

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Egress is the policy of the connections herald makes to URLs that
// tenants supply (push subscriptions): an address in one of the refused
// ranges (loopback, link-local, private, multicast and the other
// special-purpose ranges of RefusedRanges) is refused unless one of the
// allowed prefixes holds it. The check is made on the address a connection
// is about to be made to, after DNS resolution, so a name that resolves
// inside is refused as a literal address is. The zero Egress allows no
// refused range.
type Egress struct {
	// Allow lists the networks that may be reached although a refused
	// range holds them (the config's egress.allow).
	Allow []netip.Prefix
	// OnRefuse, when set, is told of every address refused (a log line
	// and a metric); it must not block.
	OnRefuse func(addr netip.Addr, kind string)
}

// RefusedRange is a range of addresses Egress refuses by default.
type RefusedRange struct {
	Prefix netip.Prefix
	// Kind names the range in errors: loopback, private, ...
	Kind string
}

// RefusedRanges are the ranges Egress refuses unless allowed. An IPv4
// address mapped into IPv6 (::ffff:a.b.c.d) is judged as the IPv4 address.
var RefusedRanges = []RefusedRange{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this host)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified (this host)"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 (an IPv4 address behind a translator)"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("fc00::/7"), "private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// RefusedError is the error of an address the egress policy refuses.
type RefusedError struct {
	Addr netip.Addr
	// Kind is the refused range's: loopback, private, ...
	Kind string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("address %s is %s: refused by the egress policy (an operator may allow it in egress.allow)", e.Addr, e.Kind)
}

// CheckAddr returns a *RefusedError when the policy refuses a, and nil
// when it may be reached.
func (e *Egress) CheckAddr(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	for _, p := range e.Allow {
		if p.Contains(a) {
			return nil
		}
	}
	for _, r := range RefusedRanges {
		if r.Prefix.Contains(a) {
			if e.OnRefuse != nil {
				e.OnRefuse(a, r.Kind)
			}
			return &RefusedError{Addr: a, Kind: r.Kind}
		}
	}
	return nil
}

// CheckURL returns a *RefusedError when raw's host is an address that the
// policy refuses. A name is not resolved here: the connection is checked
// when it is made. A URL that does not parse is left to whoever parses it.
func (e *Egress) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil // a name
	}
	return e.CheckAddr(a)
}

// control is the dialer's hook: it runs once the address of each
// connection is known, before connecting.
func (e *Egress) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress policy: address %q: %w", address, err)
	}
	return e.CheckAddr(ap.Addr())
}

// Client returns a client as NewClient's whose every connection keeps to
// the policy. It uses no proxy: the address checked must be the one
// reached.
func (e *Egress) Client() *http.Client {
	c := NewClient()
	t := c.Transport.(*http.Transport)
	t.Proxy = nil
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: e.control}
	t.DialContext = d.DialContext
	return c
}

// refused reports whether err is, or wraps, the policy's refusal.
func refused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}
