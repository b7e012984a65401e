package otelx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/carrier/webhook"
	"github.com/heraldmq/herald/httpapi"
	"github.com/heraldmq/herald/otelx"
	"github.com/heraldmq/herald/store/sqlite"
)

var (
	_ herald.Tracer  = (*otelx.Tracer)(nil)
	_ httpapi.Tracer = (*otelx.Tracer)(nil)
)

// endpoint is a webhook endpoint that records the traceparent header of
// each request and answers the statuses it is given in turn, then 200.
type endpoint struct {
	mu      sync.Mutex
	parents []string // one per request, "" for none
	answers []int
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.parents = append(e.parents, r.Header.Get("traceparent"))
	status := http.StatusOK
	if len(e.answers) > 0 {
		status, e.answers = e.answers[0], e.answers[1:]
	}
	e.mu.Unlock()
	w.WriteHeader(status)
}

func (e *endpoint) received() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.parents...)
}

// rig is herald's API and engine, on SQLite, with one webhook route
// "hook" to an endpoint, traced by tracer unless it is nil.
type rig struct {
	t        *testing.T
	api      *httptest.Server
	endpoint *endpoint
	store    *sqlite.Store
	eng      *herald.Engine
}

func newRig(t *testing.T, tracer *otelx.Tracer, answers ...int) *rig {
	t.Helper()
	ep := &endpoint{answers: answers}
	hook := httptest.NewServer(ep)
	t.Cleanup(hook.Close)
	carrier, err := webhook.New(webhook.Config{URL: hook.URL})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	policy, _ := herald.ProfilePolicy(herald.ProfileChannel)
	policy.Retry = herald.RetryPolicy{Kind: herald.RetryConstant, Base: 0}
	cfg := herald.Config{Store: st, Routes: []herald.Route{{Name: "hook", Carrier: carrier, Policy: policy}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: 5 * time.Millisecond}
	api := httpapi.Config{Keys: map[string]string{"key": "acme"}}
	if tracer != nil { // a nil *otelx.Tracer in an interface is not a nil interface
		cfg.Tracer, api.Tracer = tracer, tracer
	}
	eng, err := herald.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Stop(ctx)
	})
	api.Engine = eng
	srv := httptest.NewServer(httpapi.New(api))
	t.Cleanup(srv.Close)
	return &rig{t: t, api: srv, endpoint: ep, store: st, eng: eng}
}

// send POSTs a message to the API, with traceparent when it is not "",
// and returns its id once the endpoint has delivered it.
func (r *rig) send(traceparent string) string {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.api.URL+"/v1/messages", bytes.NewBufferString(`{"route":"hook","text":"hello"}`))
	req.Header.Set("Authorization", "Bearer key")
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var view struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil || resp.StatusCode != http.StatusAccepted {
		r.t.Fatalf("POST /v1/messages: %s, %v", resp.Status, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := r.store.Get(context.Background(), view.ID)
		if err == nil && m.Status == herald.StatusDeliverySuccessful {
			return view.ID
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("message %s not delivered: %+v, %v", view.ID, m, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recorder returns a Tracer whose spans an in-memory exporter records as
// each ends.
func recorder() (*otelx.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return otelx.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))), exp
}

// spansNamed waits until exp holds n spans named name, and returns them.
func spansNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string, n int) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				got = append(got, s)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("%d spans named %q, want %d; all: %v", len(got), name, n, names(exp.GetSpans()))
			}
			return got
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// attrs returns a span's attributes as strings.
func attrs(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// checkAttrs fails t unless span has every attribute of want.
func checkAttrs(t *testing.T, what string, span tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(span)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: attribute %s = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
}

// The caller's trace: a traceparent a client sends on POST /v1/messages.
const (
	callerTrace       = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan        = "00f067aa0ba902b7"
	callerTraceparent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// TestTraceContinuesThroughHerald: a send with a caller's traceparent
// makes an API span that is the caller's span's child, and a carrier span
// that is the API span's child, in the caller's trace, carrying the
// message's id; the webhook endpoint receives the carrier span's
// traceparent, so the trace goes on there.
func TestTraceContinuesThroughHerald(t *testing.T) {
	tracer, exp := recorder()
	r := newRig(t, tracer)
	id := r.send(callerTraceparent)

	api := spansNamed(t, exp, "POST /v1/messages", 1)[0]
	send := spansNamed(t, exp, "herald.send", 1)[0]
	if got := api.SpanContext.TraceID().String(); got != callerTrace {
		t.Errorf("API span in trace %s, want the caller's %s", got, callerTrace)
	}
	if api.Parent.SpanID().String() != callerSpan || !api.Parent.IsRemote() || api.SpanKind != trace.SpanKindServer {
		t.Errorf("API span's parent %v (kind %v), want the caller's remote span %s, a server span", api.Parent, api.SpanKind, callerSpan)
	}
	checkAttrs(t, "API span", api, map[string]string{"http.request.method": "POST", "http.route": "/v1/messages",
		"http.response.status_code": "202", "herald.message.id": id, "herald.created": "true"})
	if send.SpanContext.TraceID() != api.SpanContext.TraceID() || send.Parent.SpanID() != api.SpanContext.SpanID() {
		t.Errorf("send span in trace %s under %s, want the API span's child in trace %s under %s",
			send.SpanContext.TraceID(), send.Parent.SpanID(), api.SpanContext.TraceID(), api.SpanContext.SpanID())
	}
	if send.SpanKind != trace.SpanKindClient {
		t.Errorf("send span kind %v, want client", send.SpanKind)
	}
	checkAttrs(t, "send span", send, map[string]string{"herald.message.id": id, "herald.route": "hook", "herald.lane": "hook",
		"herald.attempt": "1", "herald.outcome": "accepted", "herald.status": "DELIVERY_SUCCESSFUL"})
	want := otelx.FormatTraceParent(send.SpanContext)
	if got := r.endpoint.received(); len(got) != 1 || got[0] != want {
		t.Errorf("endpoint received traceparent %q, want the send span's %q", got, want)
	}
	if !strings.HasPrefix(want, "00-"+callerTrace+"-") {
		t.Errorf("the endpoint's traceparent %s is not in the caller's trace", want)
	}
}

// TestEveryAttemptInTheRequestsTrace: without a caller's traceparent the
// API span starts a trace; each attempt of the message, the failed one
// and its retry, is a carrier span of that trace, and each traceparent
// the endpoint receives is its own attempt's.
func TestEveryAttemptInTheRequestsTrace(t *testing.T) {
	tracer, exp := recorder()
	r := newRig(t, tracer, http.StatusInternalServerError)
	id := r.send("")

	api := spansNamed(t, exp, "POST /v1/messages", 1)[0]
	if api.Parent.IsValid() {
		t.Errorf("API span has a parent %v, want a root span", api.Parent)
	}
	sends := spansNamed(t, exp, "herald.send", 2)
	received := r.endpoint.received()
	if len(received) != 2 {
		t.Fatalf("endpoint received %d requests, want 2", len(received))
	}
	for i, want := range []map[string]string{
		{"herald.message.id": id, "herald.attempt": "1", "herald.outcome": "retry", "herald.status": "TO_RETRY"},
		{"herald.message.id": id, "herald.attempt": "2", "herald.outcome": "accepted", "herald.status": "DELIVERY_SUCCESSFUL"},
	} {
		s := sends[i]
		checkAttrs(t, "send span", s, want)
		if s.SpanContext.TraceID() != api.SpanContext.TraceID() || s.Parent.SpanID() != api.SpanContext.SpanID() {
			t.Errorf("attempt %d: span in trace %s under %s, want the API span's child", i+1, s.SpanContext.TraceID(), s.Parent.SpanID())
		}
		if got, w := received[i], otelx.FormatTraceParent(s.SpanContext); got != w {
			t.Errorf("attempt %d: endpoint received traceparent %q, want %q", i+1, got, w)
		}
	}
	if sends[0].Status.Code.String() != "Error" || !strings.Contains(sends[0].Status.Description, "500") {
		t.Errorf("failed attempt's span status %+v, want an error naming the 500", sends[0].Status)
	}
	m, err := r.store.Get(context.Background(), id)
	if err != nil || m.TraceParent != otelx.FormatTraceParent(api.SpanContext) {
		t.Errorf("stored message %+v, %v; want the API span's traceparent kept", m, err)
	}
}

// TestTracingOff: without a Tracer, a send with a traceparent records no
// span, keeps no trace context and sends the endpoint no traceparent,
// even with OpenTelemetry's global provider and propagator set (to the
// recorder and W3C's), which herald must not use.
func TestTracingOff(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	prevProvider, prevPropagator := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(prevProvider); otel.SetTextMapPropagator(prevPropagator) })
	r := newRig(t, nil)
	id := r.send(callerTraceparent)
	r.send("")
	if got := r.endpoint.received(); len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Errorf("endpoint received traceparents %q, want none", got)
	}
	if spans := exp.GetSpans(); len(spans) != 0 {
		t.Errorf("recorded %v, want nothing", names(spans))
	}
	if m, err := r.store.Get(context.Background(), id); err != nil || m.TraceParent != "" {
		t.Errorf("stored message %+v, %v; want no traceparent", m, err)
	}
}

// TestUnsampledCallerIsFollowed: a caller's traceparent that is not
// sampled records nothing, and the endpoint still gets the trace, not
// sampled, so that the caller's decision holds downstream.
func TestUnsampledCallerIsFollowed(t *testing.T) {
	tracer, exp := recorder()
	r := newRig(t, tracer)
	r.send("00-" + callerTrace + "-" + callerSpan + "-00")
	got := r.endpoint.received()
	if len(got) != 1 || !strings.HasPrefix(got[0], "00-"+callerTrace+"-") || !strings.HasSuffix(got[0], "-00") {
		t.Errorf("endpoint received %q, want the caller's trace, not sampled", got)
	}
	if spans := exp.GetSpans(); len(spans) != 0 {
		t.Errorf("recorded %v, want nothing", names(spans))
	}
}

// TestRequestSpans: every API request gets a server span named by its
// route, with its status; one that no route serves is named by its
// method alone.
func TestRequestSpans(t *testing.T) {
	tracer, exp := recorder()
	r := newRig(t, tracer)
	id := r.send("")
	for _, path := range []string{"/v1/messages/" + id, "/v1/nowhere"} {
		req, _ := http.NewRequest(http.MethodGet, r.api.URL+path, nil)
		req.Header.Set("Authorization", "Bearer key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get := spansNamed(t, exp, "GET /v1/messages/{id}", 1)[0]
	checkAttrs(t, "GET span", get, map[string]string{"http.route": "/v1/messages/{id}", "http.response.status_code": "200",
		"url.path": "/v1/messages/" + id})
	missing := spansNamed(t, exp, "GET", 1)[0]
	checkAttrs(t, "404 span", missing, map[string]string{"http.response.status_code": "404", "url.path": "/v1/nowhere"})
}

func TestEndpointURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:4318":               "http://localhost:4318/v1/traces",
		"https://collector:4318/":             "https://collector:4318/v1/traces",
		"http://collector:4318/custom/traces": "http://collector:4318/custom/traces",
	} {
		if got, err := otelx.EndpointURL(in); err != nil || got != want {
			t.Errorf("EndpointURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "localhost:4318", "grpc://collector:4317", "http://", "http://u:p@collector:4318", "http://c:4318?x=1"} {
		if got, err := otelx.EndpointURL(bad); err == nil {
			t.Errorf("EndpointURL(%q) = %q, want an error", bad, got)
		}
	}
}

// discard is an exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkCall measures what tracing adds to a carrier call: the span of
// a message with a stored traceparent, started, given its outcome and
// ended into a batch processor (whose exporter drops the batches).
func BenchmarkCall(b *testing.B) {
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	defer provider.Shutdown(context.Background())
	tracer := otelx.New(provider)
	m := &herald.Message{ID: "0198c6a4-7e1f-7b2c-9d3e-4f5a6b7c8d9e", Route: "hooks", Lane: "hooks", Attempt: 1, TraceParent: callerTraceparent}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, end := tracer.Call(ctx, herald.CallSend, m)
		end("accepted", herald.StatusDeliverySuccessful, nil)
	}
}
