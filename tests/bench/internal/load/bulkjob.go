package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// BulkJob is a bulk job as POST /v1/bulk-jobs and GET /v1/bulk-jobs/{id}
// show it (docs/choices.md, "Bulk jobs").
type BulkJob struct {
	ID     uuid.UUID `json:"id"`
	Action string    `json:"action"`
	State  string    `json:"state"`
	// Total is the selection's size counted at creation; Selected the
	// hooks its batches read so far, Affected those they acted on.
	Total      int64      `json:"total"`
	Selected   int64      `json:"selected"`
	Affected   int64      `json:"affected"`
	Batches    int64      `json:"batches"`
	CreatedAt  time.Time  `json:"createdAt"`
	FinishedAt *time.Time `json:"finishedAt"`
	// Error is a failed job's reason.
	Error *BulkJobError `json:"error,omitempty"`
}

// BulkJobError is a failed job's error.
type BulkJobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Ended says the job will do nothing more: completed, cancelled or
// failed.
func (j BulkJob) Ended() bool {
	switch j.State {
	case "completed", "cancelled", "failed":
		return true
	}
	return false
}

// bulkJobRequest is the body of POST /v1/bulk-jobs for a time range.
type bulkJobRequest struct {
	Action    string `json:"action"`
	StartTime string `json:"startTime"`
	EndTime   string `json:"endTime"`
}

// CreateBulkJob creates a job of action over the project's hooks whose
// postAt is in [start, end); the API answers 202 with the job, its work
// to come.
func (c *Client) CreateBulkJob(ctx context.Context, action string, start, end time.Time) (BulkJob, error) {
	body, err := json.Marshal(bulkJobRequest{Action: action, StartTime: start.UTC().Format(time.RFC3339Nano), EndTime: end.UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return BulkJob{}, err
	}
	return c.bulkJob(ctx, http.MethodPost, "/v1/bulk-jobs", body, http.StatusAccepted)
}

// GetBulkJob reads the project's job id.
func (c *Client) GetBulkJob(ctx context.Context, id uuid.UUID) (BulkJob, error) {
	return c.bulkJob(ctx, http.MethodGet, "/v1/bulk-jobs/"+id.String(), nil, http.StatusOK)
}

// bulkJob sends one request whose answer, of status want, holds a job.
func (c *Client) bulkJob(ctx context.Context, method, path string, body []byte, want int) (BulkJob, error) {
	status, raw, err := c.Do(ctx, method, path, body)
	if err != nil {
		return BulkJob{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if status != want {
		return BulkJob{}, fmt.Errorf("%s %s: %d: %s", method, path, status, raw)
	}
	var out struct {
		Data BulkJob `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return BulkJob{}, fmt.Errorf("%s %s answer: %w", method, path, err)
	}
	if out.Data.ID == uuid.Nil {
		return BulkJob{}, fmt.Errorf("%s %s answer has no job id: %s", method, path, raw)
	}
	return out.Data, nil
}
