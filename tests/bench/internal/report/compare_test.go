package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/check"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

func row(scenario, system string, perSecond, p99 float64, rss map[string]float64) report.Result {
	return report.Result{
		Scenario: scenario, System: system, DeliveriesPerSecond: perSecond, OK: true, PeakRSSMiB: rss,
		Check: check.Outcome{Lateness: stats.Summary{P50Ms: p99 / 2, P99Ms: p99, MaxMs: p99 * 2}},
	}
}

func TestCompareAndSteadyRatios(t *testing.T) {
	t.Parallel()
	results := []report.Result{
		row("burst", "sundial", 3000, 400, map[string]float64{"scheduler": 40, "dispatcher": 30}),
		row("burst", "baseline", 1500, 800, map[string]float64{"riverbase": 50}),
		row("steady", "sundial", 500, 20, map[string]float64{"scheduler": 90}),
		row("steady", "baseline", 500, 100, nil),
		row("scale-1m", "sundial", 500, 22, map[string]float64{"scheduler": 45, "dispatcher": 35}),
		row("scale-1m", "baseline", 250, 300, map[string]float64{"riverbase": 60}),
	}
	results[3].OK = false
	report.CompareWithSteady(results)
	require.Nil(t, results[0].VsSteady, "only scale rows")
	require.Equal(t, map[string]float64{"lateP50": 1.1, "lateP99": 1.1, "lateMax": 1.1, "deliveriesPerSecond": 1}, results[4].VsSteady)
	require.Equal(t, 3.0, results[5].VsSteady["lateP99"], "each system against its own steady run")
	require.Equal(t, 0.5, results[5].VsSteady["deliveriesPerSecond"])

	cmp := report.Compare(results)
	require.Len(t, cmp, 3)
	require.Equal(t, "burst", cmp[0].Scenario)
	require.Equal(t, 2.0, cmp[0].DeliveriesPerSecondRatio)
	require.Equal(t, 0.5, cmp[0].LateP99Ratio)
	require.True(t, cmp[0].OK)
	require.False(t, cmp[1].OK, "the baseline's steady run failed")
	require.Equal(t, 0.2, cmp[1].LateP99Ratio)

	rep := report.Report{Results: results, Comparisons: cmp}
	require.Equal(t, map[string]float64{"scheduler": 45, "dispatcher": 35}, rep.MemoryPeaks("sundial"), "burst and scale rows, not steady")
	require.Equal(t, map[string]float64{"riverbase": 60}, rep.MemoryPeaks("baseline"))
	var out bytes.Buffer
	rep.PrintTable(&out)
	require.Contains(t, out.String(), "Sundial / baseline")
	require.Contains(t, out.String(), "Memory, baseline: peak RSS MiB over burst and scale: riverbase 60.0")
}
