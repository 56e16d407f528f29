// Package stats summarises durations (lateness, latencies) with
// nearest-rank percentiles, which are always values that were observed.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of durations; the JSON figures are milliseconds.
type Summary struct {
	Count int     `json:"count"`
	MinMs float64 `json:"minMs"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// MeanMs is the arithmetic mean.
	MeanMs float64 `json:"meanMs"`
}

// Summarize sorts a copy of ds and returns its percentiles; an empty set
// gives the zero Summary.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var sum float64
	for _, d := range sorted {
		sum += float64(d)
	}
	return Summary{
		Count:  len(sorted),
		MinMs:  Ms(sorted[0]),
		P50Ms:  Ms(Percentile(sorted, 0.50)),
		P90Ms:  Ms(Percentile(sorted, 0.90)),
		P99Ms:  Ms(Percentile(sorted, 0.99)),
		MaxMs:  Ms(sorted[len(sorted)-1]),
		MeanMs: Ms(time.Duration(sum / float64(len(sorted)))),
	}
}

// Percentile is the nearest-rank percentile p (0 to 1) of sorted: the
// smallest value that at least p of the values do not exceed.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Ms is d in milliseconds, rounded to the microsecond.
func Ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// PerSecond is n events over d, rounded to a tenth; 0 when d is not positive.
func PerSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(n)/d.Seconds()*10) / 10
}
