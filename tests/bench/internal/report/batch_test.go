package report_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
)

// TestBatchGoals checks the batch intake's goals against its figures, with
// the single create's from a schedule row of the same run, and without one.
func TestBatchGoals(t *testing.T) {
	t.Parallel()
	results := []report.Result{
		{Scenario: "schedule", OK: true, Create: load.Created{PerSecond: 7999}},
		{Scenario: "batch-intake", OK: true, Create: load.Created{PerSecond: 50_000}, Batch: &report.Batch{VsCopy: 0.49}},
	}
	report.BatchGoals(results)
	goals := results[1].Batch.Goals
	require.Len(t, goals, 3)
	require.Equal(t, []bool{true, false, false}, []bool{goals[0].Met, goals[1].Met, goals[2].Met})
	require.InDelta(t, 7999, goals[2].Value, 0)

	alone := []report.Result{{Scenario: "batch-intake", OK: true, Create: load.Created{PerSecond: 49_999}, Batch: &report.Batch{VsCopy: 0.5}}}
	report.BatchGoals(alone)
	require.Len(t, alone[0].Batch.Goals, 2, "no single-create goal without a schedule row")
	require.False(t, alone[0].Batch.Goals[0].Met)
	require.True(t, alone[0].Batch.Goals[1].Met)
}
