package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Setup is global (it installs the OpenTelemetry providers), so these tests
// are not parallel.
func TestSetupAndNATSPropagation(t *testing.T) {
	shutdown, err := Setup(context.Background(), "test-service", "1.2.3")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })

	ctx, span := otel.Tracer("test").Start(context.Background(), "publish")
	defer span.End()
	h := nats.Header{}
	InjectNATS(ctx, h)
	require.NotEmpty(t, h.Get("traceparent"))

	got := trace.SpanContextFromContext(ExtractNATS(context.Background(), h))
	require.True(t, got.IsValid())
	require.Equal(t, span.SpanContext().TraceID(), got.TraceID())
	require.Equal(t, span.SpanContext().SpanID(), got.SpanID())

	// Without a trace exporter (this test sets none), a span under an
	// unsampled parent records nothing, as Resolve tells components.
	require.False(t, span.SpanContext().IsSampled())
	_, child := otel.Tracer("test").Start(ctx, "child")
	require.False(t, child.IsRecording())
	require.True(t, Resolve().UnsampledRecordsNothing)
	require.False(t, Resolve(WithProviders(sdktrace.NewTracerProvider(), nil)).UnsampledRecordsNothing,
		"a provider of the caller's own samples as it will")
}

func TestExtractNATSWithoutHeaders(t *testing.T) {
	ctx := ExtractNATS(context.Background(), nil)
	require.False(t, trace.SpanContextFromContext(ctx).IsValid())
}

func TestNewLogger(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "gateway", "warn")
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, "shown", line["msg"])
	require.Equal(t, "gateway", line["service"])
	require.NoError(t, ParseLevel("debug"))
	require.Error(t, ParseLevel("loud"))
}

func TestResolveKeepsGlobalsUnlessGiven(t *testing.T) {
	global := Resolve()
	require.Equal(t, otel.GetTracerProvider(), global.Tracer)
	require.Equal(t, otel.GetMeterProvider(), global.Meter)

	tp := sdktrace.NewTracerProvider()
	got := Resolve(WithProviders(tp, nil))
	require.Equal(t, trace.TracerProvider(tp), got.Tracer)
	require.Equal(t, otel.GetMeterProvider(), got.Meter, "a nil provider keeps the global one")
}
