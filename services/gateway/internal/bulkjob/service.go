package bulkjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// MaxUnfinished bounds a project's jobs that are running or cancelling: a
// job costs a runner's time until it ends, so a project cannot queue an
// unbounded number of them ahead of others'.
const MaxUnfinished = 10

// MaxListed bounds a page of GET /v1/bulk-jobs.
const MaxListed = 100

// ErrNotFound is a job that is not the project's.
var ErrNotFound = errors.New("no such bulk job")

// ErrTooMany is a create while the project has MaxUnfinished jobs.
var ErrTooMany = fmt.Errorf("the project has %d unfinished bulk jobs: cancel one or wait until one ends", MaxUnfinished)

// FinishedError is a cancel of a job that has already ended.
type FinishedError struct{ State string }

func (e *FinishedError) Error() string {
	return fmt.Sprintf("the bulk job has already ended (%s)", e.State)
}

// DryRun is what a job would act on now: its selection's size, and its
// first hooks as they stand.
type DryRun struct {
	Total  int64
	Sample []bulk.Sampled
}

// Service creates, reads and cancels jobs; runners work on them.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// Create counts spec's selection and creates its job, or for a dry run
// answers the count and a sample and creates nothing.
func (s *Service) Create(ctx context.Context, projectID uuid.UUID, spec Spec) (store.BulkJob, DryRun, error) {
	q := store.New(s.pool)
	sel := selectionOf(projectID, spec.Action, spec.Range)
	total, err := q.CountBulkJobSelection(ctx, store.CountBulkJobSelectionParams{
		ProjectID: projectID, Statuses: sel.statuses, StartTime: sel.start, EndTime: sel.end,
		Path: sel.path, PathBase: sel.pathBase, SequenceID: sel.sequenceID, Tags: sel.tags,
	})
	if err != nil {
		return store.BulkJob{}, DryRun{}, fmt.Errorf("count bulk job selection: %w", postgres.Translate(err))
	}
	if spec.DryRun {
		sample, err := s.sample(ctx, q, sel)
		return store.BulkJob{}, DryRun{Total: total, Sample: sample}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return store.BulkJob{}, DryRun{}, fmt.Errorf("bulk job id: %w", err)
	}
	e := spec.Edit
	params := store.InsertBulkJobParams{
		ID: id, ProjectID: projectID, Action: string(spec.Action), StartTime: sel.start, EndTime: sel.end,
		Path: sel.path, PathBase: sel.pathBase, SequenceID: sel.sequenceID, Tags: sel.tags, Total: total,
	}
	if e != nil {
		params.NewPath, params.NewData, params.NewPostAt = e.Path, e.Data, e.PostAt
	}
	var job store.BulkJob
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tq := store.New(tx)
		if err := tq.LockBulkJobCreates(ctx, projectID); err != nil {
			return fmt.Errorf("lock bulk job creates: %w", err)
		}
		n, err := tq.CountUnfinishedBulkJobs(ctx, projectID)
		if err != nil {
			return fmt.Errorf("count unfinished bulk jobs: %w", err)
		}
		if n >= MaxUnfinished {
			return ErrTooMany
		}
		job, err = tq.InsertBulkJob(ctx, params)
		if err != nil {
			return fmt.Errorf("insert bulk job: %w", err)
		}
		return nil
	})
	if err != nil {
		return store.BulkJob{}, DryRun{}, postgres.Translate(err)
	}
	return job, DryRun{}, nil
}

func (s *Service) sample(ctx context.Context, q *store.Queries, sel selection) ([]bulk.Sampled, error) {
	rows, err := q.SelectBulkJobBatch(ctx, sel.batchParams(bulk.SampleSize))
	if err != nil {
		return nil, fmt.Errorf("bulk job sample: %w", postgres.Translate(err))
	}
	sample := []bulk.Sampled{}
	if len(rows) == 0 {
		return sample, nil
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	hooks, err := q.SampleHooks(ctx, store.SampleHooksParams{ProjectID: sel.projectID, Ids: ids, MaxHooks: bulk.SampleSize})
	if err != nil {
		return nil, fmt.Errorf("bulk job sample: %w", postgres.Translate(err))
	}
	for _, h := range hooks {
		sample = append(sample, bulk.Sampled(h))
	}
	return sample, nil
}

// Get returns the project's job id.
func (s *Service) Get(ctx context.Context, projectID, id uuid.UUID) (store.BulkJob, error) {
	job, err := store.New(s.pool).GetBulkJob(ctx, store.GetBulkJobParams{ProjectID: projectID, ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return store.BulkJob{}, ErrNotFound
	}
	if err != nil {
		return store.BulkJob{}, fmt.Errorf("get bulk job: %w", postgres.Translate(err))
	}
	return job, nil
}

// List returns up to limit of the project's jobs, newest first, created
// before the job after (nil: from the newest).
func (s *Service) List(ctx context.Context, projectID uuid.UUID, after *store.BulkJob, limit int) ([]store.BulkJob, error) {
	p := store.ListBulkJobsParams{ProjectID: projectID, MaxJobs: int32(limit)}
	if after != nil {
		p.BeforeCreatedAt, p.BeforeID = &after.CreatedAt, &after.ID
	}
	jobs, err := store.New(s.pool).ListBulkJobs(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list bulk jobs: %w", postgres.Translate(err))
	}
	return jobs, nil
}

// Cancel asks the project's running job id to stop before its next batch.
// A job that has ended is a *FinishedError; one already cancelling is
// returned as it is.
func (s *Service) Cancel(ctx context.Context, projectID, id uuid.UUID) (store.BulkJob, error) {
	job, err := store.New(s.pool).CancelBulkJob(ctx, store.CancelBulkJobParams{ProjectID: projectID, ID: id})
	if err == nil {
		return job, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.BulkJob{}, fmt.Errorf("cancel bulk job: %w", postgres.Translate(err))
	}
	job, err = s.Get(ctx, projectID, id)
	if err != nil {
		return store.BulkJob{}, err
	}
	if job.State != StateCancelling {
		return store.BulkJob{}, &FinishedError{State: job.State}
	}
	return job, nil
}

// The states of a job (migration 00037).
const (
	StateRunning    = "running"
	StateCancelling = "cancelling"
	StateCompleted  = "completed"
	StateCancelled  = "cancelled"
	StateFailed     = "failed"
)

// selection is a job's selection as the statements take it.
type selection struct {
	projectID      uuid.UUID
	statuses       []string
	start, end     time.Time
	path, pathBase *string
	sequenceID     *uuid.UUID
	tags           []string
}

func selectionOf(projectID uuid.UUID, action bulk.Action, r bulk.Range) selection {
	sel := selection{projectID: projectID, statuses: action.Statuses(), start: r.Start, end: r.End,
		sequenceID: r.SequenceID, tags: r.Tags}
	sel.path, sel.pathBase = r.Paths()
	return sel
}

// jobSelection is a stored job's selection.
func jobSelection(j store.BulkJob) selection {
	return selection{projectID: j.ProjectID, statuses: bulk.Action(j.Action).Statuses(), start: j.StartTime,
		end: j.EndTime, path: j.Path, pathBase: j.PathBase, sequenceID: j.SequenceID, tags: j.Tags}
}

// batchParams reads up to n hooks from the start of the selection.
func (sel selection) batchParams(n int) store.SelectBulkJobBatchParams {
	return store.SelectBulkJobBatchParams{
		ProjectID: sel.projectID, Statuses: sel.statuses, StartTime: sel.start, EndTime: sel.end,
		Path: sel.path, PathBase: sel.pathBase, SequenceID: sel.sequenceID, Tags: sel.tags, MaxHooks: int32(n),
	}
}
