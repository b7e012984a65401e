package config

import (
	"fmt"
	"net/url"
)

// OTel turns on OpenTelemetry tracing: a span for every API request and
// every carrier call, exported over OTLP/HTTP (see package otelx).
type OTel struct {
	// Endpoint is the OTLP/HTTP receiver: http(s)://HOST:PORT, to which
	// /v1/traces is added when it has no path. Required.
	Endpoint string `yaml:"endpoint"`
	// ServiceName is the service.name of the spans; defaults to "herald"
	// (or OTEL_SERVICE_NAME).
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the share of new traces recorded, in (0, 1]; 0 or
	// absent records them all. A request that continues a caller's trace
	// follows the caller's sampling decision.
	SampleRatio float64 `yaml:"sample_ratio"`
}

// validate reports what is wrong with the otel section.
func (o *OTel) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("otel: "+format, args...)) }
	if o.Endpoint == "" {
		bad("endpoint is required (an OTLP/HTTP receiver, such as http://localhost:4318)")
	} else if err := checkHTTPURL(o.Endpoint); err != nil {
		bad("endpoint: %v", err)
	} else if u, _ := url.Parse(o.Endpoint); u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		bad("endpoint: %q: want no query, fragment or credentials (give headers in OTEL_EXPORTER_OTLP_HEADERS)", o.Endpoint)
	}
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		bad("sample_ratio %v is not within (0, 1]", o.SampleRatio)
	}
	return errs
}
