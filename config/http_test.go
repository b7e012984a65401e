package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestHTTPLimits: the http: block is read with its units, every field
// left out takes its default, and impossible values are refused.
func TestHTTPLimits(t *testing.T) {
	t.Setenv("K", "k")
	base := "api_keys: [{key_env: K}]\nroutes: [{name: h, carrier: webhook, url: 'http://127.0.0.1:9/'}]\n"
	f, err := Parse([]byte(base + "http: {read_timeout: 5s, max_connections: 100, max_body_bytes_in_flight: 8MiB}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := HTTP{ReadHeaderTimeout: Duration(5 * time.Second), ReadTimeout: Duration(5 * time.Second),
		WriteTimeout: Duration(DefaultWriteTimeout), IdleTimeout: Duration(DefaultIdleTimeout), MaxConnections: 100, MaxBodyBytesInFlight: 8 << 20}
	if !reflect.DeepEqual(f.HTTP, want) {
		t.Errorf("http = %+v, want %+v", f.HTTP, want)
	}
	f, err = Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.HTTP, HTTP{}.withDefaults()) || f.HTTP.MaxBodyBytesInFlight != 64<<20 || f.HTTP.MaxConnections != 10000 {
		t.Errorf("defaults = %+v", f.HTTP)
	}
	for bad, says := range map[string]string{
		"http: {max_body_bytes_in_flight: 64 parsecs}":                     "not a size",
		"http: {max_body_bytes_in_flight: 1000}":                           "below 1MiB",
		"http: {max_connections: -1}":                                      "negative",
		"http: {read_header_timeout: 40s}":                                 "longer than http.read_timeout",
		"http: {idle_timeout: soon}":                                       "not a duration",
		"http: {max_body_bytes_in_flight: 64MiB, max_bodies_in_flight: 3}": "max_bodies_in_flight",
	} {
		if _, err := Parse([]byte(base + bad + "\n")); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %q", bad, err, says)
		}
	}
}

func TestByteSize(t *testing.T) {
	for s, want := range map[string]int64{"1048576": 1 << 20, "64MiB": 64 << 20, "10MB": 10e6, "2GiB": 2 << 30, "512KiB": 512 << 10, "7B": 7} {
		if got, err := parseByteSize(s); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", s, got, err, want)
		}
	}
	if ByteSize(64<<20).String() != "64MiB" || ByteSize(1000).String() != "1000" {
		t.Errorf("String: %s %s", ByteSize(64<<20), ByteSize(1000))
	}
}
