package app_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/telemetry"
	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/testkit/admintest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// TestAdminListener: the gateway's admin listener serves its metrics in
// the Prometheus format, is alive, and stays ready while NATS is down and
// while PostgreSQL refuses connections: the gateway answers for them with
// 503 and Retry-After, which needs the Service to keep its endpoints. It
// shuts down with the gateway.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, natstest.Options{})
	dbURL := pgtest.NewDB(t)
	cfg := testConfig(t, dbURL)
	cfg.NATSURL = srv.ClientURL()
	metrics, err := telemetry.NewMetrics("gateway", "test")
	require.NoError(t, err)
	a, err := app.NewWith(t.Context(), cfg, discard(), telemetry.WithMetrics(metrics))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("gateway stopped: %v", err)
		}
	})
	addr := a.AdminAddr()

	status, body := admintest.Get(t, addr, "/healthz")
	require.Equal(t, http.StatusOK, status, body)
	admintest.AwaitReady(t, addr, http.StatusOK)
	// An API request, recorded by method, route and status.
	resp, err := http.Get("http://" + a.Addr() + "/healthz")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	families := admintest.RequireFamilies(t, addr, admintest.With(admintest.Connections(), map[string]dto.MetricType{
		"sundial_gateway_request_duration_seconds": dto.MetricType_HISTOGRAM,
		"target_info": dto.MetricType_GAUGE,
	}))
	labels := map[string]string{}
	for _, l := range families["sundial_gateway_request_duration_seconds"].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Equal(t, map[string]string{"method": "GET", "route": "/healthz", "status": "200"}, labels)

	srv.Shutdown()
	srv.WaitForShutdown()
	allow := pgtest.Refuse(t, dbURL)
	status, body = admintest.Get(t, addr, "/readyz")
	require.Equal(t, http.StatusOK, status, "ready with NATS down and PostgreSQL refusing: %s", body)
	allow()

	cancel()
	select {
	case err := <-done:
		done <- err // for the cleanup
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	_, err = net.Dial("tcp", addr)
	require.Error(t, err, "the admin listener is closed")
}
