package claim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sundial-run/sundial/services/scheduler/internal/claim"
)

func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func TestPublishLatenessIsRecordedForFirstAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reader := sdkmetric.NewManualReader()
	b.hook(t, -time.Millisecond)
	c := b.claimer(t, claim.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	n, err := c.ClaimOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	hist, ok := collect(t, reader)["sundial.scheduler.publish_lateness"].(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, hist.DataPoints, 1)
	require.EqualValues(t, 1, hist.DataPoints[0].Count)
	require.GreaterOrEqual(t, hist.DataPoints[0].Sum, 0.0)
}

func TestQueueDepthCountsDueUnclaimedHooks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 3 {
		b.hook(t, -time.Second)
	}
	b.hook(t, time.Hour)
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter(claim.MeterName)
	require.NoError(t, claim.ObserveQueueDepth(b.pool, meter))

	gauge, ok := collect(t, reader)["sundial.scheduler.queue_depth"].(metricdata.Gauge[int64])
	require.True(t, ok)
	require.Len(t, gauge.DataPoints, 1)
	require.EqualValues(t, 3, gauge.DataPoints[0].Value)
}
