package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// Egress is the policy of the connections herald makes to URLs that
// tenants supply (push subscriptions): loopback, link-local, private and
// multicast addresses, and the other special-purpose ranges, are refused
// unless Allow holds them. Operator-configured URLs (routes, subscribers)
// are not restricted.
type Egress struct {
	// Allow lists the networks (CIDR, such as 10.20.0.0/16, or single
	// addresses) that may be reached although their range is refused.
	Allow []string `yaml:"allow"`
}

// AllowedPrefixes returns egress.allow parsed; a single address is a
// prefix of its full length.
func (f *File) AllowedPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(f.Egress.Allow))
	for i, s := range f.Egress.Allow {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("egress.allow[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// TrustedProxies returns http.trusted_proxies parsed: the admin page
// believes a request from one of them about its client's address (for its
// throttle of failed logins and its logs) and about TLS (its cookie is
// Secure behind X-Forwarded-Proto: https).
func (f *File) TrustedProxies() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(f.HTTP.TrustedProxies))
	for i, s := range f.HTTP.TrustedProxies {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("http.trusted_proxies[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePrefix reads a CIDR prefix or a single address, in canonical form.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix such as 10.20.0.0/16", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither an address nor a CIDR prefix such as 10.20.0.0/16", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}
