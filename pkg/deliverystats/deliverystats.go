// Package deliverystats holds the lateness histogram of the dashboard's
// figures (docs/dashboard.md, "Figures"): its bucket bounds, which bucket a
// lateness falls in, and a percentile read from counts per bucket. The
// scheduler fills the buckets of delivery_minutes with Bucket and the
// gateway reads them with Percentile, so both agree on one set of bounds.
package deliverystats

import "time"

// Bounds are the upper bounds of the lateness buckets, in order: bucket i
// holds a lateness below Bounds[i]; the last bucket, NumBuckets-1, holds
// everything from the last bound up. Changing them changes the meaning of
// the rows already stored.
var Bounds = [...]time.Duration{
	1 * time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute,
}

// NumBuckets is the length of a row's lateness_buckets: one per bound and
// one above them all.
const NumBuckets = len(Bounds) + 1

// Steps are the lengths of time the figures are kept per (migration
// 00019): every delivery is counted once at each length, in the row of the
// step its attempt started in (steps aligned on UTC), so that the
// overview reads one row per shard and step of its range, never sums
// minutes: its 1h range is per minute, 24h per 5 minutes, 7d per hour.
var Steps = [...]time.Duration{time.Minute, 5 * time.Minute, time.Hour}

// Bucket is the bucket a lateness d falls in. A negative lateness (an
// attempt that started before its postAt, by clock skew) is in bucket 0.
func Bucket(d time.Duration) int {
	// A linear scan: 15 bounds, most latenesses land in the first few.
	for i, b := range Bounds {
		if d < b {
			return i
		}
	}
	return NumBuckets - 1
}

// Upper is the upper bound of bucket i. The last bucket has none: it
// answers the last bound, which it holds latenesses from (shown "> 60 s").
func Upper(i int) time.Duration {
	return Bounds[min(max(i, 0), len(Bounds)-1)]
}

// PercentileBucket is the bucket holding the p-th percentile (p in (0, 1],
// e.g. 0.99; clamped) of the latenesses counted in buckets, or -1 when
// nothing is counted. buckets may be shorter than NumBuckets (a row no first
// attempt was counted in has none).
func PercentileBucket(buckets []int64, p float64) int {
	var total int64
	for _, n := range buckets {
		total += n
	}
	if total == 0 {
		return -1
	}
	p = min(max(p, 0), 1)
	// The 1-based rank of the percentile: the smallest count whose share
	// of the total reaches p.
	exact := p * float64(total)
	rank := max(int64(exact), 1)
	if float64(rank) < exact {
		rank++
	}
	var seen int64
	for i, n := range buckets {
		if seen += n; seen >= rank {
			return i
		}
	}
	return len(buckets) - 1
}

// Percentile is the upper bound of the bucket holding the p-th percentile
// of the latenesses counted in buckets (the 99th at most 20 ms), 0 when nothing is
// counted. In the last bucket it is the last bound; PercentileBucket tells
// that case (NumBuckets-1) apart.
func Percentile(buckets []int64, p float64) time.Duration {
	i := PercentileBucket(buckets, p)
	if i < 0 {
		return 0
	}
	return Upper(i)
}
