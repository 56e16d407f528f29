package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-run/sundial/pkg/envconf"
	"github.com/sundial-run/sundial/pkg/telemetry"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
)

// The services install the W3C propagator in telemetry.Setup; the tests
// install the same one once, before any test runs.
func init() { otel.SetTextMapPropagator(propagation.TraceContext{}) }

// TestDeliveryIsOneTrace follows one hook through the real scheduler and
// dispatcher, each with its own recording providers, and checks that the
// spans they made form one trace from the claim to the applied result.
func TestDeliveryIsOneTrace(t *testing.T) {
	t.Parallel()
	b := setup(t, options{without: map[string]bool{"scheduler": true, "dispatcher": true}})
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	b.startTraced(t, "scheduler", tp, mp)
	b.startTraced(t, "dispatcher", tp, mp)

	created := b.schedule(t, map[string]any{"path": "/traced?token=querysecret", "postIn": "1s", "data": map[string]any{"n": 1}})
	b.waitStatus(t, created.ID, "completed", 20*time.Second)

	var spans map[trace.SpanID]sdktrace.ReadOnlySpan
	var apply sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		spans, apply = map[trace.SpanID]sdktrace.ReadOnlySpan{}, nil
		for _, s := range recorder.Ended() {
			spans[s.SpanContext().SpanID()] = s
			if s.Name() == "scheduler.apply_result" {
				apply = s
			}
		}
		return apply != nil
	}, 10*time.Second, 10*time.Millisecond)
	var chain []string
	for s := apply; s != nil; s = spans[s.Parent().SpanID()] {
		chain = append(chain, s.Name())
		require.Equal(t, apply.SpanContext().TraceID(), s.SpanContext().TraceID())
	}
	require.Equal(t, []string{"scheduler.apply_result", "dispatcher.deliver", "scheduler.publish_due", "scheduler.claim"}, chain)
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			require.NotContains(t, v, "querysecret", "%s.%s", s.Name(), kv.Key)
			require.NotContains(t, v, b.creds.SigningKey, "%s.%s", s.Name(), kv.Key)
		}
	}

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var lateness *metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "sundial.dispatcher.lateness" {
				require.Len(t, h.DataPoints, 1)
				lateness = &h.DataPoints[0]
			}
		}
	}
	require.NotNil(t, lateness)
	require.EqualValues(t, 1, lateness.Count)
	require.GreaterOrEqual(t, lateness.Sum, 0.0)
}

// startTraced boots the scheduler or the dispatcher in-process with the
// given telemetry providers, stopped with the rest of the suite.
func (b *bundle) startTraced(t *testing.T, name string, tp trace.TracerProvider, mp *sdkmetric.MeterProvider) {
	t.Helper()
	lookup := envconf.Map(b.env)
	var run func(context.Context) error
	switch name {
	case "scheduler":
		cfg, err := scheduler.ConfigFromEnv(lookup)
		require.NoError(t, err)
		a, err := scheduler.NewWith(b.ctx, cfg, b.logger(name), telemetry.WithProviders(tp, mp))
		require.NoError(t, err)
		run = a.Run
	case "dispatcher":
		cfg, err := dispatcher.ConfigFromEnv(lookup)
		require.NoError(t, err)
		a, err := dispatcher.NewWith(b.ctx, cfg, b.logger(name), telemetry.WithProviders(tp, mp))
		require.NoError(t, err)
		run = a.Run
	default:
		t.Fatalf("no traced start for %q", name)
	}
	b.keepRunning(t, name, run)
}
