// Package otelx traces herald with OpenTelemetry: a server span for each
// request to the HTTP API (httpapi.Tracer) and a client span for each
// carrier call, sends, polls and queue checks (herald.Tracer), exported
// over OTLP/HTTP.
//
// A message keeps the W3C traceparent of the API request that sent it
// (herald.Message.TraceParent, kept by the store), so that the spans of
// its carrier calls, on whichever node and however late, are children of
// that request's span: a caller's trace, given in a traceparent header on
// POST /v1/messages, goes on through herald, and the webhook carrier sends
// the call's own traceparent to the endpoint. Every span of a message
// carries its id as herald.message.id.
//
// Nothing here is used unless the configuration asks for it (otel:
// endpoint): without a Tracer the engine and the API trace nothing.
package otelx

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldmq/herald"
)

// The attributes herald sets on its spans, besides the HTTP ones of the
// semantic conventions.
const (
	AttrMessageID = attribute.Key("herald.message.id")
	AttrRoute     = attribute.Key("herald.route")
	AttrLane      = attribute.Key("herald.lane")
	AttrAttempt   = attribute.Key("herald.attempt")
	AttrOutcome   = attribute.Key("herald.outcome") // what a carrier call came to
	AttrStatus    = attribute.Key("herald.status")  // the status a carrier call moved the message to
	AttrCreated   = attribute.Key("herald.created") // a send stored a new message (false: an earlier one answered)
)

// DefaultServiceName is the service.name of herald's spans unless Config
// or OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "herald"

// TracesPath is the OTLP/HTTP path added to an endpoint that has none.
const TracesPath = "/v1/traces"

// Config configures Start.
type Config struct {
	// Endpoint is the OTLP/HTTP receiver, an http or https URL; a URL
	// with no path gets TracesPath ("http://collector:4318" posts to
	// http://collector:4318/v1/traces). Required. The exporter's
	// OTEL_EXPORTER_OTLP_* variables apply too (headers, certificates,
	// timeout, compression).
	Endpoint string
	// ServiceName overrides DefaultServiceName (and OTEL_SERVICE_NAME).
	ServiceName string
	// SampleRatio is the share of new traces recorded, in (0, 1]; 0 means
	// 1. A request that continues a trace follows its caller's decision
	// (its traceparent's sampled flag), and a message's carrier calls
	// follow the request's.
	SampleRatio float64
}

// EndpointURL returns the URL spans are posted to for endpoint, or why
// endpoint will not do.
func EndpointURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL", endpoint)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute http or https URL (an OTLP/HTTP receiver, such as http://localhost:4318)", endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q: want no query, fragment or credentials (give headers in OTEL_EXPORTER_OTLP_HEADERS)", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = TracesPath
	}
	return u.String(), nil
}

// Tracer makes herald's spans. It implements herald.Tracer and
// httpapi.Tracer, and is safe for concurrent use.
type Tracer struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider // Start's, shut down by Shutdown; nil for New's
}

// Start returns a Tracer that exports its spans in batches over OTLP/HTTP
// to cfg.Endpoint. Call Shutdown to flush them before exiting.
func Start(ctx context.Context, cfg Config) (*Tracer, error) {
	endpoint, err := EndpointURL(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("otel: endpoint: %w", err)
	}
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return nil, fmt.Errorf("otel: sample_ratio %v is not within (0, 1]", cfg.SampleRatio)
	}
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("otel: exporter: %w", err)
	}
	name := cfg.ServiceName
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(semconv.ServiceName(DefaultServiceName)), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("otel: resource: %w", err)
	}
	if name != "" {
		if res, err = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(name))); err != nil {
			return nil, fmt.Errorf("otel: resource: %w", err)
		}
	}
	ratio := cfg.SampleRatio
	if ratio == 0 {
		ratio = 1
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	)
	t := New(provider)
	t.provider = provider
	return t, nil
}

// New returns a Tracer whose spans come from provider (a test's, say, with
// an in-memory exporter). Shutdown leaves provider alone.
func New(provider trace.TracerProvider) *Tracer {
	return &Tracer{tracer: provider.Tracer("github.com/heraldmq/herald")}
}

// Shutdown exports the spans not yet exported and stops the exporter of a
// Tracer made by Start; it does nothing for one made by New, or for nil.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// traceContext is the W3C Trace Context propagation.
var traceContext propagation.TraceContext

// TraceParent returns the traceparent of the span in ctx, "" when it has
// none: what a new message keeps.
func (t *Tracer) TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return FormatTraceParent(sc)
}

// FormatTraceParent returns sc as a version 00 traceparent.
func FormatTraceParent(sc trace.SpanContext) string {
	flags := "00"
	if sc.IsSampled() {
		flags = "01"
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + flags
}

// Sent records on the span in ctx (the API request's) the message that
// Engine.Send returned.
func (t *Tracer) Sent(ctx context.Context, m *herald.Message, created bool) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrMessageID.String(m.ID), AttrRoute.String(m.Route), AttrLane.String(m.Lane), AttrCreated.Bool(created))
}

// Call starts the client span of a carrier call for m, a child of the
// request that sent m when m has a TraceParent, else the root of a trace
// of its own; the carrier is called with the context returned.
func (t *Tracer) Call(ctx context.Context, op string, m *herald.Message) (context.Context, func(string, herald.Status, error)) {
	if m.TraceParent != "" {
		ctx = traceContext.Extract(ctx, traceParentCarrier(m.TraceParent))
	}
	ctx, span := t.tracer.Start(ctx, "herald."+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		AttrMessageID.String(m.ID), AttrRoute.String(m.Route), AttrLane.String(m.Lane), AttrAttempt.Int(m.Attempt)))
	return ctx, func(outcome string, to herald.Status, err error) {
		if span.IsRecording() {
			span.SetAttributes(AttrOutcome.String(outcome))
			if to != "" {
				span.SetAttributes(AttrStatus.String(string(to)))
			}
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
		}
		span.End()
	}
}

// traceParentCarrier is a stored traceparent, for Extract.
type traceParentCarrier string

func (c traceParentCarrier) Get(key string) string {
	if key == "traceparent" {
		return string(c)
	}
	return ""
}
func (traceParentCarrier) Set(string, string) {}
func (traceParentCarrier) Keys() []string     { return []string{"traceparent"} }

// StartRequest starts the server span of an API request, continuing the
// trace of its traceparent header when it has a valid one.
func (t *Tracer) StartRequest(r *http.Request) (context.Context, func(string, int)) {
	ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method := knownMethod(r.Method)
	ctx, span := t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(method), semconv.URLPath(r.URL.Path)))
	return ctx, func(pattern string, status int) {
		if span.IsRecording() {
			if route := routeOf(pattern); route != "" {
				span.SetName(method + " " + route)
				span.SetAttributes(semconv.HTTPRoute(route))
			}
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
		}
		span.End()
	}
}

// routeOf returns the path template of a ServeMux pattern ("POST
// /v1/messages/{id}/cancel" -> "/v1/messages/{id}/cancel").
func routeOf(pattern string) string {
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		return pattern[i:]
	}
	return pattern
}

// knownMethod returns method when HTTP defines it, else "_OTHER" (as the
// semantic conventions ask: a span name must not take any string a client
// sends).
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "_OTHER"
}
