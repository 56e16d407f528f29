package result

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Async hooks: a receiver that answers 202 reports later, with a POST to the
// delivery's ack or nack URL. Until then the hook waits, pending, for at
// most the async timeout. The gateway only records the answer on the
// attempt (answer_pending) and wakes the schedulers (NOTIFY sundial_async,
// migration 00010); the scheduler is the one writer of the hook's state. An
// ack completes the hook like a successful delivery (ending the endpoint's
// failing spell); a nack or the timeout is a failed attempt, retried or
// failed like a failed delivery: the retry budget, jitter and the
// hook.failed alert all apply. Ended waits go through the same settling
// steps as a batch of results (batch.go: completeAll, settleFailures).
//
// An answer may come before the scheduler has applied the 202 (a receiver
// may call the URL before it answers the delivery). The gateway then
// records the attempt itself, answered, without touching the hook; the
// scheduler settles it whichever comes first: the sweeper woken by the
// notification (the hook is still in flight: LockEndedAsyncWaits), or the
// 202's own result, whose waiting attempt then finds the answered one in
// its place and is settled at once in the result's transaction (applyBatch).
// Both lock the hook row, so exactly one of them settles it and the other
// finds nothing to do.

// ErrNacked is the failure text of an attempt the receiver nacked.
const ErrNacked = "nacked by receiver"

// AsyncTimeoutError is the failure text of an attempt whose async wait of
// seconds ended without an ack or nack.
func AsyncTimeoutError(seconds int32) string {
	return fmt.Sprintf("async timeout: no ack or nack within %d s", seconds)
}

// startWait applies a 202 answer: the hook waits for the receiver's answer
// until its deadline, and the attempt is recorded as waiting. answered
// reports that the attempt was already recorded, with the receiver's
// answer, by an ack or nack that came first: the caller settles it.
func (a *Applier) startWait(ctx context.Context, q *store.Queries, in attempt, h lockedHook) (out *applied, answered bool, err error) {
	wait, err := q.StartAsyncWait(ctx, store.StartAsyncWaitParams{
		ID: in.hookID, Attempts: in.attempt, PostDurationSeconds: in.duration,
		StartedAt: in.startedAt, AskedSeconds: askedTimeout(in.asyncTimeout),
	})
	if err != nil {
		return nil, false, fmt.Errorf("start async wait: %w", err)
	}
	n, err := q.InsertAsyncAttempt(ctx, store.InsertAsyncAttemptParams{
		HookID:                 in.hookID,
		Attempt:                in.attempt,
		LeaseSeq:               in.leaseSeq,
		StartedAt:              in.startedAt,
		DurationSeconds:        in.duration,
		StatusCode:             nonZero(in.statusCode),
		ResponseExcerpt:        nonEmpty(in.excerpt),
		AsyncDeadline:          &wait.AsyncDeadline,
		AsyncTimeoutSecs:       &wait.TimeoutSeconds,
		RequestHeaders:         in.request.raw(),
		ResponseHeaders:        in.response.raw(),
		RequestHeadersOmitted:  in.request.omitted,
		ResponseHeadersOmitted: in.response.omitted,
	})
	if err != nil {
		return nil, false, fmt.Errorf("insert attempt: %w", err)
	}
	if n == 0 {
		// The gateway recorded the attempt with its answer, knowing
		// nothing of the exchange: the 202 tells the rest.
		if err := q.CompleteAnsweredAttempt(ctx, store.CompleteAnsweredAttemptParams{
			HookID: in.hookID, Attempt: in.attempt, LeaseSeq: in.leaseSeq,
			DurationSeconds: in.duration, ResponseExcerpt: nonEmpty(in.excerpt),
			RequestHeaders: in.request.raw(), ResponseHeaders: in.response.raw(),
			RequestHeadersOmitted: in.request.omitted, ResponseHeadersOmitted: in.response.omitted,
		}); err != nil {
			return nil, false, fmt.Errorf("complete answered attempt: %w", err)
		}
	}
	budget := a.budget(ctx, in.hookID, h)
	return &applied{projectID: h.projectID, path: h.path, status: StatusPending,
		maxAttempts: budget.MaxAttempts(), at: wait.AsyncDeadline}, n == 0, nil
}

// EndWaits settles, in one transaction, the async attempts of the given
// hooks that have an answer to apply or whose wait timed out: an ack
// completes the hook, a nack or a timeout is a failed attempt. It returns
// how many it settled; a hook with nothing to settle (settled meanwhile,
// deleted, its wait not over, or held by another scheduler) is skipped.
func (a *Applier) EndWaits(ctx context.Context, ids []uuid.UUID) (int, error) {
	start := time.Now()
	ins, outs, err := a.endWaitsTx(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("end async waits of %d hooks: %w", len(ids), err)
	}
	for i, in := range ins {
		_ = a.finish(ctx, in, outs[i], nil, time.Since(start), slog.LevelInfo)
	}
	return len(ins), nil
}

func (a *Applier) endWaitsTx(ctx context.Context, ids []uuid.UUID) ([]attempt, []*applied, error) {
	tx, err := a.db.Begin(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := store.New(tx)
	var figures tally
	ins, outs, err := a.endWaits(ctx, q, ids)
	if err != nil {
		return nil, nil, err
	}
	figures.addEnded(ins, outs)
	if err := figures.write(ctx, q); err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, fmt.Errorf("commit: %w", err)
	}
	return ins, outs, nil
}

// endWaits settles, in the caller's transaction, what EndWaits settles, and
// returns the attempts it settled with what each did.
func (a *Applier) endWaits(ctx context.Context, q *store.Queries, ids []uuid.UUID) ([]attempt, []*applied, error) {
	rows, err := q.LockEndedAsyncWaits(ctx, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("lock ended waits: %w", err)
	}
	ins := make([]attempt, len(rows))
	plan := batchPlan{hooks: make(map[int]lockedHook, len(rows))}
	arg := store.SettleAsyncAttemptsParams{}
	for i, row := range rows {
		ins[i] = endedAttempt(row)
		plan.hooks[i] = lockedHook{
			projectID: row.ProjectID, domain: row.Domain, path: row.Path, budgetBase: row.RetryBudgetBase, override: row.RetryOverride,
			policy: projectPolicy(row.RetryMinRetries, row.RetryDelaySecs, row.RetryStrategy,
				row.RetryBackoffFactor, row.RetryMaxDelaySecs, row.RetryJitter),
			failures:    a.failurePolicy(ctx, row.ProjectID, row.FailurePolicy),
			sequenceRun: row.SequenceRunID,
		}
		plan.add(i, ins[i])
		arg.HookIds = append(arg.HookIds, row.ID)
		arg.Attempts = append(arg.Attempts, row.Attempt)
		arg.Errors = append(arg.Errors, ins[i].errText)
		arg.FailureClasses = append(arg.FailureClasses, failclass.Word(ins[i].class))
	}
	if len(rows) > 0 {
		if err := q.SettleAsyncAttempts(ctx, arg); err != nil {
			return nil, nil, fmt.Errorf("settle attempts: %w", err)
		}
	}
	outs := make([]*applied, len(ins))
	if err := a.completeAll(ctx, q, ins, &plan, outs, true); err != nil {
		return nil, nil, err
	}
	if err := a.settle(ctx, q, ins, plan, outs); err != nil {
		return nil, nil, err
	}
	// An async failure says nothing of the server to the breaker, but the
	// failure policy may pause its endpoint.
	if err := a.recordBreakers(ctx, q, ins, plan, outs); err != nil {
		return nil, nil, err
	}
	if _, err := q.ForgetDeadAnswers(ctx, ids); err != nil {
		return nil, nil, fmt.Errorf("forget dead answers: %w", err)
	}
	return ins, outs, nil
}

// endedAttempt is the attempt an ended wait amounts to: a success when the
// receiver acked it, else a failure.
func endedAttempt(row store.LockEndedAsyncWaitsRow) attempt {
	in := attempt{
		hookID:     row.ID,
		leaseSeq:   row.LeaseSeq,
		attempt:    row.Attempt,
		recorded:   "failure",
		statusCode: 202,
		startedAt:  row.StartedAt,
		duration:   row.DurationSeconds,
	}
	state := ""
	if row.AsyncState != nil {
		state = *row.AsyncState
	}
	switch state {
	case "acked":
		in.reported, in.recorded, in.success = "ack", "success", true
	case "nacked":
		in.reported, in.errText, in.class = "nack", ErrNacked, eventv1.FailureClass_FAILURE_CLASS_NACK
	default:
		var secs int32
		if row.AsyncTimeoutSecs != nil {
			secs = *row.AsyncTimeoutSecs
		}
		in.reported, in.errText, in.class = "async_timeout", AsyncTimeoutError(secs), eventv1.FailureClass_FAILURE_CLASS_ASYNC_TIMEOUT
	}
	return in
}

// askedTimeout is the wait a 202 asked for when it is within the bounds,
// else 0, which gives the hook its project's async timeout.
func askedTimeout(seconds int32) int32 {
	if !asyncurl.ValidTimeout(int64(seconds)) {
		return 0
	}
	return seconds
}
