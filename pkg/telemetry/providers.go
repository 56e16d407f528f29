package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Providers are the OpenTelemetry providers a component makes its spans and
// metrics with.
type Providers struct {
	Tracer trace.TracerProvider
	// UnsampledRecordsNothing says that Tracer records a span only under a
	// sampled parent: Setup's tracer without a trace exporter. A component
	// may then leave out a span whose parent is not sampled, which would
	// record nothing and only carry new ids (the parent's trace context
	// still flows on). A provider given by WithProviders makes it false.
	UnsampledRecordsNothing bool
	Meter                   metric.MeterProvider
	// Metrics serves Meter's instruments in the Prometheus text format.
	Metrics http.Handler
}

// Option overrides the providers a component uses; tests pass recording ones.
type Option func(*Providers)

// WithProviders uses tp and mp instead of the global providers that Setup
// installs. A nil provider keeps the global one.
func WithProviders(tp trace.TracerProvider, mp metric.MeterProvider) Option {
	return func(p *Providers) {
		if tp != nil {
			p.Tracer = tp
			p.UnsampledRecordsNothing = false
		}
		if mp != nil {
			// Its instruments are not those of the global handler.
			p.Meter, p.Metrics = mp, noMetrics
		}
	}
}

// Unrecorded reports whether a span started under ctx would record
// nothing, for a tracer of which unsampledRecordsNothing holds
// (Providers.UnsampledRecordsNothing): ctx's span is not sampled. A
// component then starts none, and ctx's trace context flows on as it is.
func Unrecorded(ctx context.Context, unsampledRecordsNothing bool) bool {
	return unsampledRecordsNothing && !trace.SpanContextFromContext(ctx).IsSampled()
}

// Using uses p as it is: a component hands the providers it resolved on
// to the parts it makes, UnsampledRecordsNothing included.
func Using(p Providers) Option {
	return func(q *Providers) { *q = p }
}

// WithMetrics uses m's meter provider, and serves its instruments on
// /metrics, instead of the global ones.
func WithMetrics(m Metrics) Option {
	return func(p *Providers) {
		p.Meter = m.Provider
		p.Metrics = m.Handler
	}
}

// Resolve returns the global providers with opts applied.
func Resolve(opts ...Option) Providers {
	p := Providers{
		Tracer: otel.GetTracerProvider(), UnsampledRecordsNothing: unsampledRecordsNothing.Load(),
		Meter: otel.GetMeterProvider(), Metrics: resolveMetricsHandler(),
	}
	for _, opt := range opts {
		opt(&p)
	}
	return p
}
