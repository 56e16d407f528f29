package crash

import (
	"encoding/json"
	"net/http"
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

// TestDispatcherKilledInABurstHandsItsHooksOnWithinSeconds is issue 41's
// recovery: a dispatcher is killed with SIGKILL while it holds a burst's
// hooks, some in flight (held by the receiver), the rest fetched and
// waiting for its delivery slots. Another dispatcher must deliver them
// within 5 s of the kill, not after the consumer's AckWait of old (30 s)
// or the lease (30 s here), and the only duplicates are of the deliveries
// in flight at the kill, one each: the hooks the dead dispatcher delivered
// and reported are not delivered again.
func TestDispatcherKilledInABurstHandsItsHooksOnWithinSeconds(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	const (
		hooks    = 300
		inFlight = 8
	)
	b := setup(t, options{hold: inFlight, lease: "30s"})
	b.startScheduler(t, nil)
	first := b.startDispatcher(t, inFlight)

	due := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	batch := make([]map[string]any, hooks)
	for i := range batch {
		batch[i] = map[string]any{"path": "/burst", "postAt": due.Format(time.RFC3339Nano), "data": map[string]any{"n": i}}
	}
	resp, raw := b.api(0).Do(t, http.MethodPost, "/v1/hooks/batch", map[string]any{"hooks": batch})
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/hooks/batch: %s", raw)
	var created struct{ Data []hook }
	require.NoError(t, json.Unmarshal(raw, &created))
	for _, h := range created.Data {
		b.accept(h)
	}

	select {
	case <-b.receiver.Held():
	case <-time.After(30 * time.Second):
		t.Fatalf("the receiver never held %d deliveries; got %d", inFlight, len(b.receiver.Blocked()))
	}
	first.Kill()
	killed := time.Now()
	b.receiver.Release()
	b.startDispatcher(t, inFlight)

	report := b.settle(t, 60*time.Second)
	b.requireClean(t, report, inFlight)
	blocked := map[string]bool{}
	for _, id := range b.receiver.Blocked() {
		blocked[id] = true
	}
	for id, n := range b.receiver.Counts() {
		require.LessOrEqual(t, n, 2, "hook %s arrived %d times", id, n)
		require.True(t, n == 1 || blocked[id], "hook %s was not in flight at the kill but arrived twice", id)
	}
	var worst time.Duration
	seen := map[string]bool{}
	for _, a := range b.receiver.Arrivals() {
		if seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		worst = max(worst, a.At.Sub(killed))
	}
	t.Logf("%d hooks, %d in flight at the kill; the last first arrival %s after the kill", hooks, len(blocked), worst)
	require.LessOrEqual(t, worst, 5*time.Second, "the killed dispatcher's hooks waited past 5 s")
}
