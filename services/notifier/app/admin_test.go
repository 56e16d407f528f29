package app_test

import (
	"net"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/testkit/admintest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
)

// TestAdminListener: the notifier's admin listener serves its metrics in
// the Prometheus format, is alive, and is ready only while its database
// and NATS are there: not while the database refuses connections, nor
// while the NATS server is down, again once each is back.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	addr := f.start(t).app.AdminAddr()

	status, body := admintest.Get(t, addr, "/healthz")
	require.Equal(t, http.StatusOK, status, body)
	admintest.AwaitReady(t, addr, http.StatusOK)
	families := admintest.RequireFamilies(t, addr, admintest.With(admintest.Connections(), map[string]dto.MetricType{
		"sundial_nats_consumer_pending": dto.MetricType_GAUGE,
		"target_info":                   dto.MetricType_GAUGE,
	}))
	lag := families["sundial_nats_consumer_pending"].GetMetric()
	require.Len(t, lag, 1)
	require.Equal(t, event.ConsumerNotifier, lag[0].GetLabel()[0].GetValue())

	allow := pgtest.Refuse(t, f.dbURL)
	require.Contains(t, admintest.AwaitReady(t, addr, http.StatusServiceUnavailable), "database")
	status, body = admintest.Get(t, addr, "/healthz")
	require.Equal(t, http.StatusOK, status, "alive without its database: %s", body)
	allow()
	admintest.AwaitReady(t, addr, http.StatusOK)

	port := f.nats.Addr().(*net.TCPAddr).Port
	f.nats.Shutdown()
	f.nats.WaitForShutdown()
	require.Contains(t, admintest.AwaitReady(t, addr, http.StatusServiceUnavailable), "nats")
	natstest.Start(t, natstest.Options{StoreDir: f.nats.StoreDir, Port: port})
	admintest.AwaitReady(t, addr, http.StatusOK)
}
