package result

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Async hooks: a receiver that answers 202 reports later, with a POST to the
// delivery's ack or nack URL (the gateway handles those). Until then the
// hook waits, pending, for at most the async timeout. An ack completes it
// (the gateway does that alone); a nack or the timeout is a failed attempt,
// which a scheduler applies here through settle, exactly like a failed
// delivery: the retry budget, jitter and the hook.failed alert all apply.

// ErrNacked is the failure text of an attempt the receiver nacked.
const ErrNacked = "nacked by receiver"

// AsyncTimeoutError is the failure text of an attempt whose async wait of
// seconds ended without an ack or nack.
func AsyncTimeoutError(seconds int32) string {
	return fmt.Sprintf("async timeout: no ack or nack within %d s", seconds)
}

// startWait applies a 202 answer: the hook waits for the receiver's answer
// until its deadline, and the attempt is recorded as waiting.
func (a *Applier) startWait(ctx context.Context, q *store.Queries, in attempt, h lockedHook) (*applied, error) {
	wait, err := q.StartAsyncWait(ctx, store.StartAsyncWaitParams{
		ID: in.hookID, Attempts: in.attempt, PostDurationSeconds: in.duration,
		StartedAt: in.startedAt, AskedSeconds: in.asyncTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("start async wait: %w", err)
	}
	_, err = q.InsertAsyncAttempt(ctx, store.InsertAsyncAttemptParams{
		HookID:           in.hookID,
		Attempt:          in.attempt,
		LeaseSeq:         in.leaseSeq,
		StartedAt:        in.startedAt,
		DurationSeconds:  in.duration,
		StatusCode:       nonZero(in.statusCode),
		ResponseExcerpt:  nonEmpty(in.excerpt),
		AsyncDeadline:    &wait.AsyncDeadline,
		AsyncTimeoutSecs: &wait.TimeoutSeconds,
	})
	if err != nil {
		return nil, fmt.Errorf("insert attempt: %w", err)
	}
	budget := a.budget(ctx, in.hookID, h)
	return &applied{projectID: h.projectID, path: h.path, status: StatusPending,
		maxAttempts: budget.MaxAttempts(), at: wait.AsyncDeadline}, nil
}

// EndWait settles the attempt of a hook whose async wait has ended (its
// timeout passed, or the receiver nacked it) as a failed attempt: the hook
// is retried or fails, like after any failed delivery. It reports false,
// changing nothing, when the hook has nothing to settle: it was acked,
// deleted or settled meanwhile, its wait has not ended, or another
// scheduler holds it.
func (a *Applier) EndWait(ctx context.Context, hookID uuid.UUID) (bool, error) {
	start := time.Now()
	in, out, err := a.endWaitTx(ctx, hookID)
	if err != nil {
		return false, fmt.Errorf("end async wait of hook %s: %w", hookID, err)
	}
	if out == nil {
		return false, nil
	}
	a.applied.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", in.reported)))
	alertErr := a.alerts.publishAll(ctx, out.alerts)
	a.logApplied(ctx, in, out, time.Since(start), alertErr, slog.LevelInfo)
	return true, nil
}

func (a *Applier) endWaitTx(ctx context.Context, hookID uuid.UUID) (attempt, *applied, error) {
	tx, err := a.db.Begin(ctx)
	if err != nil {
		return attempt{}, nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := store.New(tx)
	row, err := q.LockEndedAsyncWait(ctx, hookID)
	if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
		return attempt{}, nil, nil
	} else if err != nil {
		return attempt{}, nil, fmt.Errorf("lock hook: %w", err)
	}
	in := endedAttempt(row)
	if err := q.EndAsyncWait(ctx, hookID); err != nil {
		return attempt{}, nil, fmt.Errorf("end wait: %w", err)
	}
	if _, err := q.FailAsyncAttempt(ctx, store.FailAsyncAttemptParams{
		HookID: hookID, Attempt: in.attempt, Error: &in.errText,
	}); err != nil {
		return attempt{}, nil, fmt.Errorf("fail attempt: %w", err)
	}
	out, err := a.settle(ctx, q, in, lockedHook{
		projectID: row.ProjectID, domain: row.Domain, path: row.Path, budgetBase: row.RetryBudgetBase, override: row.RetryOverride,
		policy: projectPolicy(row.RetryMinRetries, row.RetryDelaySecs, row.RetryStrategy,
			row.RetryBackoffFactor, row.RetryMaxDelaySecs, row.RetryJitter),
	})
	if err != nil {
		return attempt{}, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return attempt{}, nil, fmt.Errorf("commit: %w", err)
	}
	return in, out, nil
}

// endedAttempt is the failed attempt an ended wait amounts to.
func endedAttempt(row store.LockEndedAsyncWaitRow) attempt {
	in := attempt{
		hookID:     row.ID,
		leaseSeq:   row.LeaseSeq,
		attempt:    row.Attempt,
		recorded:   "failure",
		statusCode: 202,
		startedAt:  row.StartedAt,
		duration:   row.DurationSeconds,
	}
	if row.AsyncState != nil && *row.AsyncState == "nacked" {
		in.reported, in.errText = "nack", ErrNacked
		return in
	}
	var secs int32
	if row.AsyncTimeoutSecs != nil {
		secs = *row.AsyncTimeoutSecs
	}
	in.reported, in.errText = "async_timeout", AsyncTimeoutError(secs)
	return in
}
