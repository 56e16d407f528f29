package result

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-run/sundial/services/scheduler/internal/outbox"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Resume requests: POST /v1/endpoints/resume only sets the breaker's
// resume_requested (the gateway writes no breaker or hook state); the
// scheduler applies it like a probe's success, through the same steps
// (package breaker): the pause ends, the hooks it held are due at once and
// an announced pause is announced over.

// resumeBatch bounds the requests one transaction applies.
const resumeBatch = 100

// ApplyResumes applies up to resumeBatch resume requests in one
// transaction and publishes the alerts they raise; it returns how many it
// applied.
func (a *Applier) ApplyResumes(ctx context.Context) (int, error) {
	tx, err := a.db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("apply resumes: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := store.New(tx)
	n, alerts, err := a.breaker.ApplyResumes(ctx, q, resumeBatch)
	if err != nil {
		return 0, fmt.Errorf("apply resumes: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	if err := outbox.Insert(ctx, q, alerts); err != nil {
		return 0, fmt.Errorf("apply resumes: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("apply resumes: commit: %w", err)
	}
	alertErr := a.alerts.publishAll(ctx, alerts)
	a.log.InfoContext(ctx, "applied endpoint resume requests", "count", n, "alerts", len(alerts), "alert_err", alertErr)
	return n, nil
}

// RunResumes applies resume requests every interval until ctx is done (a
// full batch is followed at once by the next).
func (a *Applier) RunResumes(ctx context.Context, interval time.Duration) {
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		n, err := a.ApplyResumes(ctx)
		wait := interval
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.WarnContext(ctx, "apply endpoint resume requests", "err", err)
		case n == resumeBatch:
			wait = 0
		}
		timer.Reset(wait)
	}
}
