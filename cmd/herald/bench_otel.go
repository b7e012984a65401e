package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/heraldmq/herald/bench"
	"github.com/heraldmq/herald/otelx"
)

// benchOTel is herald bench's --otel: the OTLP/HTTP endpoint to trace the
// workloads to, "" for no tracing.
var benchOTel string

// traceBench makes the workloads' engines (W1–W7, in this process) trace
// as herald serve does with otel: endpoint, exporting in batches over
// OTLP/HTTP, and returns what stops it: it flushes the spans, then says
// on standard error how many were exported.
func traceBench(cmd *cobra.Command, endpoint string) (stop func(), err error) {
	url, err := otelx.EndpointURL(endpoint)
	if err != nil {
		return nil, fmt.Errorf("--otel: %w", err)
	}
	exp, err := otlptracehttp.New(cmd.Context(), otlptracehttp.WithEndpointURL(url))
	if err != nil {
		return nil, fmt.Errorf("--otel: %w", err)
	}
	counted := &countingExporter{SpanExporter: exp}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(counted),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("herald-bench"))))
	bench.Tracer = benchTracer{otelx.New(provider)}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := provider.Shutdown(ctx)
		fmt.Fprintf(cmd.ErrOrStderr(), "otel: %d spans exported in %d batches (%d failed), shutdown: %v\n",
			counted.spans.Load(), counted.batches.Load(), counted.failed.Load(), err)
	}, nil
}

// benchTracer is herald's tracer, except that a message sent with no
// trace (the workloads call Engine.Send, not the API) gets a traceparent
// of its own, sampled, as if an API request had sent it: the carrier
// calls then read it and continue its trace, as they would in service.
type benchTracer struct{ *otelx.Tracer }

func (t benchTracer) TraceParent(ctx context.Context) string {
	if p := t.Tracer.TraceParent(ctx); p != "" {
		return p
	}
	var id [24]byte
	rand.Read(id[:])
	return "00-" + hex.EncodeToString(id[:16]) + "-" + hex.EncodeToString(id[16:]) + "-01"
}

// countingExporter counts what it exports.
type countingExporter struct {
	sdktrace.SpanExporter
	spans, batches, failed atomic.Int64
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	c.batches.Add(1)
	if err != nil {
		c.failed.Add(1)
	} else {
		c.spans.Add(int64(len(spans)))
	}
	return err
}
