package crash

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDispatcherKilledMidDelivery kills the dispatcher with SIGKILL while
// every one of its delivery slots is held by the receiver, starts another,
// and checks that every hook still arrives and is completed, with no more
// duplicates than the deliveries that were in flight at the kill.
func TestDispatcherKilledMidDelivery(t *testing.T) {
	t.Parallel()
	const (
		hooks    = 200
		inFlight = 8
	)
	b := setup(t, inFlight)
	first := b.startDispatcher(t, "8")

	scheduled := make(map[string]bool, hooks)
	for range hooks {
		h := b.schedule(t, map[string]any{"path": "/crash", "postIn": "1s", "data": map[string]any{"n": 1}})
		scheduled[h.ID] = true
	}

	select {
	case <-b.receiver.held:
	case <-time.After(30 * time.Second):
		t.Fatalf("the receiver never held %d deliveries; got %d", inFlight, len(b.receiver.Blocked()))
	}
	first.kill()
	// Their answers go nowhere: the process that asked is gone.
	b.receiver.Release()
	b.startDispatcher(t, "8")

	var done []hook
	require.Eventually(t, func() bool {
		var total int
		done, total = b.completed(t)
		return total == hooks
	}, 60*time.Second, 200*time.Millisecond, "not every hook was completed")
	require.Len(t, done, hooks)

	counts := b.receiver.Counts()
	duplicates := 0
	for id := range scheduled {
		require.GreaterOrEqual(t, counts[id], 1, "hook %s never reached the receiver", id)
		duplicates += counts[id] - 1
	}
	require.Len(t, counts, hooks, "the receiver got ids that were never scheduled")
	require.LessOrEqual(t, duplicates, inFlight, "more duplicates than deliveries in flight at the kill")

	blocked := map[string]bool{}
	for _, id := range b.receiver.Blocked() {
		blocked[id] = true
	}
	heldAttempts := []int{}
	for _, h := range done {
		if blocked[h.ID] {
			heldAttempts = append(heldAttempts, h.Attempts)
		}
		require.True(t, scheduled[h.ID], "completed hook %s was never scheduled", h.ID)
		// An attempt is recorded only for a delivery that was made; a
		// delivery whose result died with the first dispatcher may go
		// unrecorded.
		require.GreaterOrEqual(t, h.Attempts, 1, "hook %s", h.ID)
		require.LessOrEqual(t, h.Attempts, counts[h.ID], "hook %s: more attempts than deliveries", h.ID)
		if !blocked[h.ID] {
			require.Equal(t, 1, counts[h.ID], "hook %s was not in flight at the kill but arrived twice", h.ID)
		}
	}
	t.Logf("%d hooks, %d held at the kill, %d duplicate deliveries; attempts recorded on the held hooks: %v",
		hooks, len(blocked), duplicates, heldAttempts)
}
