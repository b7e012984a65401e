package bench

import "github.com/heraldmq/herald"

// Tracer, when set, traces the workloads' engines (herald bench --otel),
// to measure what tracing costs; nil, the default, traces nothing.
var Tracer herald.Tracer
