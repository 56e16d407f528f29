package result

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/deliverystats"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Figures: the dashboard's overview (docs/dashboard.md, "Figures") plots
// what the scheduler counts here, never a scan of the hooks. Every
// transaction that applies attempts tallies them in Go, per project and
// step of the attempt's start, once for each step length of
// deliverystats.Steps, and adds the tally to delivery_minutes
// with one statement, its last, so the figures commit with the state they
// count (a batch redelivered after a failure is stale and counts nothing).
//
// What counts: an applied success is succeeded, a failure failed, a 202
// async; an async attempt's final answer (ack: succeeded; nack or timeout:
// failed) is counted again when its wait is settled, in the steps the
// attempt started in. Deferred results sent nothing and stale ones changed
// nothing: neither counts. The lateness (start minus postAt) of first
// attempts goes to the histogram of pkg/deliverystats.

// figureKey is a row of delivery_minutes.
type figureKey struct {
	projectID uuid.UUID
	step      int32 // the step's length in seconds
	minute    int64 // Unix seconds, the step's first minute (UTC)
}

// figureRow is what a transaction adds to a row.
type figureRow struct {
	key                      figureKey
	succeeded, failed, async int32
	lateness                 [deliverystats.NumBuckets]int64
}

// tally gathers a transaction's figures. The zero value is empty; a batch
// has few distinct rows (its projects times a minute or two, times the
// step lengths), so rows stay in a slice, found through the index.
type tally struct {
	rows  []figureRow
	index map[figureKey]int
}

// row is the row of the attempt's project and the step of length step it
// started in.
func (t *tally) row(projectID uuid.UUID, startedAt time.Time, step time.Duration) *figureRow {
	k := figureKey{projectID, int32(step / time.Second), startedAt.Truncate(step).Unix()}
	if i, ok := t.index[k]; ok {
		return &t.rows[i]
	}
	if t.index == nil {
		t.index = make(map[figureKey]int, 4)
	}
	t.index[k] = len(t.rows)
	t.rows = append(t.rows, figureRow{key: k})
	return &t.rows[len(t.rows)-1]
}

// addAttempt counts an applied attempt by its outcome, and the lateness of
// a first attempt (postAt is its hook's), in its step of every length.
func (t *tally) addAttempt(projectID uuid.UUID, in attempt, postAt time.Time) {
	for _, step := range deliverystats.Steps {
		r := t.row(projectID, in.startedAt, step)
		switch {
		case in.async:
			r.async++
		case in.success:
			r.succeeded++
		default:
			r.failed++
		}
		if in.attempt == 1 && !postAt.IsZero() {
			r.lateness[deliverystats.Bucket(in.startedAt.Sub(postAt))]++
		}
	}
}

// addPlanned counts the planned attempts of a batch (deferrals aside: no
// attempt).
func (t *tally) addPlanned(ins []attempt, plan batchPlan) {
	for _, idx := range [][]int{plan.successes, plan.failures, plan.waits} {
		for _, i := range idx {
			h := plan.hooks[i]
			t.addAttempt(h.projectID, ins[i], h.postAt)
		}
	}
}

// addEnded counts the final answers of settled async waits, in the steps
// each attempt started in: their lateness was counted at the 202.
func (t *tally) addEnded(ins []attempt, outs []*applied) {
	for i, in := range ins {
		t.addAttempt(outs[i].projectID, in, time.Time{})
	}
}

// write adds the tally to delivery_minutes in one statement, rows in key
// order (two transactions sharing rows lock them in the same order rather
// than deadlock).
func (t *tally) write(ctx context.Context, q *store.Queries) error {
	if len(t.rows) == 0 {
		return nil
	}
	slices.SortFunc(t.rows, func(a, b figureRow) int {
		if c := bytes.Compare(a.key.projectID[:], b.key.projectID[:]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.key.step, b.key.step); c != 0 {
			return c
		}
		return cmp.Compare(a.key.minute, b.key.minute)
	})
	n := len(t.rows)
	arg := store.AddDeliveryMinutesParams{
		// A shard per transaction: batches applied side by side for one
		// busy project rarely meet on a row (migration 00017).
		Shard:       int16(rand.IntN(figureShards)),
		Width:       int32(deliverystats.NumBuckets),
		Buckets:     make([]int64, 0, n*deliverystats.NumBuckets),
		ProjectIds:  make([]uuid.UUID, n),
		StepSeconds: make([]int32, n),
		Minutes:     make([]time.Time, n),
		Succeeded:   make([]int32, n),
		Failed:      make([]int32, n),
		Async:       make([]int32, n),
	}
	for i := range t.rows {
		r := &t.rows[i]
		arg.ProjectIds[i], arg.StepSeconds[i] = r.key.projectID, r.key.step
		arg.Minutes[i] = time.Unix(r.key.minute, 0).UTC()
		arg.Succeeded[i], arg.Failed[i], arg.Async[i] = r.succeeded, r.failed, r.async
		arg.Buckets = append(arg.Buckets, r.lateness[:]...)
	}
	// The last statement of its transaction: the setting ends with it.
	if err := q.GenericPlansUntilCommit(ctx); err != nil {
		return fmt.Errorf("add delivery figures: %w", err)
	}
	if err := q.AddDeliveryMinutes(ctx, arg); err != nil {
		return fmt.Errorf("add delivery figures: %w", err)
	}
	return nil
}

// figureShards is how many rows a project's minute is split over
// (delivery_minutes.shard: 0 to 7).
const figureShards = 8

// Retention: the overview reads 7 days at most, so rows of minutes older
// than FigureRetention are deleted, at most PruneBatch per transaction,
// by RunFigurePrune.
const (
	FigureRetention = 8 * 24 * time.Hour
	PruneBatch      = 1000
	// PruneInterval: a day of all projects' rows ages out per day, so a
	// round every few minutes keeps up with room to spare.
	PruneInterval = 5 * time.Minute
)

// PruneFigures deletes up to limit rows of delivery_minutes of minutes
// before before, and returns how many it deleted.
func (a *Applier) PruneFigures(ctx context.Context, before time.Time, limit int32) (int64, error) {
	tx, err := a.db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("prune delivery figures: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	n, err := store.New(tx).DeleteDeliveryMinutesBefore(ctx, store.DeleteDeliveryMinutesBeforeParams{Before: before, MaxRows: limit})
	if err != nil {
		return 0, fmt.Errorf("prune delivery figures: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("prune delivery figures: commit: %w", err)
	}
	return n, nil
}

// RunFigurePrune deletes the figures older than FigureRetention every
// interval until ctx is done; a full batch is followed at once by the next.
func (a *Applier) RunFigurePrune(ctx context.Context, interval time.Duration) {
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		n, err := a.PruneFigures(ctx, time.Now().Add(-FigureRetention), PruneBatch)
		wait := interval
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.WarnContext(ctx, "prune delivery figures", "err", err)
		case n > 0:
			a.log.InfoContext(ctx, "pruned delivery figures", "count", n)
			if n == PruneBatch {
				wait = 0
			}
		}
		timer.Reset(wait)
	}
}
