package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/load"
	"github.com/sundial-run/sundial/tests/bench/internal/report"
	"github.com/sundial-run/sundial/tests/bench/internal/stats"
)

func TestSequencesAgainstTheBurst(t *testing.T) {
	t.Parallel()
	due := row("sequences", "sundial", 4500, 9000, nil)
	due.Sequence = &report.Sequence{Due: &report.SequenceDue{Sequences: 100, Created: "api"}}
	memory := report.Result{Scenario: "sequence-memory", System: "sundial", OK: true,
		Sequence: &report.Sequence{Memory: &report.SequenceMemory{Rows: 1000, EmptyMiB: 30, LoadedMiB: 31, Ratio: 1.033}}}
	preview := report.Result{Scenario: "sequence-preview", System: "sundial", OK: true,
		Sequence: &report.Sequence{Preview: &report.SequencePreview{Count: 100,
			Stateless: load.Timed{Requests: 10, Latency: stats.Summary{P99Ms: 1.5}},
			Stored:    load.Timed{Requests: 10, Latency: stats.Summary{P99Ms: 2.5}, Errors: map[string]int{"500": 1}}}}}

	alone := []report.Result{due, memory, preview}
	report.CompareSequencesWithBurst(alone)
	require.Zero(t, alone[0].Sequence.Due.BurstDeliveriesPerSecond, "no burst row: the figure stands alone")
	require.Empty(t, alone[0].Sequence.Goals)

	burst := row("burst", "sundial", 5000, 6000, nil)
	failed := row("burst", "baseline", 9000, 6000, nil)
	failed.OK = false
	results := []report.Result{burst, failed, due, memory, preview}
	report.CompareSequencesWithBurst(results)
	d := results[2].Sequence.Due
	require.Equal(t, 5000.0, d.BurstDeliveriesPerSecond, "the same system's burst")
	require.Equal(t, 0.9, d.DeliveriesVsBurst)
	require.Len(t, results[2].Sequence.Goals, 1)
	require.True(t, results[2].Sequence.Goals[0].Met, "0.9x the burst is the goal")
	require.Nil(t, results[3].Sequence.Goals, "only the sequences row")

	var out bytes.Buffer
	report.Report{Results: results}.PrintTable(&out)
	text := out.String()
	require.Contains(t, text, "Sequences due at one slot")
	require.Contains(t, text, "with 1000 (x1.033")
	require.Contains(t, text, "GET /v1/sequences/{id}/preview")
	require.Contains(t, text, "500:1", "the preview's errors are shown")
	deliveries, _, _ := strings.Cut(text[strings.Index(text, "Deliveries"):], "\n\n")
	require.Contains(t, deliveries, "sequences")
	require.NotContains(t, deliveries, "sequence-memory", "the memory row is not a delivery")
	require.NotContains(t, deliveries, "sequence-preview", "nor the preview row")
}
