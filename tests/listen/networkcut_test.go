package listen

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The listener's network cut for two minutes (the proxy between it and the
// gateways frozen: nothing closes, nothing moves) while 100 hooks fall due:
// they are held, not attempted, and arrive once the listener is back,
// oldest first; none goes to the domain.
func TestNetworkCutHoldsHooksUntilTheListenerIsBack(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.listen(t)
	const n = 100
	cut := time.Now()
	b.proxy.Freeze()
	postAts := map[string]time.Time{}
	for i := range n {
		// One a second from 5 s into the cut, so that some fall due while
		// the gateway still believes the listener is there.
		h := b.schedule(t, fmt.Sprintf("/c/%d", i), cut.Add(5*time.Second+time.Duration(i)*time.Second), nil)
		postAts[h.ID] = h.PostAt
	}
	require.Eventually(t, func() bool { return time.Since(cut) >= 2*time.Minute }, 3*time.Minute, time.Second)
	require.Zero(t, b.local.count(), "nothing can arrive through a cut network")
	require.Equal(t, n, b.held(t), "every hook due during the cut is held")
	for id := range postAts {
		require.Zero(t, b.get(t, id).Attempts, "a held hook counts no attempt")
	}
	b.proxy.Thaw()

	require.Eventually(t, func() bool { return b.completed(t) == n }, 2*time.Minute, 100*time.Millisecond,
		"the held hooks never arrived after the listener came back")
	got := b.local.list()
	require.Len(t, got, n, "each held hook arrives once")
	for _, a := range got {
		require.Equal(t, 1, b.get(t, a.ID).Attempts, "hook %s", a.ID)
	}
	require.Zero(t, b.domain.count(), "a held hook went to the domain")
	requireOldestFirst(t, got, postAts)
}

// requireOldestFirst checks that arrivals came in the order their hooks
// fell due, but for deliveries in flight together. The scheduler releases
// them in due order, 5 ms apart (docs/listener.md, "Release"); the
// dispatcher delivers a claim's batch side by side and the listener runs up
// to 64 handlers at once, so when the machine is slower than the pacing (a
// loaded CI machine: 26 and 35 places were seen) one hook may overtake
// others by up to what is in flight. So the check is twofold: no hook moves
// by more than the listener's 64 handlers, and the order as a whole is the
// due order (Spearman's rank correlation at least 0.8: the loaded runs had
// 0.91 and 0.96; released all at once, as before the pacing, the order is
// random: at most 0.40 in 2,000 shuffles of 100).
func requireOldestFirst(t *testing.T, got []arrival, postAts map[string]time.Time) {
	t.Helper()
	order := make([]string, 0, len(postAts))
	for id := range postAts {
		order = append(order, id)
	}
	sort.Slice(order, func(i, j int) bool { return postAts[order[i]].Before(postAts[order[j]]) })
	rank := map[string]int{}
	for i, id := range order {
		rank[id] = i
	}
	ranks := make([]int, len(got))
	for i, a := range got {
		ranks[i] = rank[a.ID]
	}
	t.Logf("due rank of each arrival, in arrival order: %v", ranks)
	const inFlight = 64
	var squares float64
	for i, r := range ranks {
		require.InDelta(t, i, r, inFlight, "arrival %d was due %d-th: %v", i, r, ranks)
		squares += float64((i - r) * (i - r))
	}
	n := float64(len(ranks))
	rho := 1 - 6*squares/(n*(n*n-1))
	require.GreaterOrEqual(t, rho, 0.8, "arrivals not in due order (rank correlation %.2f): %v", rho, ranks)
}
