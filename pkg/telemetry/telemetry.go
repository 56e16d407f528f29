// Package telemetry sets up what every Sundial service reports about itself:
// structured logs (log/slog, JSON), OpenTelemetry traces and metrics, and the
// trace context carried across NATS in message headers.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NewLogger returns a JSON logger to w tagged with the service name. level
// is debug, info, warn or error (default info).
func NewLogger(w io.Writer, service, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("service", service)
}

// ParseLevel checks a log level name; Config.Validate uses it.
func ParseLevel(level string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	return nil
}

// Shutdown flushes and stops what Setup started.
type Shutdown func(context.Context) error

// Setup installs the global tracer and meter providers and the W3C trace
// context propagator. The meter provider's instruments are also served in
// the Prometheus format by the handler Resolve returns (NewMetrics). Traces and metrics are exported by OTLP over HTTP when
// the standard OTEL_EXPORTER_OTLP_ENDPOINT (or the per-signal variants) is
// set. Without a trace exporter, a trace this service starts is not
// sampled: its spans carry ids, so the trace context still flows between
// services, but they record nothing (recording spans that go nowhere cost
// a visible share of the CPU of a delivery); a span whose parent, from
// another service, is sampled is recorded as usual.
func Setup(ctx context.Context, service, version string) (Shutdown, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	res, err := serviceResource(service, version)
	if err != nil {
		return nil, err
	}
	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	var metricReaders []sdkmetric.Reader
	if exporting("TRACES") {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("trace exporter: %w", err)
		}
		traceOpts = append(traceOpts, sdktrace.WithBatcher(exp))
	} else {
		traceOpts = append(traceOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	}
	unsampledRecordsNothing.Store(!exporting("TRACES"))
	if exporting("METRICS") {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("metric exporter: %w", err)
		}
		metricReaders = append(metricReaders, sdkmetric.NewPeriodicReader(exp))
	}
	metrics, err := newMetrics(res, metricReaders...)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(traceOpts...)
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(metrics.Provider)
	globalMetrics.Store(&metrics.Handler)
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), metrics.Provider.Shutdown(ctx))
	}, nil
}

// unsampledRecordsNothing is whether Setup's tracer records spans only
// under a sampled parent (Providers.UnsampledRecordsNothing).
var unsampledRecordsNothing atomic.Bool

func exporting(signal string) bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_"+strings.ToUpper(signal)+"_ENDPOINT") != ""
}

// natsCarrier adapts NATS headers to the propagator. NATS header names are
// case-sensitive, so the keys are kept exactly as the W3C names them
// ("traceparent", "tracestate", "baggage"), which is what consumers in other
// languages look up.
type natsCarrier nats.Header

func (c natsCarrier) Get(key string) string { return nats.Header(c).Get(key) }

func (c natsCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }

func (c natsCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// InjectNATS writes the trace context of ctx into NATS message headers.
func InjectNATS(ctx context.Context, h nats.Header) {
	otel.GetTextMapPropagator().Inject(ctx, natsCarrier(h))
}

// ExtractNATS returns ctx carrying the trace context found in h.
func ExtractNATS(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, natsCarrier(h))
}

// InjectMap returns the trace context of ctx as a map (W3C names as keys),
// for a trace context carried inside a message rather than in its headers;
// nil when ctx has none.
func InjectMap(ctx context.Context) map[string]string {
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	return c
}

// ExtractMap returns ctx carrying the trace context found in m.
func ExtractMap(ctx context.Context, m map[string]string) context.Context {
	if len(m) == 0 {
		return ctx
	}
	return otel.GetTextMapPropagator().Extract(ctx, propagation.MapCarrier(m))
}
