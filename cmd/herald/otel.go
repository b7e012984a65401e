package main

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel"

	"github.com/heraldmq/herald/config"
	"github.com/heraldmq/herald/otelx"
)

// startTracing starts exporting OpenTelemetry traces when the config has
// an otel section, and returns nil otherwise: nothing is traced. The
// exporter's failures (a collector down) are logged as warnings.
func startTracing(ctx context.Context, f *config.File, log *slog.Logger) (*otelx.Tracer, error) {
	if f.OTel == nil {
		return nil, nil
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "err", err) }))
	t, err := otelx.Start(ctx, otelx.Config{Endpoint: f.OTel.Endpoint, ServiceName: f.OTel.ServiceName, SampleRatio: f.OTel.SampleRatio})
	if err != nil {
		return nil, err
	}
	log.Info("tracing", "otlp", f.OTel.Endpoint)
	return t, nil
}
