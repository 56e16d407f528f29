package crash

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/tests/internal/checker"
	"github.com/sundial-run/sundial/tests/internal/stall"
)

// TestTenThousandHooksWithoutFaults sends 10,000 hooks, due within two
// seconds of each other a few seconds ahead, through three scheduler and
// three dispatcher processes: every one must arrive exactly once and never
// before its postAt. The gateway runs as a process too (built without the
// race detector), and 32 clients over 16 projects create the hooks (a
// project's creates queue on its usage row, so more projects go faster).
// On a busy machine creating them may take longer than the lead: late
// hooks are then due at once, which changes nothing that is checked.
//
// Duplicates allowed: none, but across a stall of the machine. Without a
// fault nothing is re-driven: the lease is the production default (30 s),
// far above any delivery here. A dispatcher the machine keeps from running
// for seconds looks dead, though, and its messages go to another
// (stalledDuplicates).
func TestTenThousandHooksWithoutFaults(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		hooks    = 10000
		replicas = 3
		workers  = 32
		// spread is the window the hooks are due in; lead is how far
		// ahead of the start of creation the window opens.
		spread = 2 * time.Second
		lead   = 10 * time.Second
	)
	b := setup(t, options{projects: 16, gatewayProcess: true, lease: "30s"})
	stalls := stall.Start(t, stallThreshold)
	// At info level the dispatchers log every delivery with its attempt
	// and lease, which explainDuplicates shows for a duplicate.
	b.env["SUNDIAL_LOG_LEVEL"] = "info"
	for range replicas {
		b.startScheduler(t, map[string]string{"SUNDIAL_SCHEDULER_POLL_INTERVAL": "200ms"})
		b.startDispatcher(t, 64)
	}

	start := time.Now()
	window := start.Add(lead).UTC()
	b.createMany(t, hooks, workers, func(i int) map[string]any {
		at := window.Add(time.Duration(i%1000) * spread / 1000)
		return map[string]any{"path": "/load", "postAt": at.Format(time.RFC3339Nano), "data": map[string]any{"i": i}}
	})
	created := time.Since(start)
	require.Equal(t, hooks, b.acceptedCount())

	require.Eventually(t, func() bool { return b.receiver.Distinct() == hooks }, 90*time.Second, 50*time.Millisecond,
		"not every hook arrived")
	report := b.settle(t, 60*time.Second)
	b.requireClean(t, report, stalledDuplicates(t, report, b.receiver.Arrivals(), stalls))
	t.Logf("created %d hooks in %s (%.0f/s); all delivered %s after the window opened",
		hooks, created.Round(time.Millisecond), float64(hooks)/created.Seconds(), lastArrival(b).Sub(window).Round(time.Millisecond))
}

// stallThreshold is the least stall of the test process taken as a sign
// that the machine kept its processes from running (other suites beside
// this one on two processors): a dispatcher kept from running for most of
// event.DueAckWait sends no in-progress acknowledgement in it, and JetStream
// gives its messages to another dispatcher, as it would were it dead.
const stallThreshold = 500 * time.Millisecond

// stalledDuplicates counts the hooks that arrived twice with a stall of
// the machine (stalls) between the first arrival, less event.DueAckWait,
// and the second: at-least-once delivered again what a dispatcher that
// looked dead held. Any other duplicate is left to requireClean to fail
// on. It logs what it counts.
func stalledDuplicates(t *testing.T, r checker.Report, arrivals []checker.Arrival, stalls *stall.Watch) int {
	t.Helper()
	explained := 0
	for _, ts := range r.DuplicateArrivals(arrivals) {
		if len(ts) == 2 && len(stalls.Between(ts[0].Add(-event.DueAckWait), ts[1])) > 0 {
			explained++
		}
	}
	if explained > 0 {
		t.Logf("%d hooks delivered twice across a stall of the machine (the longest %s): allowed, as at-least-once for a dispatcher that looked dead",
			explained, stalls.Longest().Round(time.Millisecond))
	}
	return explained
}

// lastArrival is the receiver's clock at the last arrival.
func lastArrival(b *bundle) time.Time {
	var last time.Time
	for _, a := range b.receiver.Arrivals() {
		if a.At.After(last) {
			last = a.At
		}
	}
	return last
}
