package sequencer

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/services/scheduler/internal/runstep"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Run triggers (migration 00016).
const (
	triggerSchedule = "schedule"
	triggerManual   = "manual"
)

// Run statuses a run is recorded with.
const (
	runRunning = "running"
	runSkipped = "skipped"
)

// scheduleTx handles a batch of due sequences in one transaction: their due
// slots become runs, the started runs' root steps get their hooks, and
// each sequence moves to its next slot.
func (s *Sequencer) scheduleTx(ctx context.Context, q *store.Queries) (done, error) {
	seqs, err := q.ClaimDueSequences(ctx, int32(s.cfg.BatchSize))
	if err != nil {
		return done{}, fmt.Errorf("claim due sequences: %w", err)
	}
	if len(seqs) == 0 {
		return done{}, nil
	}
	var runs runBatch
	var adv progress
	for _, seq := range seqs {
		p := s.planOf(ctx, seq)
		for _, r := range p.runs {
			runs.add(seq.ProjectID, seq.ID, r.slot, triggerSchedule, r.skipReason)
		}
		adv.add(seq, p)
	}
	// The sequences move on first: starting the runs' steps locks their
	// projects' billing periods (runstep), which a concurrent batch of the
	// same project then waits for until this one commits, so that lock is
	// taken as late as can be.
	if err := q.AdvanceSequences(ctx, adv.arg); err != nil {
		return done{}, fmt.Errorf("advance sequences: %w", err)
	}
	started, skipped, steps, err := runs.insert(ctx, q)
	if err != nil {
		return done{}, err
	}
	return done{n: len(seqs), more: adv.behind, msg: "sequence slots recorded", attrs: []any{
		"sequences", len(seqs), "runs_started", started, "runs_skipped", skipped, "ended", adv.ended,
		"hooks", steps.Hooks, "over_quota", steps.OverQuota}}, nil
}

// progress gathers where a transaction's sequences go next, for one
// statement.
type progress struct {
	arg    store.AdvanceSequencesParams
	ended  int
	behind bool
}

// add records where seq goes after p: its next slot (or its end), and the
// latest slot p recorded, if any.
func (a *progress) add(seq store.ClaimDueSequencesRow, p slotPlan) {
	var last time.Time
	if len(p.runs) > 0 {
		last = p.runs[len(p.runs)-1].slot
	}
	if p.ended {
		a.ended++
	}
	a.behind = a.behind || p.behind
	a.arg.Ids = append(a.arg.Ids, seq.ID)
	a.arg.NextRunAts = append(a.arg.NextRunAts, p.next)
	a.arg.Ends = append(a.arg.Ends, p.ended)
	a.arg.LastRunAts = append(a.arg.LastRunAts, last)
	a.arg.Recorded = append(a.arg.Recorded, len(p.runs) > 0)
}

// planOf plans a claimed sequence's scan. A schedule the engine refuses
// (the gateway validates every one: a manual edit, or a rule the engine
// no longer accepts) ends the sequence rather than failing every scan.
func (s *Sequencer) planOf(ctx context.Context, seq store.ClaimDueSequencesRow) slotPlan {
	tt, err := calendar.Current().Stored(seq.Schedule, seq.StartAt, seq.EndAt)
	if err != nil {
		s.log.ErrorContext(ctx, "sequence has an unusable schedule; ending it", "sequence_id", seq.ID,
			"project_id", seq.ProjectID, "err", err)
		return slotPlan{ended: true}
	}
	return plan(due{timetable: tt, nextRunAt: seq.NextRunAt, catchUp: seq.CatchUp, overlap: seq.Overlap,
		running: seq.Running}, seq.DbNow)
}

// triggerTx consumes a batch of trigger requests in one transaction: each
// becomes a manual run (its id the request's, its slot the request's
// time; overlap does not apply), and the requests are deleted.
func (s *Sequencer) triggerTx(ctx context.Context, q *store.Queries) (done, error) {
	reqs, err := q.ClaimSequenceTriggers(ctx, int32(s.cfg.BatchSize))
	if err != nil {
		return done{}, fmt.Errorf("claim trigger requests: %w", err)
	}
	if len(reqs) == 0 {
		return done{}, nil
	}
	var runs runBatch
	ids := make([]uuid.UUID, len(reqs))
	for i, r := range reqs {
		ids[i] = r.RunID
		runs.addID(r.RunID, r.ProjectID, r.SequenceID, r.RequestedAt, triggerManual, "")
	}
	started, _, steps, err := runs.insert(ctx, q)
	if err != nil {
		return done{}, err
	}
	if err := q.DeleteSequenceTriggers(ctx, ids); err != nil {
		return done{}, fmt.Errorf("delete trigger requests: %w", err)
	}
	return done{n: len(reqs), msg: "sequence trigger requests consumed", attrs: []any{
		"requests", len(reqs), "runs_started", started, "hooks", steps.Hooks, "over_quota", steps.OverQuota}}, nil
}

// vanishedTx fails a batch of pending steps whose hook the API cancelled
// or deleted, and moves their runs on.
func (s *Sequencer) vanishedTx(ctx context.Context, q *store.Queries) (done, error) {
	n, steps, err := runstep.FailVanished(ctx, q, s.cfg.BatchSize)
	if err != nil || n == 0 {
		return done{n: n}, err
	}
	return done{n: n, msg: "sequence steps failed: their hook was cancelled or deleted", attrs: []any{
		"steps", n, "hooks", steps.Hooks, "over_quota", steps.OverQuota}}, nil
}

// runBatch gathers the runs a transaction records, for one statement.
type runBatch struct {
	arg store.InsertSequenceRunsParams
}

func (b *runBatch) add(project, sequence uuid.UUID, slot time.Time, trigger, skipReason string) {
	b.addID(uuid.Must(uuid.NewV7()), project, sequence, slot, trigger, skipReason)
}

func (b *runBatch) addID(id, project, sequence uuid.UUID, slot time.Time, trigger, skipReason string) {
	status := runRunning
	if skipReason != "" {
		status = runSkipped
	}
	b.arg.Ids = append(b.arg.Ids, id)
	b.arg.ProjectIds = append(b.arg.ProjectIds, project)
	b.arg.SequenceIds = append(b.arg.SequenceIds, sequence)
	b.arg.Slots = append(b.arg.Slots, slot)
	b.arg.Triggers = append(b.arg.Triggers, trigger)
	b.arg.Statuses = append(b.arg.Statuses, status)
	b.arg.SkipReasons = append(b.arg.SkipReasons, skipReason)
}

// insert records the runs with their steps (a run another scheduler
// recorded first is left out) and starts the running ones' ready steps.
func (b *runBatch) insert(ctx context.Context, q *store.Queries) (started, skipped int, steps runstep.Started, err error) {
	if len(b.arg.Ids) == 0 {
		return 0, 0, runstep.Started{}, nil
	}
	rows, err := q.InsertSequenceRuns(ctx, b.arg)
	if err != nil {
		return 0, 0, runstep.Started{}, fmt.Errorf("insert runs: %w", err)
	}
	var running []uuid.UUID
	for _, r := range rows {
		if r.Status == runRunning {
			running = append(running, r.ID)
		} else {
			skipped++
		}
	}
	steps, err = runstep.StartRuns(ctx, q, running)
	if err != nil {
		return 0, 0, runstep.Started{}, err
	}
	return len(running), skipped, steps, nil
}
