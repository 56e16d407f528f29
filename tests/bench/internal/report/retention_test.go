package report_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/logscan"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

func TestSplitDeletionsByWhereEachPassEnded(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	pass := func(s int, hooks int64) logscan.Record {
		return logscan.Record{At: t0.Add(time.Duration(s) * time.Second),
			Values: map[string]int64{"hooks_deleted": hooks, "attempts_deleted": hooks * 2}}
	}
	passes := []logscan.Record{pass(-2, 10000), pass(-1, 10000), pass(0, 5000), pass(30, 10000), pass(60, 7), pass(61, 1)}
	before, window, after := report.SplitDeletions(passes, t0, t0.Add(60*time.Second))
	require.Equal(t, report.Deleted{Hooks: 20000, Attempts: 40000, Passes: 2}, before)
	require.Equal(t, report.Deleted{Hooks: 15007, Attempts: 30014, Passes: 3}, window, "both ends belong to the window")
	require.Equal(t, report.Deleted{Hooks: 1, Attempts: 2, Passes: 1}, after)
}

func TestCompareRetentionSetsTheGoalOnTheOnRow(t *testing.T) {
	t.Parallel()
	off := row("retention-off", "sundial", 500, 10, nil)
	off.Retention = &report.Retention{Load: suite.ExpiredLoad{Hooks: 100, Attempts: 100}, OK: true,
		LoadAverage: []string{"1.00, 2.00, 3.00", "1.50, 2.00, 3.00"}}
	on := row("retention-on", "sundial", 500, 11.9, nil)
	on.Retention = &report.Retention{Cleaner: true, Load: suite.ExpiredLoad{Hooks: 100, Attempts: 100},
		Window: report.Deleted{Hooks: 60, Attempts: 60, Passes: 6}, OK: true}
	steady := row("steady", "sundial", 500, 1, nil)

	alone := []report.Result{steady, on}
	report.CompareRetention(alone)
	require.Nil(t, alone[1].Retention.VsOff, "no off row: nothing to compare with")
	require.Empty(t, alone[1].Retention.Goals)

	results := []report.Result{off, on}
	report.CompareRetention(results)
	require.Nil(t, results[0].Retention.VsOff, "only the on row")
	r := results[1].Retention
	require.Equal(t, map[string]float64{"lateP50": 1.19, "lateP99": 1.19, "lateMax": 1.19}, r.VsOff)
	require.Len(t, r.Goals, 1)
	require.True(t, r.Goals[0].Met, "1.19x is within 20 %")

	slower := row("retention-on", "sundial", 500, 12.1, nil)
	slower.Retention = &report.Retention{Cleaner: true}
	results = []report.Result{off, slower}
	report.CompareRetention(results)
	require.False(t, results[1].Retention.Goals[0].Met, "1.21x is not")

	var out bytes.Buffer
	report.Report{Results: []report.Result{off, on}}.PrintTable(&out)
	require.Contains(t, out.String(), "Retention, retention-on (sundial): cleaner on")
	require.Contains(t, out.String(), "in the 0.0 s window 60/60 (6)")
	require.Contains(t, out.String(), "load average (1, 5, 15 min): 1.00, 2.00, 3.00; then 1.50, 2.00, 3.00")
}
