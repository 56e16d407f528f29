// Package runstep moves the steps of sequence runs on (docs/sequences.md,
// "Steps"): it starts the steps whose dependencies have all completed,
// creating their hooks; it gives a step its hook's final status; it skips
// every step that depends, directly or not, on one that failed or was
// skipped; and it ends a run once none of its steps is waiting or pending.
//
// It has two callers, each in its own transaction: package sequencer, which
// starts runs (their root steps are ready at once), and package result,
// which applies the final results of step hooks. Both go through Advance,
// so a step starts by one path whoever moves it. Every call is a fixed
// number of set-based statements, whatever the number of runs; a call with
// no runs makes none.
//
// The scheduler keeps nothing between calls: what a run needs next is read
// from its rows (sequence_run_steps) and from the sequence's definition as
// it is then.
package runstep

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/scheduler/internal/outbox"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// QuotaExceeded is the failure of a step hook created past its project's
// hard cap: the hook is recorded failed, never delivered and not counted,
// and its step fails (docs/sequences.md, "Quota").
const QuotaExceeded = "quota exceeded"

// Step statuses (migration 00016).
const (
	StatusPending   = "pending"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusSkipped   = "skipped"
)

// Final is a step hook that reached its final status.
type Final struct {
	HookID uuid.UUID
	RunID  uuid.UUID
	// Completed: the hook completed; otherwise it failed for good (or is
	// gone).
	Completed bool
}

// Started says what Advance did.
type Started struct {
	// Hooks is how many step hooks it created due now.
	Hooks int
	// OverQuota is how many steps failed past their project's hard cap.
	OverQuota int
	// Skipped is how many ready steps it skipped because the definition no
	// longer has them.
	Skipped int
}

// Finish gives, in the caller's transaction, the steps of finals their
// hooks' final status, then advances their runs. It locks the runs first
// (in id order), so that two transactions finishing steps of one run apply
// one after the other and the second sees the first's steps: otherwise two
// dependencies completing at once could each see the other still pending,
// and their dependent would wait for ever. A run that is no longer running
// (deleted with its sequence) is left alone.
func Finish(ctx context.Context, q *store.Queries, finals []Final) (Started, error) {
	if len(finals) == 0 {
		return Started{}, nil
	}
	runIDs := make([]uuid.UUID, 0, len(finals))
	arg := store.FinishSequenceStepsParams{}
	for _, f := range finals {
		runIDs = append(runIDs, f.RunID)
		arg.HookIds = append(arg.HookIds, f.HookID)
		status := StatusFailed
		if f.Completed {
			status = StatusCompleted
		}
		arg.Statuses = append(arg.Statuses, status)
	}
	slices.SortFunc(runIDs, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	locked, err := q.LockSequenceRuns(ctx, slices.Compact(runIDs))
	if err != nil {
		return Started{}, fmt.Errorf("lock sequence runs: %w", err)
	}
	if len(locked) == 0 {
		return Started{}, nil
	}
	waiting, err := q.FinishSequenceSteps(ctx, arg)
	if err != nil {
		return Started{}, fmt.Errorf("finish sequence steps: %w", err)
	}
	return settle(ctx, q, waiting, locked)
}

// FailVanished fails, in the caller's transaction, up to max pending steps
// whose hook is gone (cancelled or deleted through the API): such a hook
// counts as failed for its run. It returns how many it failed.
func FailVanished(ctx context.Context, q *store.Queries, max int) (int, Started, error) {
	rows, err := q.LockVanishedSequenceSteps(ctx, int32(max))
	if err != nil {
		return 0, Started{}, fmt.Errorf("find steps whose hook is gone: %w", err)
	}
	if len(rows) == 0 {
		return 0, Started{}, nil
	}
	arg := store.FinishSequenceStepsParams{}
	var runIDs []uuid.UUID
	for _, r := range rows {
		arg.HookIds = append(arg.HookIds, r.HookID)
		arg.Statuses = append(arg.Statuses, StatusFailed)
		runIDs = append(runIDs, r.RunID)
	}
	if _, err := q.FinishSequenceSteps(ctx, arg); err != nil {
		return 0, Started{}, fmt.Errorf("fail steps whose hook is gone: %w", err)
	}
	started, err := Advance(ctx, q, slices.Compact(runIDs))
	return len(rows), started, err
}

// Advance moves the given runs on, in the caller's transaction, which holds
// them (locked, or inserted by it) and knows them running: their ready
// steps start, the steps that can no longer run are skipped, and the runs
// whose steps are all done end.
func Advance(ctx context.Context, q *store.Queries, runIDs []uuid.UUID) (Started, error) {
	return advance(ctx, q, runIDs, false)
}

// StartRuns is Advance for runs the caller's transaction has just created,
// every step of them waiting. A new run that started a hook for each of its
// ready steps has a pending step and none done, so nothing of it can be
// skipped or ended yet: only the other runs (a step over quota or no longer
// defined, or no step ready) are settled, which spares a burst of runs two
// statements per batch.
func StartRuns(ctx context.Context, q *store.Queries, runIDs []uuid.UUID) (Started, error) {
	return advance(ctx, q, runIDs, true)
}

func advance(ctx context.Context, q *store.Queries, runIDs []uuid.UUID, fresh bool) (Started, error) {
	if len(runIDs) == 0 {
		return Started{}, nil
	}
	started, pendingOnly, err := startReady(ctx, q, runIDs)
	if err != nil {
		return Started{}, err
	}
	unsettled := runIDs
	if fresh {
		unsettled = slices.DeleteFunc(slices.Clone(runIDs), func(id uuid.UUID) bool { return pendingOnly[id] })
	}
	if err := skipAndEnd(ctx, q, unsettled, unsettled); err != nil {
		return Started{}, err
	}
	return started, nil
}

// settle moves on the runs some of whose steps just took their final
// status: only those with a waiting step (waiting) can start or skip one,
// and every one of them (all) may end. A burst of single-step runs thus
// makes one statement here, not three.
func settle(ctx context.Context, q *store.Queries, waiting, all []uuid.UUID) (Started, error) {
	var started Started
	if len(waiting) > 0 {
		var err error
		if started, _, err = startReady(ctx, q, waiting); err != nil {
			return Started{}, err
		}
	}
	if err := skipAndEnd(ctx, q, waiting, all); err != nil {
		return Started{}, err
	}
	return started, nil
}

// startReady starts the given runs' ready steps; pendingOnly holds the runs
// whose ready steps all got a hook due.
func startReady(ctx context.Context, q *store.Queries, runIDs []uuid.UUID) (Started, map[uuid.UUID]bool, error) {
	ready, err := q.ReadySequenceSteps(ctx, runIDs)
	if err != nil {
		return Started{}, nil, fmt.Errorf("read ready steps: %w", err)
	}
	if len(ready) == 0 {
		return Started{}, nil, nil
	}
	return start(ctx, q, ready)
}

// skipAndEnd skips, in the runs skip, the waiting steps that can no longer
// run, then ends the runs of end whose steps are all done.
func skipAndEnd(ctx context.Context, q *store.Queries, skip, end []uuid.UUID) error {
	if len(skip) > 0 {
		if err := q.SkipSequenceDependents(ctx, skip); err != nil {
			return fmt.Errorf("skip dependents of failed steps: %w", err)
		}
	}
	if len(end) > 0 {
		if err := q.FinishSequenceRuns(ctx, end); err != nil {
			return fmt.Errorf("finish sequence runs: %w", err)
		}
	}
	return nil
}

// start creates the hooks of the ready steps in one statement, each counted
// against its project's hard cap as the gateway counts a created hook.
// pendingOnly holds the runs whose ready steps all got a hook due now.
func start(ctx context.Context, q *store.Queries, ready []store.ReadySequenceStepsRow) (Started, map[uuid.UUID]bool, error) {
	periods, err := lockPeriods(ctx, q, ready)
	if err != nil {
		return Started{}, nil, err
	}
	left := make(map[uuid.UUID]int64, len(periods))
	for id, p := range periods {
		left[id] = max(p.HardCap-p.HooksCreated, 0)
	}
	var started Started
	pendingOnly := map[uuid.UUID]bool{}
	counted := map[uuid.UUID]int64{}
	arg := store.StartSequenceStepsParams{QuotaError: QuotaExceeded}
	for _, r := range ready {
		hookID, status := uuid.Nil, StatusSkipped
		switch {
		case !r.Defined:
			started.Skipped++
		case left[r.ProjectID] > 0:
			left[r.ProjectID]--
			counted[r.ProjectID]++
			hookID, status = uuid.Must(uuid.NewV7()), StatusPending
			started.Hooks++
		default:
			hookID, status = uuid.Must(uuid.NewV7()), StatusFailed
			started.OverQuota++
		}
		ok, seen := pendingOnly[r.RunID]
		pendingOnly[r.RunID] = (ok || !seen) && status == StatusPending
		arg.RunIds = append(arg.RunIds, r.RunID)
		arg.Names = append(arg.Names, r.Name)
		arg.HookIds = append(arg.HookIds, hookID)
		arg.Statuses = append(arg.Statuses, status)
		arg.ProjectIds = append(arg.ProjectIds, r.ProjectID)
		arg.Domains = append(arg.Domains, r.Domain)
		arg.Paths = append(arg.Paths, r.Path)
		arg.Datas = append(arg.Datas, string(r.Data))
		arg.RetryOverrides = append(arg.RetryOverrides, r.RetryOverride)
		arg.SequenceIds = append(arg.SequenceIds, r.SequenceID)
		arg.Slots = append(arg.Slots, r.Slot)
	}
	if err := q.StartSequenceSteps(ctx, arg); err != nil {
		return Started{}, nil, fmt.Errorf("start sequence steps: %w", err)
	}
	if err := claimThresholds(ctx, q, periods, counted); err != nil {
		return Started{}, nil, err
	}
	return started, pendingOnly, nil
}

// claimThresholds claims, in the transaction that counted the step hooks,
// the usage thresholds (event.QuotaCrossings) their count reached first in
// each project's period, and writes their alerts into the outbox, as the
// gateway's creates do. The notifier's sweeper takes them in (within
// SUNDIAL_NOTIFIER_SWEEP_AGE, 10 s): the scheduler does not publish them.
func claimThresholds(ctx context.Context, q *store.Queries, periods map[uuid.UUID]store.LockQuotaPeriodsRow, counted map[uuid.UUID]int64) error {
	var alerts []*eventv1.Alert
	for id, n := range counted {
		p := periods[id]
		crossed := event.QuotaCrossings(id, p.PlanQuota, p.HooksCreated+n, p.PeriodStart, p.DbNow, p.AlertedThresholds)
		if len(crossed) == 0 {
			continue
		}
		percents := make([]int32, len(crossed))
		for i, c := range crossed {
			percents[i] = c.Percent
			alerts = append(alerts, c.Alert())
		}
		err := q.ClaimStepQuotaThresholds(ctx, store.ClaimStepQuotaThresholdsParams{
			Thresholds: percents, ProjectID: id, PeriodStart: p.PeriodStart,
		})
		if err != nil {
			return fmt.Errorf("claim quota thresholds: %w", err)
		}
	}
	return outbox.Insert(ctx, q, alerts)
}

// lockPeriods locks the current billing period of every project with a
// step to start, by project.
func lockPeriods(ctx context.Context, q *store.Queries, ready []store.ReadySequenceStepsRow) (map[uuid.UUID]store.LockQuotaPeriodsRow, error) {
	var projects []uuid.UUID
	for _, r := range ready {
		if r.Defined {
			projects = append(projects, r.ProjectID)
		}
	}
	periods := map[uuid.UUID]store.LockQuotaPeriodsRow{}
	if len(projects) == 0 {
		return periods, nil
	}
	rows, err := q.LockQuotaPeriods(ctx, projects)
	if err != nil {
		return nil, fmt.Errorf("lock quota periods: %w", err)
	}
	for _, r := range rows {
		periods[r.ProjectID] = r
	}
	return periods, nil
}
