package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/cmd/sundial/cli"
	sundial "github.com/sundial-run/sundial/sdk"
)

func TestSequencesCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startScheduler()
	b.login()
	seq, err := b.sdkClient().Sequences.Create(context.Background(), sundial.SequenceRequest{
		Name:     "nightly-etl",
		Schedule: sundial.SequenceSchedule{Frequency: "daily", Timezone: "Europe/Paris", Time: sundial.At(9, 0)},
		Steps:    []sundial.SequenceStep{{Name: "extract", Path: "/etl/extract", Data: map[string]any{"n": 1}}},
	})
	require.NoError(t, err)

	var page sundial.SequencePage
	out := b.ok("sequences", "list", "--output", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Data, 1)
	require.Equal(t, seq.ID, page.Data[0].ID)
	require.Regexp(t, `nightly-etl\s+active\s+daily 09:00 Europe/Paris`, b.ok("sequences", "list"))

	// By name and by id.
	for _, ref := range []string{"nightly-etl", seq.ID} {
		var got sundial.Sequence
		out = b.ok("sequences", "get", ref, "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Equal(t, seq.ID, got.ID)
	}
	res := b.run("", "sequences", "get", "nope")
	require.Equal(t, cli.ExitError, res.code)
	require.Contains(t, res.stderr, `sequence "nope": no sequence of the project has this name or id`)
	res = b.run("", "sequences", "get")
	require.Equal(t, cli.ExitUsage, res.code)

	var preview sundial.SequencePreview
	out = b.ok("sequences", "preview", "nightly-etl", "--count", "3", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &preview), out)
	require.Len(t, preview.RunTimes, 3)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	for _, rt := range preview.RunTimes {
		require.Equal(t, 9, rt.In(paris).Hour(), rt)
	}
	res = b.run("", "sequences", "preview", "nightly-etl", "--count", "101")
	require.Equal(t, cli.ExitUsage, res.code)
	require.Contains(t, res.stderr, "--count: ")

	var paused sundial.Sequence
	out = b.ok("sequences", "pause", "nightly-etl", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &paused), out)
	require.Equal(t, sundial.SequencePaused, paused.Status)
	require.Contains(t, b.ok("sequences", "resume", seq.ID), "nightly-etl is active")

	var tr sundial.SequenceTrigger
	out = b.ok("sequences", "trigger", "nightly-etl", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &tr), out)
	require.Equal(t, seq.ID, tr.SequenceID)
	require.NotEmpty(t, tr.RunID)

	// The scheduler makes the run the trigger asked for.
	var runs sundial.SequenceRunPage
	require.Eventually(t, func() bool {
		// No require in here: it runs on another goroutine.
		res := b.run("", "sequences", "runs", "nightly-etl", "--all", "-o", "json")
		return res.code == cli.ExitOK && json.Unmarshal([]byte(res.stdout), &runs) == nil && len(runs.Data) == 1
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, tr.RunID, runs.Data[0].ID)
	require.Equal(t, "manual", runs.Data[0].Trigger)
	require.Equal(t, "extract", runs.Data[0].Steps[0].Name)
	require.Contains(t, b.ok("sequences", "runs", "nightly-etl"), tr.RunID)
}
