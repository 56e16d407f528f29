package sundial

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bulkJobJSON is a job as the API shows it: id, state and the counts.
func bulkJobJSON(id, state string, selected int) string {
	return fmt.Sprintf(`{"id":%q,"action":"retry","selection":{"startTime":"2030-01-01T00:00:00Z","endTime":"2030-01-02T00:00:00Z","endpointKey":"/orders","tags":["a"]},`+
		`"edit":{"path":"/v2","data":{"v":2}},"state":%q,"total":2500,"selected":%d,"affected":%d,"skipped":1,"batches":3,"progress":0.4,`+
		`"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:01:00Z"}`, id, state, selected, selected-1)
}

func TestCreateBulkJobSendsTheSelectionAndReadsTheJob(t *testing.T) {
	t.Parallel()
	s := setup(t, answer{status: http.StatusAccepted, header: map[string]string{"Location": "/v1/bulk-jobs/j1"},
		body: `{"data":` + bulkJobJSON("j1", "running", 1000) + `}`})
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	job, err := s.client.Hooks.CreateBulkJob(context.Background(), BulkJobRequest{
		Action: BulkJobRetry, StartTime: start, EndTime: start.Add(24 * time.Hour), EndpointKey: "/orders", Tags: []string{"a"},
		Edit: &HookEdit{Path: "/v2", Data: map[string]any{"v": 2}},
	})
	require.NoError(t, err)
	require.JSONEq(t, `{"action":"retry","startTime":"2030-01-01T00:00:00Z","endTime":"2030-01-02T00:00:00Z",`+
		`"endpointKey":"/orders","tags":["a"],"edit":{"path":"/v2","data":{"v":2}}}`, s.body(0))
	require.Equal(t, "/v1/bulk-jobs", s.requests()[0].URL.Path)
	require.Equal(t, "j1", job.ID)
	require.Equal(t, BulkJobRunning, job.State)
	require.False(t, job.Ended())
	require.Equal(t, BulkJobSelection{StartTime: start, EndTime: start.Add(24 * time.Hour), EndpointKey: "/orders", Tags: []string{"a"}}, job.Selection)
	require.Equal(t, "/v2", job.Edit.Path)
	require.EqualValues(t, 2500, job.Total)
	require.EqualValues(t, 1000, job.Selected)
	require.EqualValues(t, 999, job.Affected)
	require.EqualValues(t, 1, job.Skipped)
	require.InDelta(t, 0.4, job.Progress, 1e-9)
	require.Nil(t, job.FinishedAt)

	_, err = s.client.Hooks.CreateBulkJob(context.Background(), BulkJobRequest{Action: BulkJobCancel, DryRun: true})
	require.ErrorIs(t, err, ErrDryRunJob)
	require.Len(t, s.requests(), 1, "a dry run is not sent as a job")
}

// TestACreateIsSentOnceAndADryRunIsRetried: a create that may have gone
// through is not repeated (a second job would start); a dry run changes
// nothing and is retried.
func TestACreateIsSentOnceAndADryRunIsRetried(t *testing.T) {
	t.Parallel()
	busy := answer{status: http.StatusServiceUnavailable, body: `{"error":"busy","code":"unavailable","requestId":"r"}`}
	s := setup(t, busy, busy, answer{status: http.StatusOK,
		body: `{"data":{"dryRun":true,"total":42,"sample":[{"id":"h1","path":"/x","status":"pending","postAt":"2030-01-01T00:00:00Z"}]}}`})
	_, err := s.client.Hooks.CreateBulkJob(context.Background(), BulkJobRequest{Action: BulkJobCancel})
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	require.Len(t, s.requests(), 1)

	dry, err := s.client.Hooks.DryRunBulkJob(context.Background(), BulkJobRequest{Action: BulkJobCancel})
	require.NoError(t, err)
	require.Len(t, s.requests(), 3, "the dry run, retried once")
	require.JSONEq(t, `{"action":"cancel","dryRun":true}`, s.body(2))
	require.True(t, dry.DryRun)
	require.EqualValues(t, 42, dry.Total)
	require.Equal(t, []BulkSampleHook{{ID: "h1", Path: "/x", Status: StatusPending, PostAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}, dry.Sample)
}

// TestGetAndCancelABulkJob: the id travels escaped in the path, an empty
// one is refused before any request, and a cancel is not repeated.
func TestGetAndCancelABulkJob(t *testing.T) {
	t.Parallel()
	s := setup(t,
		answer{status: http.StatusOK, body: `{"data":` + bulkJobJSON("j/1", "completed", 2500) + `}`},
		answer{status: http.StatusServiceUnavailable, body: `{"error":"busy","code":"unavailable","requestId":"r"}`},
		answer{status: http.StatusConflict, body: `{"error":"the bulk job has already ended (completed)","code":"conflict","requestId":"r"}`})
	job, err := s.client.Hooks.BulkJob(context.Background(), "j/1")
	require.NoError(t, err)
	require.True(t, job.Ended())
	_, err = s.client.Hooks.CancelBulkJob(context.Background(), "j/1")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	_, err = s.client.Hooks.CancelBulkJob(context.Background(), "j/1")
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, CodeConflict, apiErr.Code)
	reqs := s.requests()
	require.Len(t, reqs, 3, "the cancel was not retried")
	require.Equal(t, http.MethodGet, reqs[0].Method)
	require.Equal(t, "/v1/bulk-jobs/j%2F1", reqs[0].URL.EscapedPath())
	require.Equal(t, http.MethodPost, reqs[1].Method)
	require.Equal(t, "/v1/bulk-jobs/j%2F1/cancel", reqs[1].URL.EscapedPath())

	_, err = s.client.Hooks.BulkJob(context.Background(), "")
	require.ErrorIs(t, err, ErrMissingID)
	_, err = s.client.Hooks.CancelBulkJob(context.Background(), "")
	require.ErrorIs(t, err, ErrMissingID)
	require.Len(t, s.requests(), 3)
}

func bulkJobPage(ids []string, next string) answer {
	body := `{"data":[`
	for i, id := range ids {
		if i > 0 {
			body += ","
		}
		body += bulkJobJSON(id, "completed", 2500)
	}
	body += fmt.Sprintf(`],"meta":{"totalItems":3,"totalItemsCapped":false,"nextCursor":%q}}`, next)
	return answer{status: http.StatusOK, body: body}
}

func TestAllBulkJobsFollowsTheCursor(t *testing.T) {
	t.Parallel()
	s := setup(t, bulkJobPage([]string{"c", "b"}, "k1"), bulkJobPage([]string{"a"}, ""))
	var got []string
	for j, err := range s.client.Hooks.AllBulkJobs(context.Background(), ListBulkJobsParams{Limit: 2}) {
		require.NoError(t, err)
		got = append(got, j.ID)
	}
	require.Equal(t, []string{"c", "b", "a"}, got)
	reqs := s.requests()
	require.Len(t, reqs, 2, "pages fetched")
	for i, wantCursor := range []string{"", "k1"} {
		q := reqs[i].URL.Query()
		require.Equal(t, "/v1/bulk-jobs", reqs[i].URL.Path)
		require.Equal(t, "2", q.Get("limit"), "page %d query %v", i, q)
		require.Equal(t, wantCursor, q.Get("cursor"), "page %d query %v", i, q)
	}
}
