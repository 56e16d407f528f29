package scenario

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/receiver"
)

// The realistic load is the flow and its bursts, in order, and every
// hundred hooks hold the documented shares, the hanging paths' going to
// the healthy ones when they are left out.
func TestRealisticShape(t *testing.T) {
	t.Parallel()
	r := &realisticShape{rate: 100, seconds: 4, burst: 50, burstEvery: 2 * time.Second, hanging: true}
	require.Equal(t, []time.Duration{2 * time.Second}, r.bursts(), "a burst at the end of the flow is outside it")
	require.Equal(t, 450, r.hooks())
	t0 := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	postAts := r.postAts(t0)
	require.Len(t, postAts, r.hooks())
	for i := 1; i < len(postAts); i++ {
		require.False(t, postAts[i].Before(postAts[i-1]), "in order")
	}
	atBurst := 0
	for _, at := range postAts {
		if at.Equal(t0.Add(2 * time.Second)) {
			atBurst++
		}
	}
	require.Equal(t, 51, atBurst, "the burst and the flow's own hook at that instant")
	hooks := make([]check.Hook, len(postAts))
	for i, at := range postAts {
		hooks[i] = check.Hook{PostAt: at}
	}
	inBurst := r.burstInstants(hooks)
	require.Len(t, inBurst, 1)
	require.True(t, inBurst[t0.Add(2*time.Second).UnixNano()], "the burst's instant, from the first postAt")

	count := func(r *realisticShape) (map[receiver.Kind]int, int) {
		kinds, flaky := map[receiver.Kind]int{}, 0
		for i := range 100 {
			k, f := r.kind(i)
			kinds[k]++
			if f {
				flaky++
				require.Equal(t, receiver.Healthy, k)
				require.Equal(t, 2, r.expected(i))
			}
		}
		return kinds, flaky
	}
	kinds, flaky := count(r)
	require.Equal(t, map[receiver.Kind]int{receiver.Failing: 3, receiver.Slow: 3, receiver.Hanging: 1, receiver.Async: 3, receiver.Healthy: 90}, kinds)
	require.Equal(t, flakyShare, flaky)
	r.hanging = false
	kinds, _ = count(r)
	require.Equal(t, map[receiver.Kind]int{receiver.Failing: 3, receiver.Slow: 3, receiver.Async: 3, receiver.Healthy: 91}, kinds)

	specs := r.specs(postAts)
	require.Equal(t, "/realistic/failing", specs[0].Path)
	require.Equal(t, realisticRetries, specs[0].Retries)
	require.Equal(t, realisticRetryDelay, specs[0].RetryDelay)
	require.Equal(t, 2, r.expected(0), "a failing hook arrives twice")
}
