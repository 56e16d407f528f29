package result

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Deferrals: a dispatcher that cannot start a delivery now (the hook's host
// or project at its concurrency limit, its own delivery pool busy) reports
// OUTCOME_DEFERRED instead of holding the hook or handing it back to
// JetStream. Applied here, in the same batch step as every other result and
// only under the hook's current lease, a deferral puts the hook back to
// waiting as it was before its claim, due again after the clamped delay:
// no attempt is counted or recorded, the lease is released, and the re-drive
// count starts again at 0, since a dispatcher evidently has the hook. So the
// re-drive cap (claim.Config.MaxRedrives) fires only for real losses: a
// crash, a lost message. docs/security.md, "Waiting is not an attempt".

// deferAll applies the planned deferrals in one statement.
func (a *Applier) deferAll(ctx context.Context, q *store.Queries, ins []attempt, plan batchPlan, outs []*applied) error {
	if len(plan.defers) == 0 {
		return nil
	}
	arg := store.DeferHooksParams{}
	for _, i := range plan.defers {
		arg.Ids = append(arg.Ids, ins[i].hookID)
		arg.Delays = append(arg.Delays, ins[i].deferFor.Seconds())
	}
	rows, err := q.DeferHooks(ctx, arg)
	if err != nil {
		return fmt.Errorf("defer hooks: %w", err)
	}
	type moved struct {
		status string
		at     time.Time
	}
	got := make(map[uuid.UUID]moved, len(rows))
	for _, row := range rows {
		got[row.ID] = moved{row.Status, row.RunAt}
	}
	for _, i := range plan.defers {
		m, ok := got[ins[i].hookID]
		if !ok {
			return fmt.Errorf("defer hook %s: not updated under its lock", ins[i].hookID)
		}
		h := plan.hooks[i]
		outs[i] = &applied{projectID: h.projectID, path: h.path, status: m.status, at: m.at, deferred: true,
			maxAttempts: a.budget(ctx, ins[i].hookID, h).MaxAttempts()}
	}
	return nil
}
