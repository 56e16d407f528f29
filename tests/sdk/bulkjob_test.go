package sdk

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// TestABulkJobThroughTheSDK: the gateway's runner takes a job created
// through the SDK to its end; the dry run before it counts the same hooks
// and creates nothing, and a job that has ended cannot be cancelled.
func TestABulkJobThroughTheSDK(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	hooks := b.client.Hooks
	start := time.Now().UTC().Add(24 * time.Hour).Truncate(time.Second)
	var batch []sundial.ScheduleHookRequest
	for i := range 30 {
		tags := []string{"spring"}
		if i%3 == 0 {
			tags = nil // left out by the tag filter
		}
		batch = append(batch, sundial.ScheduleHookRequest{Path: "/campaign", Data: map[string]any{"i": i},
			PostAt: start.Add(time.Duration(i) * time.Minute), Tags: tags})
	}
	_, err := hooks.ScheduleBatch(b.ctx, sundial.ScheduleHooksRequest{Hooks: batch})
	require.NoError(t, err)
	req := sundial.BulkJobRequest{Action: sundial.BulkJobCancel, StartTime: start, EndTime: start.Add(time.Hour),
		EndpointKey: "/campaign", Tags: []string{"spring"}}

	dry, err := hooks.DryRunBulkJob(b.ctx, req)
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	require.EqualValues(t, 20, dry.Total)
	require.Len(t, dry.Sample, 10)
	require.Equal(t, start.Add(time.Minute), dry.Sample[0].PostAt.UTC(), "the earliest tagged hook first")
	jobs, err := hooks.ListBulkJobs(b.ctx, sundial.ListBulkJobsParams{})
	require.NoError(t, err)
	require.Empty(t, jobs.Data, "a dry run creates no job")

	job, err := hooks.CreateBulkJob(b.ctx, req)
	require.NoError(t, err)
	require.Equal(t, sundial.BulkJobRunning, job.State)
	require.EqualValues(t, 20, job.Total)
	require.Equal(t, "/campaign", job.Selection.EndpointKey)
	require.Eventually(t, func() bool {
		job, err = hooks.BulkJob(b.ctx, job.ID)
		require.NoError(t, err)
		return job.Ended()
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, sundial.BulkJobCompleted, job.State)
	require.EqualValues(t, 20, job.Affected)
	require.Zero(t, job.Skipped)
	require.InDelta(t, 1.0, job.Progress, 1e-9)
	require.NotNil(t, job.FinishedAt)

	left, err := hooks.List(b.ctx, sundial.ListHooksParams{})
	require.NoError(t, err)
	require.Len(t, left.Data, 10, "the untagged hooks stay")
	var listed []string
	for j, err := range hooks.AllBulkJobs(b.ctx, sundial.ListBulkJobsParams{Limit: 1}) {
		require.NoError(t, err)
		listed = append(listed, j.ID)
	}
	require.Equal(t, []string{job.ID}, listed)

	_, err = hooks.CancelBulkJob(b.ctx, job.ID)
	var apiErr *sundial.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusConflict, apiErr.StatusCode)
	require.Equal(t, sundial.CodeConflict, apiErr.Code)
}
