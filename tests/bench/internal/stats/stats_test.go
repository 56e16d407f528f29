package stats_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

func TestSummarizeNearestRank(t *testing.T) {
	t.Parallel()
	// 1..100 ms in reverse order: p50 is the 50th value, p99 the 99th.
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := stats.Summarize(ds)
	require.Equal(t, stats.Summary{Count: 100, MinMs: 1, P50Ms: 50, P90Ms: 90, P99Ms: 99, MaxMs: 100, MeanMs: 50.5}, s)
	require.Equal(t, 100*time.Millisecond, ds[0], "the input is left unsorted")
}

func TestSummarizeSmallAndEmpty(t *testing.T) {
	t.Parallel()
	require.Equal(t, stats.Summary{}, stats.Summarize(nil))
	one := stats.Summarize([]time.Duration{-3 * time.Millisecond})
	require.Equal(t, -3.0, one.P50Ms, "a negative lateness (an early delivery) is kept as it is")
	require.Equal(t, -3.0, one.P99Ms)
	two := stats.Summarize([]time.Duration{time.Millisecond, 2 * time.Millisecond})
	require.Equal(t, 1.0, two.P50Ms)
	require.Equal(t, 2.0, two.P99Ms)
}

func TestPerSecond(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2500.0, stats.PerSecond(10000, 4*time.Second))
	require.Equal(t, 0.0, stats.PerSecond(10, 0))
}
