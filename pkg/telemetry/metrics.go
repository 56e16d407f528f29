package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Metrics is a meter provider whose instruments are also served in the
// Prometheus text format, for a scrape of the admin listener's /metrics,
// beside whatever other readers (OTLP) it has.
type Metrics struct {
	Provider *sdkmetric.MeterProvider
	// Handler serves the provider's instruments in the Prometheus format.
	Handler http.Handler
}

// NewMetrics returns the meter provider of service: its instruments are
// read by a Prometheus exporter of their own registry (so that several
// in one process, as in tests, do not mix) and by readers. Metric names
// follow the exporter's default translation: dots become underscores, the
// unit and a counter's _total are appended (sundial.dispatcher.lateness in
// seconds is sundial_dispatcher_lateness_seconds). The instrumentation
// scope is left out of the labels: every Sundial metric name already says
// which service made it. The scrape also serves the Go runtime's and the
// process's own metrics (go_*, process_*: heap, GC, goroutines, resident
// memory, open files), which memory limits and leaks are read from; they
// go to Prometheus only, not to the OTLP readers.
func NewMetrics(service, version string, readers ...sdkmetric.Reader) (Metrics, error) {
	res, err := serviceResource(service, version)
	if err != nil {
		return Metrics{}, err
	}
	return newMetrics(res, readers...)
}

func newMetrics(res *resource.Resource, readers ...sdkmetric.Reader) (Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return Metrics{}, fmt.Errorf("prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(exp)}
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	return Metrics{
		Provider: sdkmetric.NewMeterProvider(opts...),
		Handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

// serviceResource names the service in every span and metric. Schemaless,
// so the attributes merge with the SDK's defaults whatever
// semantic-convention version the SDK was built with.
func serviceResource(service, version string) (*resource.Resource, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(service), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}

// globalMetrics is the Prometheus handler of the meter provider Setup
// installed; Resolve hands it out with the global providers.
var globalMetrics atomic.Pointer[http.Handler]

// noMetrics answers a scrape of a process whose metrics Setup did not
// install (an app booted in a test without WithMetrics).
var noMetrics http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "metrics are not set up in this process", http.StatusNotFound)
})

func resolveMetricsHandler() http.Handler {
	if h := globalMetrics.Load(); h != nil {
		return *h
	}
	return noMetrics
}

// Counter creates a counter without labels and records 0 on it, so that it
// is exported from the start: a counter that first appears with its first
// increment hides that increment from increase() and rate(), and an alert
// on a failure counter would miss the first failure.
func Counter(meter metric.Meter, name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c, err := meter.Int64Counter(name, opts...)
	if err != nil {
		return nil, err
	}
	c.Add(context.Background(), 0)
	return c, nil
}
