package check_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	a, b, c, stranger := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	hooks := []check.Hook{{ID: a, PostAt: base}, {ID: b, PostAt: base.Add(time.Second)}, {ID: c, PostAt: base}}
	arrivals := []check.Arrival{
		{ID: a, At: base.Add(20 * time.Millisecond)},
		{ID: b, At: base.Add(900 * time.Millisecond)}, // 100 ms early
		{ID: a, At: base.Add(10 * time.Millisecond)},  // a duplicate that came first
		{ID: stranger, At: base},
		{ID: a, At: base.Add(30 * time.Millisecond)}, // a's third arrival
	}
	o := check.Compare(hooks, arrivals)
	require.Equal(t, 3, o.Scheduled)
	require.Equal(t, 2, o.Delivered)
	require.Equal(t, 1, o.Missing, "c never arrived")
	require.False(t, o.Complete())
	require.Equal(t, 2, o.Duplicates)
	require.Equal(t, 1, o.DuplicatedHooks)
	require.Equal(t, 1, o.MultiDuplicatedHooks, "a arrived three times")
	require.Equal(t, 1, o.Unknown)
	require.Equal(t, 1, o.Early)
	require.Equal(t, 2, o.Lateness.Count)
	require.Equal(t, -100.0, o.Lateness.MinMs, "b's lateness is negative")
	require.Equal(t, 10.0, o.Lateness.MaxMs, "a's lateness counts its earliest arrival")
	require.Equal(t, base, o.FirstPostAt)
	require.Equal(t, base.Add(time.Second), o.LastPostAt)
	require.Equal(t, base.Add(10*time.Millisecond), o.FirstArrival)
	require.Equal(t, base.Add(900*time.Millisecond), o.LastArrival)
	require.Len(t, o.FirstArrivals(), 2)
}

func TestCompareAllOnTime(t *testing.T) {
	t.Parallel()
	base := time.Now()
	var hooks []check.Hook
	var arrivals []check.Arrival
	for i := range 1000 {
		id := uuid.New()
		hooks = append(hooks, check.Hook{ID: id, PostAt: base})
		arrivals = append(arrivals, check.Arrival{ID: id, At: base.Add(time.Duration(i+1) * time.Millisecond)})
	}
	o := check.Compare(hooks, arrivals)
	require.True(t, o.Complete())
	require.Zero(t, o.Early)
	require.Zero(t, o.Duplicates)
	require.Equal(t, 500.0, o.Lateness.P50Ms)
	require.Equal(t, 990.0, o.Lateness.P99Ms)
	require.Equal(t, 1000.0, o.Lateness.MaxMs)
}

// The late hooks are counted by the second they were due in, the worst
// seconds first; a hook exactly at the bound is not late.
func TestLateSpread(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	var hooks []check.Hook
	var arrivals []check.Arrival
	add := func(due, late time.Duration) {
		h := check.Hook{ID: uuid.New(), PostAt: base.Add(due)}
		hooks = append(hooks, h)
		arrivals = append(arrivals, check.Arrival{ID: h.ID, At: h.PostAt.Add(late)})
	}
	add(0, 2*time.Millisecond)
	add(100*time.Millisecond, check.LateBound)
	add(1500*time.Millisecond, 30*time.Millisecond)
	add(3200*time.Millisecond, 12*time.Millisecond)
	add(3700*time.Millisecond, 45*time.Millisecond)
	add(4999*time.Millisecond, time.Millisecond)

	s := check.Compare(hooks, arrivals).LateSpread
	require.Equal(t, 3, s.Late)
	require.Equal(t, 2, s.Seconds)
	require.Equal(t, 5, s.Span)
	require.Equal(t, []int{0, 1, 0, 2, 0}, s.BySecond)
	require.Equal(t, []check.LateSecond{{Second: 3, Late: 2, MaxMs: 45}, {Second: 1, Late: 1, MaxMs: 30}}, s.Worst)
	require.Equal(t, "3 later than 10ms, in 2 of 5 seconds; most in +3s: 2 (max 45.0 ms), +1s: 1 (max 30.0 ms)", s.String())
}
