package config

import (
	"fmt"
	"time"
)

// Defaults of the http: block.
const (
	// DefaultReadHeaderTimeout bounds the arrival of a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the arrival of a whole request, body included.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds the writing of an answer, from the end of
	// its request's headers.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection that sends nothing.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxConnections caps the connections open at once.
	DefaultMaxConnections = 10000
	// DefaultMaxBodyBytesInFlight bounds the request bodies held at once.
	DefaultMaxBodyBytesInFlight = 64 << 20
)

// HTTP holds the HTTP server's limits: how long a client may take, how
// many connections it may hold and how many body bytes are held in memory
// at once. Every field defaults when absent or 0 (see withDefaults).
type HTTP struct {
	// ReadHeaderTimeout bounds the arrival of a request's headers; it
	// defaults to DefaultReadHeaderTimeout, or ReadTimeout when shorter.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds the arrival of a whole request, body included.
	ReadTimeout Duration `yaml:"read_timeout"`
	// WriteTimeout bounds the handling and writing of an answer.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes a keep-alive connection idle for that long.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxConnections caps the connections open at once; further clients
	// wait in the kernel's backlog until one closes.
	MaxConnections int `yaml:"max_connections"`
	// MaxBodyBytesInFlight bounds the request bodies held in memory at
	// once, across requests; a request beyond it is answered 503.
	MaxBodyBytesInFlight ByteSize `yaml:"max_body_bytes_in_flight"`

	// TrustedProxies are the networks (CIDR, or single addresses) of the
	// proxies in front of herald, which it believes about a request's
	// client (X-Forwarded-For) and its scheme (X-Forwarded-Proto): see
	// File.TrustedProxies.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// withDefaults returns h with every field left 0 set to its default.
func (h HTTP) withDefaults() HTTP {
	def := func(d *Duration, v time.Duration) {
		if *d == 0 {
			*d = Duration(v)
		}
	}
	def(&h.ReadTimeout, DefaultReadTimeout)
	def(&h.ReadHeaderTimeout, min(DefaultReadHeaderTimeout, h.ReadTimeout.D()))
	def(&h.WriteTimeout, DefaultWriteTimeout)
	def(&h.IdleTimeout, DefaultIdleTimeout)
	if h.MaxConnections == 0 {
		h.MaxConnections = DefaultMaxConnections
	}
	if h.MaxBodyBytesInFlight == 0 {
		h.MaxBodyBytesInFlight = DefaultMaxBodyBytesInFlight
	}
	return h
}

// minBodyBytesInFlight is the least max_body_bytes_in_flight: one request
// of the largest body (1 MiB) must fit.
const minBodyBytesInFlight = 1 << 20

func (h HTTP) validate() []error {
	var errs []error
	if h.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("http.max_connections %d is negative", h.MaxConnections))
	}
	if h.MaxBodyBytesInFlight != 0 && h.MaxBodyBytesInFlight < minBodyBytesInFlight {
		errs = append(errs, fmt.Errorf("http.max_body_bytes_in_flight %s is below 1MiB, the largest body one request may have", h.MaxBodyBytesInFlight))
	}
	if h.ReadHeaderTimeout != 0 && h.ReadTimeout != 0 && h.ReadHeaderTimeout > h.ReadTimeout {
		errs = append(errs, fmt.Errorf("http.read_header_timeout %s is longer than http.read_timeout %s", h.ReadHeaderTimeout, h.ReadTimeout))
	}
	return errs
}
