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
// Duplicates allowed: the deliveries the dispatcher held at the restart
// (inFlight: the receiver holds them, and the dispatcher's concurrency
// lets it start no other delivery meanwhile):
// only a delivery that reached the receiver can be repeated, and only if
// its result was lost with NATS or came after its lease. The hooks waiting
// in the stream were never delivered, so their re-drive is their first
// delivery, and those created after the restart are delivered once. That
// holds only if the lease outlasts the services' recovery: a consumer
// notices that its server lost it by missing heartbeats (up to about 5 s)
// and results wait in NATS meanwhile, so a 3 s lease re-drove hooks whose
// delivery succeeded after the restart. Production leases are 30 s; the
// suite's 15 s is enough.
func TestNATSRestartedWithStoreWiped(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		before   = 100
		after    = 60
		inFlight = 8
		// quota puts the 75 % threshold after the restart.
		quota = 200
	)
	b := setup(t, options{hold: inFlight, quota: quota})
	b.startScheduler(t, nil)
	b.startDispatcher(t, inFlight)

	// All due at one instant after they are all created, so that every
	// DueHook is in the stream together well within the held deliveries'
	// 10 s limit, however slowly a loaded machine creates them.
	dueAt := time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339Nano)
	b.createMany(t, before, 8, func(int) map[string]any {
		return map[string]any{"path": "/before", "postAt": dueAt, "data": map[string]any{}}
	})
	select {
	case <-b.receiver.Held():
	case <-time.After(30 * time.Second):
		t.Fatalf("the receiver never held %d deliveries; got %d", inFlight, len(b.receiver.Blocked()))
	}
	// Every hook is claimed and has its DueHook stored: the held ones and
	// the rest, waiting for the dispatcher. (On a slow machine some may
	// already have been re-driven: the stream may hold more messages.)
	require.Eventually(t, func() bool {
		ids, err := b.dueHookIDs()
		return err == nil && len(ids) == before
	}, 60*time.Second, 20*time.Millisecond, "the DUE stream never held a DueHook for each of the %d hooks", before)

	b.restartNATS(t, true)
	b.receiver.Release()
	for range after {
		b.schedule(t, map[string]any{"path": "/after", "postIn": "1s", "data": map[string]any{}})
	}

	require.Eventually(t, func() bool {
		return strings.Contains(b.notifierLog.String(), "threshold_percent=75")
	}, 60*time.Second, 50*time.Millisecond, "the notifier never logged the 75 %% quota alert raised after the restart")

	report := b.settle(t, 120*time.Second)
	b.requireClean(t, report, inFlight)
	t.Logf("%d hooks in NATS at the wipe (%d held in flight), %d after; %d duplicates (bound %d)",
		before, inFlight, after, report.TotalDuplicates(), inFlight)
}
