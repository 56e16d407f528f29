package bulkjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Defaults of RunnerConfig.
const (
	DefaultBatchSize = 1000
	DefaultLease     = 30 * time.Second
	DefaultPoll      = time.Second
	// minPause is the least wait between two batches of a job.
	minPause = 10 * time.Millisecond
	// maxFailures is how many batches of a job in a row may fail (the
	// database down, say) before the job fails, so that a fault that does
	// not pass cannot keep a runner on one job for ever.
	maxFailures = 10
	// maxBackoff bounds the wait after a failed batch or take.
	maxBackoff = 30 * time.Second
)

// RunnerConfig tunes a Runner; zero values take the defaults.
type RunnerConfig struct {
	// BatchSize bounds the hooks one batch (one transaction) acts on.
	BatchSize int
	// Lease is how long a job stays with its runner past its last batch:
	// a runner that dies hands its job on after it.
	Lease time.Duration
	// Poll is the wait between looks for a job when there was none.
	Poll time.Duration
}

func (c RunnerConfig) withDefaults() RunnerConfig {
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	return c
}

// Runner works on jobs, one at a time; every gateway runs one, and they
// share the jobs through leases. Between two batches it waits as long as
// the last batch took (at least minPause), so that a job uses at most half
// of one database connection's time, whatever its size.
type Runner struct {
	pool   *pgxpool.Pool
	alerts bulk.Announcer
	cfg    RunnerConfig
	id     string
	log    *slog.Logger
}

// NewRunner returns a Runner on pool. alerts may be nil: replays then
// claim their quota threshold alerts without publishing them.
func NewRunner(pool *pgxpool.Pool, alerts bulk.Announcer, cfg RunnerConfig, log *slog.Logger) *Runner {
	return &Runner{pool: pool, alerts: alerts, cfg: cfg.withDefaults(), id: uuid.NewString(),
		log: log.With("component", "bulk_jobs")}
}

// Run works on jobs until ctx is done; the job in hand is handed back at
// once for another runner to go on with.
func (r *Runner) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		took, err := r.RunOnce(ctx)
		wait := r.cfg.Poll
		switch {
		case err != nil && ctx.Err() == nil:
			backoff = min(max(2*backoff, r.cfg.Poll), maxBackoff)
			wait = backoff
			r.log.WarnContext(ctx, "bulk job runner failed", "err", err, "retry_in", wait)
		case took:
			backoff, wait = 0, 0
		}
		timer.Reset(wait)
	}
}

// RunOnce takes one job that no runner holds and works on it until it
// ends, ctx is done, or its lease is lost; it reports whether it took one.
func (r *Runner) RunOnce(ctx context.Context) (bool, error) {
	job, err := store.New(r.pool).TakeBulkJob(ctx, store.TakeBulkJobParams{Runner: r.id, LeaseSeconds: r.cfg.Lease.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("take bulk job: %w", postgres.Translate(err))
	}
	r.work(ctx, job)
	return true, nil
}

// pass is what one runner did to a job, for its log line.
type pass struct {
	batches, selected, affected int64
	started                     time.Time
}

// work runs job's batches until it ends or this runner must let it go,
// and logs one line for what it did.
func (r *Runner) work(ctx context.Context, job store.BulkJob) {
	p := pass{started: time.Now()}
	end, err := r.batches(ctx, &job, &p)
	log := r.log.With("job", job.ID, "project", job.ProjectID, "action", job.Action, "batches", p.batches,
		"selected", p.selected, "affected", p.affected, "selected_total", job.Selected, "affected_total", job.Affected,
		"duration", time.Since(p.started))
	if end == "" {
		// Handed back: ctx ended, or another runner has the job.
		r.release(job)
		log.InfoContext(ctx, "bulk job handed back", "err", err)
		return
	}
	if err != nil {
		log = log.With("err", err)
	}
	log.InfoContext(ctx, "bulk job ended", "state", end)
}

// batches runs job's batches and returns the state it ended in, or ""
// when this runner let it go.
func (r *Runner) batches(ctx context.Context, job *store.BulkJob, p *pass) (string, error) {
	failures := 0
	for {
		if job.State == StateCancelling {
			return r.finish(ctx, job, StateCancelled, nil)
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		began := time.Now()
		done, err := r.batch(ctx, job, p)
		var exhausted *quota.ExhaustedError
		switch {
		case errors.Is(err, errLeaseLost):
			return "", err
		case errors.As(err, &exhausted):
			return r.finish(ctx, job, StateFailed, err)
		case err != nil && ctx.Err() != nil:
			return "", err
		case err != nil:
			if failures++; failures >= maxFailures {
				return r.finish(ctx, job, StateFailed, err)
			}
			r.log.WarnContext(ctx, "bulk job batch failed", "job", job.ID, "err", err, "failures", failures)
			if !sleep(ctx, min(time.Duration(failures)*time.Second, maxBackoff)) {
				return "", ctx.Err()
			}
			continue
		case done:
			return StateCompleted, nil
		}
		failures = 0
		if !sleep(ctx, max(minPause, time.Since(began))) {
			return "", ctx.Err()
		}
	}
}

// errLeaseLost is a batch rolled back because another runner has the job
// (this one's lease ran out) or it ended meanwhile.
var errLeaseLost = errors.New("the bulk job's lease was lost")

// batch acts on the job's next hooks and records the progress, in one
// transaction; done says the selection was exhausted and the job
// completed. job's cursor, counts and state follow what was committed.
func (r *Runner) batch(ctx context.Context, job *store.BulkJob, p *pass) (done bool, err error) {
	sel := jobSelection(*job)
	var (
		acted bulk.Acted
		rows  []store.SelectBulkJobBatchRow
		state string
	)
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		params := sel.batchParams(r.cfg.BatchSize)
		params.AfterPostAt, params.AfterID = job.CursorPostAt, job.CursorID
		var err error
		rows, err = q.SelectBulkJobBatch(ctx, params)
		if err != nil {
			return fmt.Errorf("select batch: %w", err)
		}
		if len(rows) == 0 {
			n, err := q.FinishBulkJob(ctx, store.FinishBulkJobParams{ID: job.ID, Runner: r.id, State: StateCompleted})
			if err != nil {
				return fmt.Errorf("complete: %w", err)
			}
			if n == 0 {
				return errLeaseLost
			}
			return nil
		}
		ids := make([]uuid.UUID, len(rows))
		for i, row := range rows {
			ids[i] = row.ID
		}
		acted, err = bulk.ActOn(ctx, q, job.ProjectID, bulk.Action(job.Action), ids, editOf(*job))
		if err != nil {
			return err
		}
		last := rows[len(rows)-1]
		state, err = q.RecordBulkJobBatch(ctx, store.RecordBulkJobBatchParams{
			ID: job.ID, Runner: r.id, CursorPostAt: &last.PostAt, CursorID: &last.ID,
			Selected: int64(len(rows)), Affected: acted.Affected, LeaseSeconds: r.cfg.Lease.Seconds(),
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return errLeaseLost
		}
		if err != nil {
			return fmt.Errorf("record progress: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, postgres.Translate(err)
	}
	if len(rows) == 0 {
		return true, nil
	}
	last := rows[len(rows)-1]
	job.CursorPostAt, job.CursorID, job.State = &last.PostAt, &last.ID, state
	job.Selected += int64(len(rows))
	job.Affected += acted.Affected
	p.batches++
	p.selected += int64(len(rows))
	p.affected += acted.Affected
	if c := acted.Charge; c != nil && r.alerts != nil && len(c.Crossed) > 0 {
		r.alerts.Announce(ctx, c.Crossed)
	}
	return false, nil
}

// finish ends the job in state, with err's words for a failure.
func (r *Runner) finish(ctx context.Context, job *store.BulkJob, state string, cause error) (string, error) {
	p := store.FinishBulkJobParams{ID: job.ID, Runner: r.id, State: state}
	if cause != nil {
		code, msg := failureOf(cause)
		p.ErrorCode, p.Error = &code, &msg
	}
	n, err := store.New(r.pool).FinishBulkJob(context.WithoutCancel(ctx), p)
	switch {
	case err != nil:
		return "", fmt.Errorf("end bulk job: %w", postgres.Translate(err))
	case n == 0:
		return "", errLeaseLost
	}
	return state, cause
}

// failureOf is a failed job's error code and words: the quota's, or
// "internal" for a fault of the service.
func failureOf(err error) (code, msg string) {
	var exhausted *quota.ExhaustedError
	if errors.As(err, &exhausted) {
		return "quota_exhausted", exhausted.Error()
	}
	return "internal", "the job failed repeatedly: " + err.Error()
}

// release hands the job back for another runner to take at once.
func (r *Runner) release(job store.BulkJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.New(r.pool).ReleaseBulkJob(ctx, store.ReleaseBulkJobParams{ID: job.ID, Runner: r.id}); err != nil {
		r.log.WarnContext(ctx, "bulk job not handed back: another runner takes it when its lease ends", "job", job.ID, "err", err)
	}
}

// editOf is a stored job's edit, nil for none.
func editOf(j store.BulkJob) *hook.Edit {
	if j.NewPath == nil && j.NewData == nil && j.NewPostAt == nil {
		return nil
	}
	return &hook.Edit{Path: j.NewPath, Data: j.NewData, PostAt: j.NewPostAt}
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
