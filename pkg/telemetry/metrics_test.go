package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sundial-run/sundial/pkg/telemetry"
)

// TestNewMetricsServesPrometheusText: an instrument of the provider is
// served under its translated name, with its labels and the service's
// target_info, and the scope is not a label; the Go runtime's and the
// process's metrics are served beside it.
func TestNewMetricsServesPrometheusText(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics("svc", "1.2.3")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Provider.Shutdown(context.Background())) })
	c, err := m.Provider.Meter("sundial/test").Int64Counter("sundial.test.things", metric.WithUnit("{thing}"))
	require.NoError(t, err)
	c.Add(t.Context(), 3, metric.WithAttributes(attribute.String("outcome", "success")))

	rec := httptest.NewRecorder()
	m.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, "# TYPE sundial_test_things_total counter\n")
	require.Contains(t, body, `sundial_test_things_total{outcome="success"} 3`)
	require.Contains(t, body, `service_name="svc"`)
	require.NotContains(t, body, "otel_scope_name")
	_, err = telemetry.Counter(m.Provider.Meter("sundial/test"), "sundial.test.failures")
	require.NoError(t, err)
	rec = httptest.NewRecorder()
	m.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body = rec.Body.String()
	require.Regexp(t, `(?m)^sundial_test_failures_total 0$`, body, "a Counter is exported before its first increment")
	for _, family := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		require.Contains(t, body, "# TYPE "+family+" ", family)
	}
}

func TestWithMetricsAndResolve(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics("svc", "1")
	require.NoError(t, err)
	p := telemetry.Resolve(telemetry.WithMetrics(m))
	require.Equal(t, metric.MeterProvider(m.Provider), p.Meter)
	require.NotNil(t, p.Metrics)
}

// TestSampledReadsAtMostOncePerInterval: a second Value within the
// interval does not read; a failed read keeps the last value.
func TestSampledReadsAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	reads := 0
	fail := false
	s := telemetry.NewSampled(time.Hour, time.Second, func(ctx context.Context) (int, error) {
		reads++
		_, ok := ctx.Deadline()
		require.True(t, ok, "each read is bounded")
		if fail {
			return 0, errors.New("down")
		}
		return reads * 10, nil
	})
	require.Equal(t, 10, s.Value(t.Context()))
	require.Equal(t, 10, s.Value(t.Context()))
	require.Equal(t, 1, reads)

	fail = true
	now := telemetry.NewSampled(0, time.Second, func(context.Context) (int, error) {
		if fail {
			return 0, errors.New("down")
		}
		return 7, nil
	})
	fail = false
	require.Equal(t, 7, now.Value(t.Context()))
	fail = true
	require.Equal(t, 7, now.Value(t.Context()), "a failed read reports the last value")
}
