package sequencer

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// DefaultLead is how long before its slot a sequence's next run is written
// (docs/sequences.md, "Runs written ahead of their slot"). It is under a
// minute, the shortest interval between two slots of any schedule, so a
// sequence has at most one run written ahead, and the scan for sequences to
// write ahead never meets one whose next run is written already.
const (
	DefaultLead = 55 * time.Second
	maxLead     = 59 * time.Second
)

// prepareTx writes ahead the next run of a batch of sequences whose next
// slot comes within the lead: the run, its steps and its root steps' hooks
// due at the slot, so that at the slot the hooks are delivered as plain
// hooks are, whatever the number of runs sharing that instant. Each
// sequence moves on to its following slot.
func (s *Sequencer) prepareTx(ctx context.Context, q *store.Queries) (done, error) {
	seqs, err := q.ClaimSequencesToPrepare(ctx, store.ClaimSequencesToPrepareParams{
		LeadSeconds: s.cfg.Lead.Seconds(), BatchSize: int32(s.cfg.BatchSize)})
	if err != nil {
		return done{}, fmt.Errorf("claim sequences to write ahead: %w", err)
	}
	if len(seqs) == 0 {
		return done{}, nil
	}
	var runs runBatch
	var arg store.PrepareSequencesParams
	for _, seq := range seqs {
		tt, err := calendar.Current().Stored(seq.Schedule, seq.StartAt, seq.EndAt)
		if err != nil {
			// Left to the due scan, which ends such a sequence at its slot
			// and says why.
			continue
		}
		next, ok := tt.Next(seq.NextRunAt)
		runs.add(seq.ProjectID, seq.ID, seq.NextRunAt, triggerSchedule, "")
		arg.Ids = append(arg.Ids, seq.ID)
		arg.Slots = append(arg.Slots, seq.NextRunAt)
		arg.NextRunAts = append(arg.NextRunAts, next)
		arg.Lasts = append(arg.Lasts, !ok)
	}
	// As in scheduleTx: the sequences first, the projects' periods (taken by
	// the steps' start) last.
	if err := q.PrepareSequences(ctx, arg); err != nil {
		return done{}, fmt.Errorf("record runs written ahead: %w", err)
	}
	started, _, steps, err := runs.insert(ctx, q)
	if err != nil {
		return done{}, err
	}
	return done{n: len(seqs), msg: "sequence runs written ahead of their slot", attrs: []any{
		"sequences", len(seqs), "runs", started, "hooks", steps.Hooks, "over_quota", steps.OverQuota}}, nil
}

// withdrawTx withdraws a batch of runs written ahead under an older
// revision than their sequence has now (replaced, paused or resumed since):
// a run whose slot is still to come and none of whose hooks was leased is
// deleted with its hooks, their count given back; one whose slot has come
// stays (the change came too late for it). Either way the sequence is free
// to have its next slot written ahead again, by its definition as it is.
func (s *Sequencer) withdrawTx(ctx context.Context, q *store.Queries) (done, error) {
	seqs, err := q.ClaimStalePreparedSequences(ctx, int32(s.cfg.BatchSize))
	if err != nil {
		return done{}, fmt.Errorf("claim sequences changed since their run was written ahead: %w", err)
	}
	if len(seqs) == 0 {
		return done{}, nil
	}
	lock := store.LockPreparedRunHooksParams{}
	for _, seq := range seqs {
		lock.SequenceIds = append(lock.SequenceIds, seq.ID)
		lock.Slots = append(lock.Slots, seq.PreparedSlot)
	}
	hooks, err := q.LockPreparedRunHooks(ctx, lock)
	if err != nil {
		return done{}, fmt.Errorf("lock the hooks of runs written ahead: %w", err)
	}
	w := withdrawalOf(hooks)
	if len(w.runs) > 0 {
		if err := q.WithdrawPreparedRuns(ctx, store.WithdrawPreparedRunsParams{HookIds: w.hooks, RunIds: w.runs}); err != nil {
			return done{}, fmt.Errorf("withdraw runs written ahead: %w", err)
		}
	}
	clear := store.ClearPreparedSlotsParams{}
	for _, seq := range seqs {
		clear.Ids = append(clear.Ids, seq.ID)
		clear.Kept = append(clear.Kept, !w.sequences[seq.ID])
	}
	if err := q.ClearPreparedSlots(ctx, clear); err != nil {
		return done{}, fmt.Errorf("clear runs written ahead: %w", err)
	}
	return done{n: len(seqs), msg: "sequence runs written ahead withdrawn: their sequence changed", attrs: []any{
		"sequences", len(seqs), "runs_withdrawn", len(w.runs), "hooks_deleted", len(w.hooks)}}, nil
}

// withdrawal is what withdrawTx deletes: the runs none of whose hooks was
// leased, their hooks, and their sequences.
type withdrawal struct {
	runs, hooks []uuid.UUID
	sequences   map[uuid.UUID]bool
}

// withdrawalOf decides from the locked rows (a run's rows together) which
// runs go: those whose every step's hook is unclaimed.
func withdrawalOf(rows []store.LockPreparedRunHooksRow) withdrawal {
	w := withdrawal{sequences: map[uuid.UUID]bool{}}
	claimed := map[uuid.UUID]bool{}
	for _, r := range rows {
		claimed[r.RunID] = claimed[r.RunID] || !r.Unclaimed
	}
	for _, r := range rows {
		if claimed[r.RunID] {
			continue
		}
		if !w.sequences[r.SequenceID] {
			w.sequences[r.SequenceID] = true
			w.runs = append(w.runs, r.RunID)
		}
		if r.HookID != uuid.Nil {
			w.hooks = append(w.hooks, r.HookID)
		}
	}
	return w
}
