package report

import (
	"math"
	"strings"
)

// Figures are the two numbers a comparison is about.
type Figures struct {
	DeliveriesPerSecond float64 `json:"deliveriesPerSecond"`
	LateP99Ms           float64 `json:"lateP99Ms"`
}

// Comparison is Sundial against the baseline in one delivery scenario of
// the same run.
type Comparison struct {
	Scenario string  `json:"scenario"`
	Sundial  Figures `json:"sundial"`
	Baseline Figures `json:"baseline"`
	// DeliveriesPerSecondRatio is Sundial's over the baseline's (above 1:
	// Sundial pushes more); LateP99Ratio is Sundial's lateness p99 over the
	// baseline's (below 1: Sundial is less late).
	DeliveriesPerSecondRatio float64 `json:"deliveriesPerSecondRatio"`
	LateP99Ratio             float64 `json:"lateP99Ratio"`
	// OK says both runs delivered every hook and none early.
	OK bool `json:"ok"`
}

// figures are a row's two numbers; a realistic row's lateness is its
// healthy paths', the figure of its goal.
func figures(r Result) Figures {
	return Figures{DeliveriesPerSecond: r.DeliveriesPerSecond, LateP99Ms: lateP99(r)}
}

func lateP99(r Result) float64 {
	if r.Realistic != nil {
		return r.Realistic.Healthy.P99Ms
	}
	return r.Check.Lateness.P99Ms
}

// Compare pairs each scenario's sundial and baseline rows, in the order
// the scenarios ran.
func Compare(results []Result) []Comparison {
	var out []Comparison
	for _, s := range results {
		if s.System != "sundial" {
			continue
		}
		for _, b := range results {
			if b.System != "baseline" || b.Scenario != s.Scenario {
				continue
			}
			out = append(out, Comparison{
				Scenario: s.Scenario, Sundial: figures(s), Baseline: figures(b),
				DeliveriesPerSecondRatio: ratio(s.DeliveriesPerSecond, b.DeliveriesPerSecond),
				LateP99Ratio:             ratio(lateP99(s), lateP99(b)),
				OK:                       s.OK && b.OK,
			})
		}
	}
	return out
}

// CompareWithSteady sets VsSteady of every scale row that has a steady row
// of the same system: lateness p50, p99 and max and deliveries per second
// over the steady figures.
func CompareWithSteady(results []Result) {
	for i, r := range results {
		if !strings.HasPrefix(r.Scenario, "scale-") {
			continue
		}
		for _, s := range results {
			if s.Scenario != "steady" || s.System != r.System {
				continue
			}
			results[i].VsSteady = map[string]float64{
				"lateP50":             ratio(r.Check.Lateness.P50Ms, s.Check.Lateness.P50Ms),
				"lateP99":             ratio(r.Check.Lateness.P99Ms, s.Check.Lateness.P99Ms),
				"lateMax":             ratio(r.Check.Lateness.MaxMs, s.Check.Lateness.MaxMs),
				"deliveriesPerSecond": ratio(r.DeliveriesPerSecond, s.DeliveriesPerSecond),
			}
		}
	}
}

// ratio is a over b to two decimals, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}
