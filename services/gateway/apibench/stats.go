package apibench

import (
	"math"
	"slices"
	"time"
)

// Latency summarises a set of latencies.
type Latency struct {
	Count         int
	P50, P99, Max time.Duration
}

// Summarize computes the nearest-rank percentiles of latencies (the
// smallest value at or above the given fraction of them), which are always
// latencies that were observed.
func Summarize(latencies []time.Duration) Latency {
	if len(latencies) == 0 {
		return Latency{}
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	return Latency{
		Count: len(sorted),
		P50:   percentile(sorted, 0.50),
		P99:   percentile(sorted, 0.99),
		Max:   sorted[len(sorted)-1],
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// ms is a duration in milliseconds, for reports.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*1000) / 1000
}
