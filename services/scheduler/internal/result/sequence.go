package result

import (
	"context"

	"github.com/sundial-run/sundial/services/scheduler/internal/runstep"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Sequences: a hook created by a sequence run (hooks.sequence_run_id) is a
// step of that run. When its result is final (completed, or failed with
// its retries spent; a delivery's result or an async wait's end alike),
// the same transaction moves the run on through package runstep: the step
// takes the hook's status, its dependents start or are skipped, and the
// run ends when nothing is left to do. A batch without step hooks makes no
// statement for this; one with any makes runstep's few set-based
// statements for all of them at once.

// advanceSequences moves on the runs of the batch's step hooks that
// finished.
func (a *Applier) advanceSequences(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied) error {
	var finals []runstep.Final
	for _, i := range append(plan.successes, plan.failures...) {
		run := plan.hooks[i].sequenceRun
		if run == nil || outs[i] == nil || outs[i].status == StatusRetry {
			continue
		}
		finals = append(finals, runstep.Final{HookID: ins[i].hookID, RunID: *run, Completed: outs[i].status == StatusCompleted})
	}
	if len(finals) == 0 {
		return nil
	}
	started, err := runstep.Finish(ctx, q, finals)
	if err != nil {
		return err
	}
	if started.Hooks+started.OverQuota+started.Skipped > 0 {
		a.log.DebugContext(ctx, "sequence steps started by finished steps", "steps_finished", len(finals),
			"hooks", started.Hooks, "over_quota", started.OverQuota, "skipped", started.Skipped)
	}
	return nil
}
