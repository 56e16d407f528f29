package sdk

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// weekdayChain is the docs' example sequence: weekdays at 09:00 in Paris,
// three steps in a chain.
func weekdayChain(name string) sundial.SequenceRequest {
	return sundial.SequenceRequest{
		Name: name,
		Schedule: sundial.SequenceSchedule{
			Frequency: sundial.FrequencyWeekly, Timezone: "Europe/Paris", Time: sundial.At(9, 0),
			DaysOfWeek: []string{"mon", "tue", "wed", "thu", "fri"},
		},
		Steps: []sundial.SequenceStep{
			{Name: "extract", Path: "/etl/extract", Data: map[string]any{"source": "orders"}},
			{Name: "transform", Path: "/etl/transform", Data: map[string]any{}, DependsOn: []string{"extract"}},
			{Name: "load", Path: "/etl/load", Data: map[string]any{}, DependsOn: []string{"transform"},
				RetryOverride: &sundial.RetryOverride{MinRetries: 3, DelaySecs: 30, Strategy: sundial.StrategyFixed}},
		},
	}
}

func TestSequencesThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	ctx := b.ctx
	seqs := b.client.Sequences

	created, err := seqs.Create(ctx, weekdayChain("etl"))
	require.NoError(t, err)
	require.Equal(t, sundial.SequenceActive, created.Status)
	require.Equal(t, sundial.CatchUpLatest, created.CatchUp)
	require.Equal(t, map[string]any{"source": "orders"}, created.Steps[0].Data)
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	require.Equal(t, 9, created.NextRunAt.In(paris).Hour())
	_, err = seqs.Create(ctx, weekdayChain("etl"))
	apiErr := requireAPIError(t, err, http.StatusConflict, sundial.CodeConflict)
	_, named := apiErr.Field("name")
	require.True(t, named)

	got, err := seqs.Get(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, created, got)
	found, err := seqs.FindByName(ctx, "etl")
	require.NoError(t, err)
	require.Equal(t, created.ID, found.ID)
	_, err = seqs.FindByName(ctx, "nope")
	require.ErrorIs(t, err, sundial.ErrSequenceNotFound)

	// Replace from the sequence's own definition.
	req := got.Request()
	req.Schedule = sundial.SequenceSchedule{Frequency: sundial.FrequencyHourly, Timezone: "UTC", Time: sundial.AtMinute(15)}
	replaced, err := seqs.Replace(ctx, created.ID, req)
	require.NoError(t, err)
	require.Equal(t, 15, replaced.NextRunAt.Minute())
	require.Equal(t, created.StartAt, replaced.StartAt)

	paused, err := seqs.Pause(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, sundial.SequencePaused, paused.Status)
	require.True(t, paused.NextRunAt.IsZero())
	resumed, err := seqs.Resume(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, sundial.SequenceActive, resumed.Status)

	tr, err := seqs.Trigger(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, created.ID, tr.SequenceID)
	require.NotEmpty(t, tr.RunID)
	runs, err := seqs.Runs(ctx, created.ID, sundial.ListSequencesParams{})
	require.NoError(t, err)
	require.Empty(t, runs.Data, "no scheduler runs in this test: the trigger is a request")
	for run, err := range seqs.AllRuns(ctx, created.ID, sundial.ListSequencesParams{Limit: 1}) {
		require.NoError(t, err)
		t.Fatalf("a run: %+v", run)
	}

	times, err := seqs.Preview(ctx, created.ID, 3)
	require.NoError(t, err)
	require.Len(t, times, 3)
	require.Equal(t, resumed.NextRunAt, times[0])
	start := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	times, err = seqs.PreviewSchedule(ctx, sundial.SchedulePreviewRequest{
		Schedule: sundial.SequenceSchedule{Every: "1d"}, StartAt: start, Count: 2,
	})
	require.NoError(t, err)
	require.Equal(t, []time.Time{start, start.Add(24 * time.Hour)}, times)
	_, err = seqs.PreviewSchedule(ctx, sundial.SchedulePreviewRequest{Schedule: sundial.SequenceSchedule{Every: "1d"}})
	apiErr = requireAPIError(t, err, http.StatusBadRequest, sundial.CodeInvalidRequest)
	_, named = apiErr.Field("startAt")
	require.True(t, named)

	for i := range 3 {
		_, err := seqs.Create(ctx, weekdayChain("more-"+string(rune('a'+i))))
		require.NoError(t, err)
	}
	var names []string
	for s, err := range seqs.All(ctx, sundial.ListSequencesParams{Limit: 2}) {
		require.NoError(t, err)
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"more-c", "more-b", "more-a", "etl"}, names)

	require.NoError(t, seqs.Delete(ctx, created.ID))
	_, err = seqs.Get(ctx, created.ID)
	_ = requireAPIError(t, err, http.StatusNotFound, sundial.CodeNotFound)
	_, err = seqs.Get(ctx, "")
	require.ErrorIs(t, err, sundial.ErrMissingID)
}
