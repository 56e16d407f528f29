package crash

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDispatcherKilledMidDelivery kills the dispatcher with SIGKILL while
// every one of its delivery slots is held by the receiver, starts another,
// and checks that every hook still arrives and is completed, with no more
// duplicates than the deliveries that were in flight at the kill: only
// those can have reached the receiver without their result being recorded.
//
// The other hooks wait in NATS, claimed, while the first dispatcher is
// stuck and the second starts; one picked up just before its lease ends is
// delivered, re-driven before its result lands, and delivered again. The
// lease (20 s) is long so that this waiting, slow on a loaded machine (10 s
// was once not enough), stays far inside it.
func TestDispatcherKilledMidDelivery(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		hooks    = 200
		inFlight = 8
	)
	b := setup(t, options{hold: inFlight, lease: "20s"})
	b.startScheduler(t, nil)
	first := b.startDispatcher(t, inFlight)

	for range hooks {
		b.schedule(t, map[string]any{"path": "/crash", "postIn": "1s", "data": map[string]any{"n": 1}})
	}

	select {
	case <-b.receiver.Held():
	case <-time.After(30 * time.Second):
		t.Fatalf("the receiver never held %d deliveries; got %d", inFlight, len(b.receiver.Blocked()))
	}
	first.Kill()
	// Their answers go nowhere: the process that asked is gone.
	b.receiver.Release()
	b.startDispatcher(t, inFlight)

	report := b.settle(t, 90*time.Second)
	b.requireClean(t, report, inFlight)

	counts := b.receiver.Counts()
	blocked := map[string]bool{}
	for _, id := range b.receiver.Blocked() {
		blocked[id] = true
	}
	done := b.completedHooks(t)
	require.Len(t, done, hooks)
	var heldAttempts []int
	for _, h := range done {
		if blocked[h.ID] {
			heldAttempts = append(heldAttempts, h.Attempts)
		}
		// An attempt is recorded only for a delivery that was made; a
		// delivery whose result died with the first dispatcher may go
		// unrecorded.
		require.GreaterOrEqual(t, h.Attempts, 1, "hook %s", h.ID)
		require.LessOrEqual(t, h.Attempts, counts[h.ID], "hook %s: more attempts than deliveries", h.ID)
		if !blocked[h.ID] {
			require.Equal(t, 1, counts[h.ID], "hook %s was not in flight at the kill but arrived twice", h.ID)
		}
	}
	t.Logf("%d hooks, %d held at the kill, %d duplicate deliveries (bound %d); attempts recorded on the held hooks: %v",
		hooks, len(blocked), report.TotalDuplicates(), inFlight, heldAttempts)
}
