package dashboard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

func TestFiguresSumShardsPerStep(t *testing.T) {
	t.Parallel()
	rng, ok := rangeNamed("1h")
	require.True(t, ok)
	first := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	last := make([]int64, 16)
	last[15] = 3
	rows := []store.ListDeliveryMinutesRow{
		{Minute: first, Succeeded: 1, Failed: 1, LatenessBuckets: []int64{2}},
		{Minute: first, Succeeded: 2, Async: 4, LatenessBuckets: last},
		{Minute: first.Add(59 * time.Minute), Failed: 2, LatenessBuckets: []int64{0, 0, 1}},
		{Minute: first.Add(time.Hour), Succeeded: 100}, // past the range: not counted
	}
	page := figures(rng, first, rows)
	require.Len(t, page.Steps, 60)
	require.EqualValues(t, 3, page.Steps[0].Succeeded)
	require.Equal(t, []int64{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}, page.Steps[0].Buckets)
	require.Equal(t, "> 1m0s", page.Steps[0].P99)
	require.Equal(t, "≤ 5ms", page.Steps[59].P50)
	require.Equal(t, "–", page.Steps[1].P50)
	require.EqualValues(t, 10, page.Deliveries)
	require.Equal(t, "50.00 %", page.SuccessRate)
	require.EqualValues(t, 8, page.MaxPerStep)
	require.Len(t, page.Bars, 2)
	require.Equal(t, chartHeight, page.Bars[0].SH+page.Bars[0].FH+page.Bars[0].AH)

	require.Equal(t, []string{"03:00", "03:15", "03:30", "03:45", "04:00"}, page.TimeAxis)

	week, ok := rangeNamed("7d")
	require.True(t, ok)
	require.Equal(t, []string{"Jan 2 03:00", "Jan 3 21:00", "Jan 5 15:00", "Jan 7 09:00", "Jan 9 03:00"}, figures(week, first, nil).TimeAxis)

	empty := figures(rng, first, nil)
	require.Equal(t, "–", empty.SuccessRate)
	require.Empty(t, empty.Bars)
	require.Empty(t, empty.P99Line)
}

func TestRangeNamed(t *testing.T) {
	t.Parallel()
	for name, step := range map[string]time.Duration{"": 5 * time.Minute, "1h": time.Minute, "24h": 5 * time.Minute, "7d": time.Hour} {
		r, ok := rangeNamed(name)
		require.True(t, ok, name)
		require.Equal(t, step, r.Step, name)
	}
	_, ok := rangeNamed("30d")
	require.False(t, ok)
}
