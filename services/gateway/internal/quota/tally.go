package quota

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Counting a batch of creates (internal/hook's Batcher): Add counts n hooks
// that all fit or are all refused, but a batch gathers independent
// requests, each of which must be judged as if it had come alone, in
// order. So a batch first locks the usage rows of its projects (Lock),
// judges each request with its project's Tally (Take: usage, thresholds,
// hard cap), inserts the hooks that were taken, and then writes the counts
// and the claims (Save), all in one transaction. Locking first keeps a
// refused request from ever being inserted.

// Tally is a project's usage in a create batch's transaction, from Lock
// until Save.
type Tally struct {
	projectID uuid.UUID
	usage     Usage   // the standing after the hooks taken so far
	claimed   []int32 // thresholds claimed in the period, this batch's too
	taken     int64
	crossed   []Crossing // claimed by this batch, to store with Save
}

// Lock locks the current period's usage row of each project (creating it
// when missing) until the transaction of q ends, in one statement, and
// returns their tallies by project. A project that does not exist has no
// tally.
func Lock(ctx context.Context, q *store.Queries, projectIDs []uuid.UUID) (map[uuid.UUID]*Tally, error) {
	ids := slices.Clone(projectIDs)
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	ids = slices.Compact(ids)
	texts := make([]string, len(ids))
	for i, id := range ids {
		texts[i] = id.String()
	}
	rows, err := q.LockPeriods(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("lock usage periods: %w", postgres.Translate(err))
	}
	out := make(map[uuid.UUID]*Tally, len(rows))
	for _, row := range rows {
		out[row.ProjectID] = &Tally{
			projectID: row.ProjectID,
			usage: Usage{
				Limit:       row.PlanQuota,
				Used:        row.HooksCreated,
				HardCap:     HardCap(row.PlanQuota, row.PlanHardCapPercent),
				PeriodStart: row.PeriodStart,
				ResetsAt:    row.PeriodEnd,
				Now:         row.DbNow,
			},
			claimed: row.AlertedThresholds,
		}
	}
	return out, nil
}

// Take counts one hook, as Add(n = 1) would after the hooks taken before
// it: past the hard cap it returns an *ExhaustedError (the request must
// not create its hook) with the standing without it; otherwise the
// standing with it and the thresholds it reached first, which Save claims.
// Announce the crossings only once the transaction has committed.
func (t *Tally) Take() (Charge, error) {
	if t.usage.Used >= t.usage.HardCap {
		return Charge{Usage: t.usage}, &ExhaustedError{Usage: t.usage}
	}
	t.usage.Used++
	t.taken++
	crossed := reached(t.projectID, t.usage, t.claimed)
	for _, c := range crossed {
		t.claimed = append(t.claimed, c.Percent)
	}
	t.crossed = append(t.crossed, crossed...)
	return Charge{Usage: t.usage, Crossed: crossed}, nil
}

// Save writes what the tallies took into their locked rows: the counts in
// one statement, then the thresholds claimed and their alerts (the
// notifier's outbox), which are rare.
func Save(ctx context.Context, q *store.Queries, tallies map[uuid.UUID]*Tally) error {
	var arg store.AddHooksToPeriodsParams
	for id, t := range tallies {
		if t.taken > 0 {
			arg.ProjectIds = append(arg.ProjectIds, id.String())
			arg.Hooks = append(arg.Hooks, t.taken)
		}
	}
	if len(arg.ProjectIds) == 0 {
		return nil
	}
	if err := q.AddHooksToPeriods(ctx, arg); err != nil {
		return fmt.Errorf("count hooks: %w", postgres.Translate(err))
	}
	for id, t := range tallies {
		if len(t.crossed) == 0 {
			continue
		}
		percents := make([]int32, len(t.crossed))
		for i, c := range t.crossed {
			percents[i] = c.Percent
		}
		err := q.ClaimQuotaThresholds(ctx, store.ClaimQuotaThresholdsParams{
			Thresholds: percents, ProjectID: id, PeriodStart: t.usage.PeriodStart,
		})
		if err != nil {
			return fmt.Errorf("claim quota thresholds: %w", postgres.Translate(err))
		}
		if err := storeAlerts(ctx, q, t.crossed); err != nil {
			return err
		}
	}
	return nil
}
