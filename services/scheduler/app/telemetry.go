package app

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option changes how NewWith builds an App.
type Option func(*options)

type options struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTelemetry makes the app's spans and metrics with tp and mp instead of
// the global providers that telemetry.Setup installs; tests pass recording
// ones. A nil provider keeps the global one.
func WithTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tp = tp
		}
		if mp != nil {
			o.mp = mp
		}
	}
}

func newOptions(opts []Option) options {
	o := options{tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
