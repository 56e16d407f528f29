package crash

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNATSRestartedWithStoreWiped replaces the NATS server, while hooks
// wait in its DUE stream and deliveries are in flight, with a new one on
// the same port and an empty store: streams, consumers and messages are
// gone. Every service must reconnect and re-create what it needs by
// itself, and PostgreSQL's leases must re-drive the hooks NATS lost.
// Hooks created after the restart must flow as usual, and so must alerts:
// the hooks created after the restart take the project past 75 % of its
// quota, and the gateway's alert must reach the notifier through the new
// server.
//
// The receiver holds every request until the restart, so that the
// deliveries in flight then are those it holds. Duplicates allowed: those
// held deliveries: only a delivery that reached the receiver can be
// repeated, and only if its result was lost with NATS or came after its
// lease. The hooks waiting in the stream were never delivered, so their
// re-drive is their first delivery (as is that of a hook the dispatcher
// deferred for want of room), and those created after the restart are
// delivered once. That holds only if the lease outlasts the services'
// recovery: a consumer notices that its server lost it by missing
// heartbeats (up to about 5 s) and results wait in NATS meanwhile, so a
// 3 s lease re-drove hooks whose delivery succeeded after the restart.
// Production leases are 30 s; the suite's 15 s is enough.
func TestNATSRestartedWithStoreWiped(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		before      = 100
		after       = 60
		concurrency = 8
		// quota puts the 75 % threshold after the restart.
		quota = 200
	)
	b := setup(t, options{hold: before, quota: quota})
	b.startScheduler(t, nil)
	b.startDispatcher(t, concurrency)

	// All due at one instant after they are all created, so that every
	// DueHook is in the stream together well within the held deliveries'
	// 10 s limit, however slowly a loaded machine creates them.
	dueAt := time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339Nano)
	b.createMany(t, before, 8, func(int) map[string]any {
		return map[string]any{"path": "/before", "postAt": dueAt, "data": map[string]any{}}
	})
	// The dispatcher's slots are full of held deliveries and other hooks'
	// DueHooks wait in the stream beside them.
	var held, waiting int
	require.Eventually(t, func() bool {
		ids, err := b.dueHookIDs()
		if err != nil {
			return false
		}
		blocked := b.receiver.Blocked()
		for _, id := range blocked {
			delete(ids, id)
		}
		held, waiting = len(blocked), len(ids)
		return held >= concurrency && waiting > 0
	}, 60*time.Second, 20*time.Millisecond, "never %d deliveries held and DueHooks waiting beside them", concurrency)

	b.restartNATS(t, true)
	b.receiver.Release()
	inFlight := len(b.receiver.Blocked())
	for range after {
		b.schedule(t, map[string]any{"path": "/after", "postIn": "1s", "data": map[string]any{}})
	}

	require.Eventually(t, func() bool {
		return strings.Contains(b.notifierLog.String(), "threshold_percent=75")
	}, 60*time.Second, 50*time.Millisecond, "the notifier never logged the 75 %% quota alert raised after the restart")

	report := b.settle(t, 120*time.Second)
	b.requireClean(t, report, inFlight)
	t.Logf("%d hooks before the wipe (%d held in flight, at least %d others waiting in the stream), %d after; %d duplicates (bound %d)",
		before, inFlight, waiting, after, report.TotalDuplicates(), inFlight)
}
