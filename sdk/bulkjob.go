package sundial

import (
	"context"
	"errors"
	"iter"
	"net/url"
	"strconv"
	"time"
)

// The actions of a bulk job (BulkJobRequest.Action), each the bulk action
// of the same name over the whole selection.
const (
	BulkJobRetry  = "retry"
	BulkJobReplay = "replay"
	BulkJobCancel = "cancel"
)

// BulkJobState is where a bulk job stands.
type BulkJobState string

// The states of a bulk job.
const (
	// BulkJobRunning: a gateway works on the job, or will; it survives a
	// gateway's restart.
	BulkJobRunning BulkJobState = "running"
	// BulkJobCancelling: a cancel was asked; the job stops before its next
	// batch.
	BulkJobCancelling BulkJobState = "cancelling"
	// BulkJobCompleted: every hook of the selection was read.
	BulkJobCompleted BulkJobState = "completed"
	// BulkJobCancelled: the job stopped on a cancel; what it did stays done.
	BulkJobCancelled BulkJobState = "cancelled"
	// BulkJobFailed: the job stopped on an error (BulkJob.Error); what it
	// did stays done.
	BulkJobFailed BulkJobState = "failed"
)

// BulkJobRequest starts a bulk job: Action over every hook with
// StartTime <= postAt < EndTime, optionally narrowed by EndpointKey,
// SequenceID and Tags, however many there are (a bulk action takes at
// most 1,000).
type BulkJobRequest struct {
	// Action is BulkJobRetry, BulkJobReplay or BulkJobCancel.
	Action    string    `json:"action"`
	StartTime time.Time `json:"startTime,omitzero"`
	EndTime   time.Time `json:"endTime,omitzero"`
	// EndpointKey selects hooks by path: with a query string it matches
	// exactly, without one it matches the path whatever its query.
	EndpointKey string `json:"endpointKey,omitempty"`
	SequenceID  string `json:"sequenceID,omitempty"`
	// Tags selects the hooks of the range that have every one of them.
	Tags []string `json:"tags,omitempty"`
	// Edit gives the hooks a retry moves, or the copies a replay creates,
	// new values (not with BulkJobCancel).
	Edit *HookEdit `json:"edit,omitempty"`
	// DryRun is set by DryRunBulkJob, whose answer is a count and a
	// sample rather than a job; CreateBulkJob refuses it.
	DryRun bool `json:"dryRun,omitempty"`
}

// BulkJob is a bulk job: its selection, its state, and its counts, which
// are the final report once it has ended.
type BulkJob struct {
	ID        string           `json:"id"`
	Action    string           `json:"action"`
	Selection BulkJobSelection `json:"selection"`
	Edit      *HookEdit        `json:"edit,omitempty"`
	State     BulkJobState     `json:"state"`
	// Total is the hooks of the selection in the action's statuses when
	// the job was created: an estimate, as hooks change while it runs.
	Total int64 `json:"total"`
	// Selected is the hooks the job has read so far.
	Selected int64 `json:"selected"`
	// Affected is the hooks acted on so far (for a replay, the copies
	// created).
	Affected int64 `json:"affected"`
	// Skipped is Selected - Affected: hooks that had changed state
	// meanwhile, or that the key rule held back. Final once the job ended.
	Skipped int64 `json:"skipped"`
	Batches int   `json:"batches"`
	// Progress estimates how far the job is, from 0 to 1 (1 once
	// completed).
	Progress float64       `json:"progress"`
	Error    *BulkJobError `json:"error,omitempty"`
	// CreatedAt, UpdatedAt (the last batch, cancel or end) and FinishedAt
	// (nil until the job ends).
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

// Ended reports whether the job will not run again: completed, cancelled
// or failed.
func (j BulkJob) Ended() bool {
	switch j.State {
	case BulkJobCompleted, BulkJobCancelled, BulkJobFailed:
		return true
	}
	return false
}

// BulkJobSelection is a job's selection, as it was created.
type BulkJobSelection struct {
	StartTime   time.Time `json:"startTime"`
	EndTime     time.Time `json:"endTime"`
	EndpointKey string    `json:"endpointKey,omitempty"`
	SequenceID  string    `json:"sequenceID,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
}

// BulkJobError is why a job failed: Code "quota_exhausted" (a replay's
// copies would pass the quota's hard cap) or "internal".
type BulkJobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BulkJobDryRun is what a job would act on now; no job was created.
type BulkJobDryRun struct {
	DryRun bool `json:"dryRun"`
	// Total is the hooks of the selection in the action's statuses, before
	// the key rule and the quota.
	Total int64 `json:"total"`
	// Sample is the first 10 of them, earliest postAt first.
	Sample []BulkSampleHook `json:"sample"`
}

// ListBulkJobsParams pages a listing of bulk jobs; zero fields are left
// out.
type ListBulkJobsParams struct {
	// Limit is the page size, 1 to 100 (default 20).
	Limit int
	// Cursor is the previous page's NextCursor (AllBulkJobs follows it for
	// you).
	Cursor string
}

func (p ListBulkJobsParams) values() url.Values {
	v := url.Values{}
	if p.Limit != 0 {
		v.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		v.Set("cursor", p.Cursor)
	}
	return v
}

// BulkJobPage is one page of bulk jobs, newest first.
type BulkJobPage struct {
	Data []BulkJob `json:"data"`
	Meta ListMeta  `json:"meta"`
}

// ErrDryRunJob is a CreateBulkJob with DryRun set: a dry run's answer is
// not a job (use DryRunBulkJob).
var ErrDryRunJob = errors.New("sundial: CreateBulkJob with DryRun: use DryRunBulkJob")

// CreateBulkJob starts a bulk job (POST /v1/bulk-jobs) and returns it,
// running; the work happens after the answer: follow it with BulkJob. A
// project with 10 unfinished jobs gets an *APIError with status 409. It is
// sent once: a repeat after a failure that reached the server would start
// a second job.
func (s *HookService) CreateBulkJob(ctx context.Context, req BulkJobRequest) (BulkJob, error) {
	if req.DryRun {
		return BulkJob{}, ErrDryRunJob
	}
	return get[BulkJob](ctx, s.c, call{method: "POST", path: "/bulk-jobs", body: req})
}

// DryRunBulkJob answers what a job of req would act on now (POST
// /v1/bulk-jobs with dryRun), creating nothing; it is retried like a read.
func (s *HookService) DryRunBulkJob(ctx context.Context, req BulkJobRequest) (BulkJobDryRun, error) {
	req.DryRun = true
	return get[BulkJobDryRun](ctx, s.c, call{method: "POST", path: "/bulk-jobs", body: req, idempotent: true})
}

// BulkJob returns a job (GET /v1/bulk-jobs/{id}); another project's, or an
// unknown id, is an *APIError with status 404.
func (s *HookService) BulkJob(ctx context.Context, id string) (BulkJob, error) {
	p, err := pathOf("/bulk-jobs", "id", id)
	if err != nil {
		return BulkJob{}, err
	}
	return get[BulkJob](ctx, s.c, call{method: "GET", path: p})
}

// ListBulkJobs returns one page of the project's jobs, newest first (GET
// /v1/bulk-jobs).
func (s *HookService) ListBulkJobs(ctx context.Context, p ListBulkJobsParams) (BulkJobPage, error) {
	var page BulkJobPage
	err := s.c.do(ctx, call{method: "GET", path: "/bulk-jobs", query: p.values()}, &page)
	return page, err
}

// AllBulkJobs walks every page of the project's jobs from p.Cursor on and
// yields each. An error is yielded once, with a zero BulkJob, and ends the
// walk.
func (s *HookService) AllBulkJobs(ctx context.Context, p ListBulkJobsParams) iter.Seq2[BulkJob, error] {
	return walk(func(cursor string) ([]BulkJob, string, error) {
		p.Cursor = cursor
		page, err := s.ListBulkJobs(ctx, p)
		return page.Data, page.Meta.NextCursor, err
	}, p.Cursor)
}

// CancelBulkJob asks a running job to stop before its next batch and
// returns it, cancelling (POST /v1/bulk-jobs/{id}/cancel); what it did
// stays done. A job that has ended is an *APIError with status 409. It is
// sent once: the job may end between a cancel that went through and its
// repeat, which would then be that 409.
func (s *HookService) CancelBulkJob(ctx context.Context, id string) (BulkJob, error) {
	p, err := pathOf("/bulk-jobs", "id", id)
	if err != nil {
		return BulkJob{}, err
	}
	return get[BulkJob](ctx, s.c, call{method: "POST", path: p + "/cancel"})
}
