package app_test

import (
	"net"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/scheduler/internal/fixture"
	"github.com/sundial-run/sundial/testkit/admintest"
	"github.com/sundial-run/sundial/testkit/natstest"
)

// TestAdminListener: the scheduler's admin listener serves its metrics in
// the Prometheus format (a claim and a result recorded), is alive, and is
// ready only while NATS is there: not when its server is down, again once
// it is back on the same port and store.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.dispatcher(t)
	a, _ := b.boot(t)
	addr := a.AdminAddr()

	status, body := admintest.Get(t, addr, "/healthz")
	require.Equal(t, http.StatusOK, status, body)
	admintest.AwaitReady(t, addr, http.StatusOK)

	project := fixture.Project(t, b.q, "receiver.example.com",
		retry.Policy{MinRetries: 0, DelaySecs: 1, Strategy: retry.StrategyFixed, BackoffFactor: 2, MaxDelaySecs: 3600})
	fixture.Insert(t, b.q, fixture.Hook{ProjectID: project, Domain: "receiver.example.com", Path: "/x", DueIn: 0})
	d.report(d.next(), eventv1.Outcome_OUTCOME_SUCCESS, 200, "")
	families := admintest.RequireFamilies(t, addr, admintest.With(admintest.Connections(), map[string]dto.MetricType{
		"sundial_scheduler_endpoints_paused":         dto.MetricType_GAUGE,
		"sundial_scheduler_hooks_claimed_total":      dto.MetricType_COUNTER,
		"sundial_scheduler_publish_lateness_seconds": dto.MetricType_HISTOGRAM,
		"sundial_scheduler_results_applied_total":    dto.MetricType_COUNTER,
		"sundial_scheduler_queue_depth":              dto.MetricType_GAUGE,
		"sundial_nats_consumer_pending":              dto.MetricType_GAUGE,
		"target_info":                                dto.MetricType_GAUGE,
		// The retention cleaner's first pass, at start, adds 0.
		"sundial_retention_hooks_deleted_total":    dto.MetricType_COUNTER,
		"sundial_retention_attempts_deleted_total": dto.MetricType_COUNTER,
	}))
	lag := families["sundial_nats_consumer_pending"].GetMetric()
	require.Len(t, lag, 1)
	require.Equal(t, "consumer", lag[0].GetLabel()[0].GetName())
	require.Equal(t, event.ConsumerScheduler, lag[0].GetLabel()[0].GetValue())

	port := b.nats.Addr().(*net.TCPAddr).Port
	b.nats.Shutdown()
	b.nats.WaitForShutdown()
	require.Contains(t, admintest.AwaitReady(t, addr, http.StatusServiceUnavailable), "nats")
	natstest.Start(t, natstest.Options{StoreDir: b.nats.StoreDir, Port: port})
	admintest.AwaitReady(t, addr, http.StatusOK)
}
