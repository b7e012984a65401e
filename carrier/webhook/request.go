package webhook

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/propagation"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/stdwebhook"
)

// The content types of a message's body.
const (
	ContentTypePayload = "application/octet-stream"
	ContentTypeText    = "text/plain; charset=utf-8"
)

// request builds the POST for m: default Content-Type, then the configured
// headers, then the carrier's own headers, which no configured header
// overrides, then extra (SendWithHeaders); among the carrier's own the W3C
// traceparent of the span in ctx, the engine's carrier call, when it is
// traced (herald.Tracer).
func (c *Carrier) request(ctx context.Context, m *herald.Message, extra http.Header) (*http.Request, error) {
	body, ctype := m.Payload, ContentTypePayload
	if len(body) == 0 {
		body, ctype = []byte(m.Text), ContentTypeText
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook: build request: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", ctype)
	h.Set("User-Agent", "herald-webhook")
	for k, vs := range c.headers {
		if k == "Host" {
			req.Host = vs[0]
			continue
		}
		h[k] = vs
	}
	h.Set("Idempotency-Key", m.ID)
	h.Set("X-Herald-Message-Id", m.ID)
	h.Set("X-Herald-Attempt", strconv.Itoa(m.Attempt))
	if m.Target != "" {
		h.Set("X-Herald-Target", m.Target)
	}
	if m.CorrelationID != "" {
		h.Set("X-Herald-Correlation-Id", m.CorrelationID)
	}
	traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	for k, vs := range extra {
		h[k] = vs
	}
	if len(c.secret) > 0 {
		stdwebhook.SetHeaders(h, c.secret, m.ID, c.now(), body)
	}
	return req, nil
}

// traceContext writes the span of a context as traceparent and tracestate
// headers, and nothing when the context has no span (tracing is off).
var traceContext propagation.TraceContext
