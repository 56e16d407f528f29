package app_test

import (
	"net"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
	"github.com/sundial-run/sundial/testkit/admintest"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// TestAdminListener: the dispatcher's admin listener serves its metrics
// in the Prometheus format (a first attempt delivered: its lateness and
// outcome recorded), is alive, and is ready only while NATS is there: not
// when its server is down, again once it is back on the same port and
// store.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	addr := start(t, b.cfg).app.AdminAddr()

	status, body := admintest.Get(t, addr, "/healthz")
	require.Equal(t, http.StatusOK, status, body)
	admintest.AwaitReady(t, addr, http.StatusOK)

	projectID := fixture.InsertProject(t, b.pool, fixture.Project{ActiveKey: "whsec_app"})
	due := fixture.DueHook(projectID, b.receiver.URL+"/hooks/app", "/hooks/app")
	due.Attempt = 1 // lateness is recorded for first attempts only
	publishDue(t, b.js, due)
	b.receiver.WaitFor(t, 1)
	families := admintest.RequireFamilies(t, addr, admintest.With(admintest.Connections(), map[string]dto.MetricType{
		"sundial_dispatcher_lateness_seconds":          dto.MetricType_HISTOGRAM,
		"sundial_dispatcher_deliveries_total":          dto.MetricType_COUNTER,
		"sundial_dispatcher_delivery_duration_seconds": dto.MetricType_HISTOGRAM,
		"sundial_nats_consumer_pending":                dto.MetricType_GAUGE,
		"target_info":                                  dto.MetricType_GAUGE,
	}))
	deliveries := families["sundial_dispatcher_deliveries_total"].GetMetric()
	require.Len(t, deliveries, 1)
	require.Equal(t, "outcome", deliveries[0].GetLabel()[0].GetName())
	require.Equal(t, "success", deliveries[0].GetLabel()[0].GetValue())
	lag := families["sundial_nats_consumer_pending"].GetMetric()
	require.Len(t, lag, 1)
	require.Equal(t, event.ConsumerDispatcher, lag[0].GetLabel()[0].GetValue())

	port := b.nats.Addr().(*net.TCPAddr).Port
	b.nats.Shutdown()
	b.nats.WaitForShutdown()
	require.Contains(t, admintest.AwaitReady(t, addr, http.StatusServiceUnavailable), "nats")
	natstest.Start(t, natstest.Options{StoreDir: b.nats.StoreDir, Port: port})
	admintest.AwaitReady(t, addr, http.StatusOK)
}
