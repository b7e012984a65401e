package ui

import (
	"net/http"
	"net/netip"
	"strings"
)

// proxies are the trusted proxies (Config.TrustedProxies): a request whose
// connection comes from one of them is believed about its client
// (X-Forwarded-For) and its scheme (X-Forwarded-Proto).
type proxies []netip.Prefix

// trusts reports whether a is a trusted proxy's address.
func (p proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, pre := range p {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// peer returns the address of r's connection.
func peer(r *http.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// client returns the address of r's client: its connection's, or, when
// that is a trusted proxy, the last address of X-Forwarded-For that is
// not one (the addresses before it are the client's say, which anyone
// may forge). It is r.RemoteAddr when that is no address.
func (p proxies) client(r *http.Request) string {
	a, ok := peer(r)
	if !ok {
		return r.RemoteAddr
	}
	if !p.trusts(a) {
		return a.String()
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if h = h.Unmap(); !p.trusts(h) {
			return h.String()
		}
	}
	return a.String()
}

// secure reports whether r came over TLS: to herald itself, or to a
// trusted proxy that says so with X-Forwarded-Proto: https.
func (p proxies) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	a, ok := peer(r)
	return ok && p.trusts(a) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// throttleAddr is the key under which a client address's failed logins
// count: the address, or for IPv6 its /64, which one host usually holds
// whole.
func throttleAddr(client string) string {
	a, err := netip.ParseAddr(client)
	if err != nil || a.Is4() {
		return client
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}
