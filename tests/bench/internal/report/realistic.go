package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// Realistic is the realistic scenario's figures: one receiver whose paths
// answer as real ones do (healthy, failing, slow, hanging, async), every
// request's signature verified.
type Realistic struct {
	// Paths are the figures by kind of path.
	Paths []PathFigures `json:"paths"`
	// Healthy is the lateness of the first attempts of the hooks on
	// healthy paths (first arrival - postAt): the headline.
	// HealthyMissing counts those hooks that never arrived, which no
	// percentile shows: the goal is not met while any is missing.
	Healthy        stats.Summary `json:"healthy"`
	HealthyMissing int           `json:"healthyMissing"`
	// HealthyFlow and HealthyBurst split Healthy between the steady flow's
	// hooks and the bursts' (due at one instant, BurstSize at a time): a
	// burst's lateness is bounded below by how fast the machine drains it,
	// the flow's by how well slow and failing paths are kept apart.
	HealthyFlow  stats.Summary `json:"healthyFlow"`
	HealthyBurst stats.Summary `json:"healthyBurst"`
	// HealthyRetries is the lateness of the retries of the hooks on
	// healthy paths whose first attempt was answered 500 (retry arrival -
	// (the failed attempt's answer + the retry delay)); Retries counts
	// those hooks, RetriesMissing those whose retry never arrived and
	// RetriesEarly those whose retry arrived before it was due.
	HealthyRetries stats.Summary `json:"healthyRetries"`
	Retries        int           `json:"retries"`
	RetriesMissing int           `json:"retriesMissing"`
	RetriesEarly   int           `json:"retriesEarly"`
	RetryDelaySecs int           `json:"retryDelaySecs"`
	// Unexpected counts arrivals beyond what each hook's path calls for
	// (one, or two when the first attempt fails): the run's duplicates.
	Unexpected int `json:"unexpected"`
	// Verified counts the requests whose signature was checked, and
	// BadSignatures those refused for it (must be 0).
	Verified      int `json:"verified"`
	BadSignatures int `json:"badSignatures"`
	// Bursts are the bursts of BurstSize hooks within the flow; Hanging
	// says whether the hanging paths took their share (not in quick runs).
	Bursts    int    `json:"bursts"`
	BurstSize int    `json:"burstSize"`
	Hanging   bool   `json:"hanging"`
	Goals     []Goal `json:"goals"`
}

// PathFigures are one kind of path's hooks, their arrivals (retries
// included) and the lateness of their first arrivals.
type PathFigures struct {
	Kind     string        `json:"kind"`
	Paths    int           `json:"paths"`
	Hooks    int           `json:"hooks"`
	Arrivals int           `json:"arrivals"`
	Lateness stats.Summary `json:"lateness"`
}

// OK says nothing arrived early, every healthy retry arrived and every
// signature held.
func (r *Realistic) OK() bool {
	return r.RetriesMissing == 0 && r.RetriesEarly == 0 && r.BadSignatures == 0
}

func (r Report) printRealistic(w io.Writer) {
	for _, res := range r.Results {
		x := res.Realistic
		if x == nil {
			continue
		}
		fmt.Fprintf(w, "\nRealistic receiver (%s): %d bursts of %d, retry delay %d s, hanging paths %v; %d requests verified, %d bad signatures, %d unexpected arrivals\n",
			res.System, x.Bursts, x.BurstSize, x.RetryDelaySecs, x.Hanging, x.Verified, x.BadSignatures, x.Unexpected)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "paths\tn\thooks\tarrivals\tfirst late p50 ms\tp99 ms\tmax ms\t")
		for _, p := range x.Paths {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t\n", p.Kind, p.Paths, p.Hooks, p.Arrivals, p.Lateness.P50Ms, p.Lateness.P99Ms, p.Lateness.MaxMs)
		}
		h, rt := x.Healthy, x.HealthyRetries
		fmt.Fprintf(tw, "healthy, first attempts\t\t%d\t\t%.1f\t%.1f\t%.1f\t\n", h.Count, h.P50Ms, h.P99Ms, h.MaxMs)
		for _, part := range []struct {
			name string
			s    stats.Summary
		}{{"  of the steady flow", x.HealthyFlow}, {"  of the bursts", x.HealthyBurst}} {
			fmt.Fprintf(tw, "%s\t\t%d\t\t%.1f\t%.1f\t%.1f\t\n", part.name, part.s.Count, part.s.P50Ms, part.s.P99Ms, part.s.MaxMs)
		}
		fmt.Fprintf(tw, "healthy, retries (from due)\t\t%d\t\t%.1f\t%.1f\t%.1f\t\n", rt.Count, rt.P50Ms, rt.P99Ms, rt.MaxMs)
		_ = tw.Flush()
		fmt.Fprintf(w, "healthy hooks missing: %d; healthy retries: %d, %d missing, %d early\n", x.HealthyMissing, x.Retries, x.RetriesMissing, x.RetriesEarly)
		printGoals(w, x.Goals)
	}
}
