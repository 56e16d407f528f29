package delivery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConnRateLetsABurstGoThenPacesAndRefusesLongWaits(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := newConnRate(10, 3, time.Second, 2)
	r.now = func() time.Time { return now }

	for range 3 {
		wait, ok := r.reserve("a:443")
		require.True(t, ok)
		require.Zero(t, wait, "the first burst goes at once")
	}
	// Then one every 100 ms, each waiting behind those already owed.
	for i := 1; i <= 10; i++ {
		wait, ok := r.reserve("a:443")
		require.True(t, ok)
		require.Equal(t, time.Duration(i)*100*time.Millisecond, wait)
	}
	// The next would wait 1.1 s: refused, and nothing taken.
	wait, ok := r.reserve("a:443")
	require.False(t, ok)
	require.Equal(t, 1100*time.Millisecond, wait)
	// Another host has a bucket of its own.
	wait, ok = r.reserve("b:443")
	require.True(t, ok)
	require.Zero(t, wait)

	// A second later the owed tokens are paid: one waits 100 ms again.
	now = now.Add(time.Second)
	wait, ok = r.reserve("a:443")
	require.True(t, ok)
	require.Equal(t, 100*time.Millisecond, wait)

	// Tracking is bounded (two hosts here). b's bucket is full again, so
	// it is forgotten to make room for c; with a and c both owing, a
	// fourth host finds no room and goes unlimited, untracked.
	wait, ok = r.reserve("c:443")
	require.True(t, ok)
	require.Zero(t, wait)
	require.Contains(t, r.hosts, "c:443")
	require.NotContains(t, r.hosts, "b:443")
	wait, ok = r.reserve("d:443")
	require.True(t, ok)
	require.Zero(t, wait)
	require.Len(t, r.hosts, 2)
	require.NotContains(t, r.hosts, "d:443")
}
