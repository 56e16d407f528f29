package browser

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bulkJob is the part of the BulkJob resource the test reads.
type bulkJob struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Total    int64  `json:"total"`
	Selected int64  `json:"selected"`
	Affected int64  `json:"affected"`
}

// startJob creates a cancel job over [from, from+span) through the API.
func (b *bundle) startJob(t *testing.T, from time.Time, span time.Duration) bulkJob {
	t.Helper()
	resp, raw := b.api().Do(t, http.MethodPost, "/v1/bulk-jobs", map[string]any{
		"action": "cancel", "startTime": from.Format(time.RFC3339), "endTime": from.Add(span).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "POST /v1/bulk-jobs: %s", raw)
	var out struct{ Data bulkJob }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}

// waitJob waits until the job is in state.
func (b *bundle) waitJob(t *testing.T, id, state string) bulkJob {
	t.Helper()
	var last bulkJob
	require.Eventually(t, func() bool {
		resp, raw := b.api().Do(t, http.MethodGet, "/v1/bulk-jobs/"+id, nil)
		var out struct{ Data bulkJob }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
			return false
		}
		last = out.Data
		return last.State == state
	}, 60*time.Second, 50*time.Millisecond, "bulk job %s never became %s", id, state)
	return last
}

// scheduleMany creates n hooks due a second apart from start, in batches.
func (b *bundle) scheduleMany(t *testing.T, n int, start time.Time) {
	t.Helper()
	for done := 0; done < n; {
		var hooks []map[string]any
		for ; len(hooks) < 1000 && done < n; done++ {
			hooks = append(hooks, map[string]any{"path": "/browser/bulk", "data": map[string]any{},
				"postAt": start.Add(time.Duration(done) * time.Second).Format(time.RFC3339)})
		}
		resp, raw := b.api().Do(t, http.MethodPost, "/v1/hooks/batch", map[string]any{"hooks": hooks})
		require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/hooks/batch: %s", raw)
	}
}

// TestBulkJobs covers the bulk jobs page: a job the gateway's runner
// completed shows its counts.
func TestBulkJobs(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	small := time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC)
	b.scheduleMany(t, 3, small)
	done := b.waitJob(t, b.startJob(t, small, time.Hour).ID, "completed")
	require.EqualValues(t, 3, done.Affected)
	tb := signedIn(t, b)
	page := b.overviewPath() + "/bulk-jobs"
	tb.open(page)
	tb.at("bulk-jobs", page, "#bulk-jobs")
	row := tb.text("#job-" + done.ID)
	require.Contains(t, row, "completed")
	require.Contains(t, row, "100%")
}

// TestBulkJobsCancel: a running job's Cancel button asks it to stop, which
// the list then says. The gateway runs no bulk jobs, so the job is running
// whatever the machine's speed.
func TestBulkJobsCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, options{noBulkJobs: true})
	waiting := b.startJob(t, time.Date(2036, 3, 1, 0, 0, 0, 0, time.UTC), time.Hour)
	tb := signedIn(t, b)
	page := b.overviewPath() + "/bulk-jobs"
	tb.open(page)
	tb.at("bulk-jobs", page, "#bulk-jobs")
	require.Equal(t, "running", tb.text("#job-"+waiting.ID+" .state"))
	tb.click("#job-" + waiting.ID + " button")
	tb.waitText("#cancelled", "Cancel asked for job "+waiting.ID)
	tb.shot("cancelled")
	require.Equal(t, "cancelling", tb.text("#job-"+waiting.ID+" .state"))
}
