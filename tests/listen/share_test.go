package listen

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Two listeners on one project share its deliveries: each hook reaches
// exactly one of them, and both take part.
func TestTwoListenersShareEveryHookOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.listenTo(t, b.local.URL()+"/one")
	b.listenTo(t, b.local.URL()+"/two")
	const n = 100
	at := time.Now().Add(2 * time.Second)
	ids := map[string]bool{}
	for i := range n {
		ids[b.schedule(t, fmt.Sprintf("/h/%d", i), at, nil).ID] = true
	}
	require.Eventually(t, func() bool { return b.completed(t) == n }, 2*time.Minute, 100*time.Millisecond,
		"not every hook completed")
	perListener := map[string]int{}
	seen := map[string]int{}
	for _, a := range b.local.list() {
		seen[a.ID]++
		perListener[strings.Split(a.Path, "/")[1]]++
	}
	require.Len(t, seen, n)
	for id, times := range seen {
		require.True(t, ids[id], "unknown hook %s", id)
		require.Equal(t, 1, times, "hook %s arrived %d times", id, times)
	}
	require.Positive(t, perListener["one"], "the first listener took none: %v", perListener)
	require.Positive(t, perListener["two"], "the second listener took none: %v", perListener)
	require.Zero(t, b.domain.count(), "a delivery went to the domain")
}
