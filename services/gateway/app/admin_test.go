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
// the Prometheus format, is alive, and is ready only while NATS is there:
// not when its server is down, again once it is back on the same port and
// store. It shuts down with the gateway.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t, natstest.Options{})
	cfg := testConfig(t, pgtest.NewDB(t))
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
	admintest.RequireFamilies(t, addr, map[string]dto.MetricType{
		"target_info": dto.MetricType_GAUGE,
	})

	port := srv.Addr().(*net.TCPAddr).Port
	srv.Shutdown()
	srv.WaitForShutdown()
	require.Contains(t, admintest.AwaitReady(t, addr, http.StatusServiceUnavailable), "nats")
	natstest.Start(t, natstest.Options{StoreDir: srv.StoreDir, Port: port})
	admintest.AwaitReady(t, addr, http.StatusOK)

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
