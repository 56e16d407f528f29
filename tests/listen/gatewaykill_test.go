package listen

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A gateway replica killed with SIGKILL while it streams deliveries to a
// listener loses nothing: the listener reconnects (through the proxy, to
// the other replica), deliveries in flight at the kill are re-driven, and
// every hook arrives.
func TestGatewayKilledMidStream(t *testing.T) {
	t.Parallel()
	b := setup(t, options{gateways: 2})
	// The proxy tries the gateways in order: the listener is on the first.
	b.listen(t)
	const n = 300
	start := time.Now().Add(2 * time.Second)
	for i := range n {
		// 20 hooks a second for 15 s.
		b.schedule(t, fmt.Sprintf("/k/%d", i), start.Add(time.Duration(i)*50*time.Millisecond), nil)
	}
	require.Eventually(t, func() bool { return b.local.count() >= n/4 }, time.Minute, 20*time.Millisecond,
		"deliveries never started")
	b.gateways[0].Kill()
	require.Eventually(t, func() bool { return b.completed(t) == n }, 3*time.Minute, 200*time.Millisecond,
		"hooks were lost when the gateway died")
	seen := map[string]bool{}
	for _, a := range b.local.list() {
		seen[a.ID] = true
	}
	require.Len(t, seen, n, "every hook reached the listener")
	require.Zero(t, b.domain.count(), "a delivery went to the domain")
	t.Logf("%d arrivals for %d hooks (duplicates: deliveries in flight at the kill)", b.local.count(), n)
}
