package webhook

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldmq/herald"
)

// TestTraceparent: a send within a span (the engine's carrier call, when
// traced) carries the span's traceparent, over a configured one; a send
// without a span carries none but the configured one.
func TestTraceparent(t *testing.T) {
	s, got := server(t, func(w http.ResponseWriter, r *http.Request) {})
	cr := newCarrier(t, Config{URL: s.URL})
	configured := newCarrier(t, Config{URL: s.URL, Headers: map[string]string{"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}})
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	traced := trace.ContextWithSpanContext(context.Background(), sc)
	m := &herald.Message{ID: "m1", Text: "hi", Attempt: 1}
	for _, send := range []struct {
		c   *Carrier
		ctx context.Context
	}{{cr, traced}, {cr, context.Background()}, {configured, traced}, {configured, context.Background()}} {
		if _, err := send.c.Send(send.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	const span = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for i, want := range []string{span, "", span, "00-11111111111111111111111111111111-2222222222222222-01"} {
		if g := got()[i].header.Get("traceparent"); g != want {
			t.Errorf("send %d: traceparent %q, want %q", i, g, want)
		}
	}
}
