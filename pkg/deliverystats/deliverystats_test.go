package deliverystats_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/deliverystats"
)

func TestBucket(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{-5 * time.Second, 0}, // early: clock skew
		{0, 0},
		{ms - 1, 0},
		{ms, 1}, // a bound belongs to the bucket above: "below" the bound
		{2*ms - 1, 1},
		{4 * ms, 2},
		{19 * ms, 4},
		{20 * ms, 5},
		{999 * ms, 9},
		{time.Second, 10},
		{29 * time.Second, 13},
		{time.Minute - 1, 14},
		{time.Minute, 15},
		{time.Hour, 15},
	} {
		require.Equal(t, c.want, deliverystats.Bucket(c.d), "lateness %s", c.d)
	}
	require.Equal(t, 16, deliverystats.NumBuckets)
}

func TestBucketMatchesBounds(t *testing.T) {
	t.Parallel()
	for i, b := range deliverystats.Bounds {
		require.Equal(t, i, deliverystats.Bucket(b-1), "just below bound %s", b)
		require.Equal(t, i+1, deliverystats.Bucket(b), "at bound %s", b)
		if i > 0 {
			require.Greater(t, b, deliverystats.Bounds[i-1], "bounds must increase")
		}
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	buckets := make([]int64, deliverystats.NumBuckets)
	buckets[0] = 90 // < 1 ms
	buckets[4] = 9  // 10-20 ms
	buckets[7] = 1  // 100-200 ms
	require.Equal(t, time.Millisecond, deliverystats.Percentile(buckets, 0.5))
	require.Equal(t, time.Millisecond, deliverystats.Percentile(buckets, 0.9))
	require.Equal(t, 20*time.Millisecond, deliverystats.Percentile(buckets, 0.91))
	require.Equal(t, 20*time.Millisecond, deliverystats.Percentile(buckets, 0.99))
	require.Equal(t, 200*time.Millisecond, deliverystats.Percentile(buckets, 1))
	require.Equal(t, 7, deliverystats.PercentileBucket(buckets, 0.995))
}

func TestPercentileEdges(t *testing.T) {
	t.Parallel()
	require.Equal(t, -1, deliverystats.PercentileBucket(nil, 0.99))
	require.Zero(t, deliverystats.Percentile(make([]int64, deliverystats.NumBuckets), 0.5))

	top := make([]int64, deliverystats.NumBuckets)
	top[deliverystats.NumBuckets-1] = 3
	require.Equal(t, deliverystats.NumBuckets-1, deliverystats.PercentileBucket(top, 0.5))
	require.Equal(t, time.Minute, deliverystats.Percentile(top, 0.5), "the last bucket reads as the last bound")

	// A short row (only the first buckets written) and p out of range.
	short := []int64{0, 0, 4}
	require.Equal(t, 5*time.Millisecond, deliverystats.Percentile(short, 0))
	require.Equal(t, 5*time.Millisecond, deliverystats.Percentile(short, 2))
}
