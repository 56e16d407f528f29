package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

// The bulk-job row is compared with the same system's steady row of the
// run, when it passed, and printed with the job's figures.
func TestBulkJobAgainstSteady(t *testing.T) {
	t.Parallel()
	bulkJob := func() report.Result {
		r := row("bulk-job", "sundial", 500, 30, nil)
		r.BulkJob = &report.BulkJob{
			Rows: 1000, State: "completed", Total: 1200, Selected: 1200, Affected: 1200, Batches: 2,
			StartMs: 10000, EndMs: 12500, DurationSeconds: 2.5, WallSeconds: 2.6, HooksPerSecond: 480,
			Flow: stats.Summary{P50Ms: 5, P99Ms: 30, MaxMs: 60}, During: stats.Summary{Count: 1250, P50Ms: 6, P99Ms: 40, MaxMs: 60},
			Outside: stats.Summary{Count: 8750, P50Ms: 5, P99Ms: 20, MaxMs: 50}, FlowRate: 500, FlowSeconds: 20,
		}
		return r
	}
	alone := []report.Result{bulkJob()}
	report.CompareBulkJob(alone)
	require.Zero(t, alone[0].BulkJob.DuringVsSteadyP99, "no steady row: the figure stands alone")

	failed := row("steady", "sundial", 500, 10, nil)
	failed.OK = false
	results := []report.Result{
		failed,
		row("steady", "baseline", 500, 100, nil),
		row("steady", "sundial", 500, 20, nil),
		bulkJob(),
	}
	report.CompareBulkJob(results)
	b := results[3].BulkJob
	require.Equal(t, 20.0, b.SteadyP99Ms, "the same system's steady that passed")
	require.Equal(t, 2.0, b.DuringVsSteadyP99)
	require.True(t, b.OK())
	require.Empty(t, b.Problems())

	var out bytes.Buffer
	report.Report{Results: results}.PrintTable(&out)
	text := out.String()
	require.Contains(t, text, "Bulk job (sundial): cancel over 1000 far-future hooks, beside 500 plain hooks/s for 20 s")
	require.Contains(t, text, "job: completed; total 1200, selected 1200, affected 1200, 2 batches; 2.5 s (createdAt to finishedAt; 2.6 s wall), 480 hooks/s; from 10.0 s to 12.5 s of the flow")
	require.Contains(t, text, "the 1250 due while the job ran: p50 6.0 ms, p99 40.0 ms (2.00x steady's 20.0 ms)")

	b.State, b.Affected = "failed", 1100
	require.False(t, b.OK())
	require.Len(t, b.Problems(), 2)
	b.State, b.Affected, b.Selected = "completed", 900, 900
	require.False(t, b.OK(), "fewer selected than loaded")
	require.Len(t, b.Problems(), 1)
}
