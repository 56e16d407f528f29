package sequence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

var (
	// ErrNotFound is a sequence that does not exist in the project asking
	// for it, whether it exists in another project or not at all.
	ErrNotFound = errors.New("sequence not found")
	// ErrNameTaken is a name another sequence of the project has.
	ErrNameTaken = errors.New("a sequence of this project already has this name")
)

// Canceller cancels hooks as bulk cancel does (bulk.Service): the one path
// that cancels hooks.
type Canceller interface {
	Cancel(ctx context.Context, projectID uuid.UUID, o bulk.Order) (bulk.Result, error)
}

// maxCancelRounds bounds the bulk cancels of a delete: bulk.MaxLimit hooks
// each, a million pending hooks in all, far more than a sequence of ten
// steps leaves pending.
const maxCancelRounds = 1000

// Service stores sequences. Every operation is scoped to the caller's
// project. Plans are made on the database's clock (store.DatabaseNow), the
// clock that decides when anything is due.
type Service struct {
	pool   *pgxpool.Pool
	cancel Canceller
}

// NewService returns a Service on pool, cancelling deleted sequences'
// hooks with cancel.
func NewService(pool *pgxpool.Pool, cancel Canceller) *Service {
	return &Service{pool: pool, cancel: cancel}
}

// Sequence is a stored sequence with its schedule and steps decoded.
type Sequence struct {
	store.Sequence
	Spec      calendar.Spec
	StepsList []Step
}

// Create stores a sequence and plans its first slot.
func (s *Service) Create(ctx context.Context, projectID uuid.UUID, d Definition) (Sequence, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Sequence{}, fmt.Errorf("sequence id: %w", err)
	}
	schedule, steps, err := encode(d)
	if err != nil {
		return Sequence{}, err
	}
	var row store.Sequence
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		now, err := q.DatabaseNow(ctx)
		if err != nil {
			return fmt.Errorf("database clock: %w", err)
		}
		// now() is the transaction's start: the created_at of the row.
		startAt := now
		if d.StartAt != nil {
			startAt = *d.StartAt
		}
		status, next := plan(d.Schedule, startAt, d.EndAt, now, false)
		row, err = q.InsertSequence(ctx, store.InsertSequenceParams{
			ID: id, ProjectID: projectID, Name: d.Name, Schedule: schedule, Steps: steps,
			StartAt: startAt, EndAt: d.EndAt, CatchUp: d.CatchUp, Overlap: d.Overlap,
			Status: status, NextRunAt: next, TzVersion: calendar.Current().Version,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNameTaken
		}
		return err
	})
	if err != nil {
		return Sequence{}, storeError("create sequence", err)
	}
	return decode(row)
}

// Replace replaces a sequence's definition and plans it again from now; a
// paused sequence stays paused. A left-out startAt is the creation time.
func (s *Service) Replace(ctx context.Context, projectID, id uuid.UUID, d Definition) (Sequence, error) {
	schedule, steps, err := encode(d)
	if err != nil {
		return Sequence{}, err
	}
	var row store.Sequence
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		old, now, err := lock(ctx, q, projectID, id)
		if err != nil {
			return err
		}
		startAt := old.CreatedAt
		if d.StartAt != nil {
			startAt = *d.StartAt
		}
		status, next := plan(d.Schedule, startAt, d.EndAt, now, old.Status == StatusPaused)
		row, err = q.ReplaceSequence(ctx, store.ReplaceSequenceParams{
			ProjectID: projectID, ID: id, Name: d.Name, Schedule: schedule, Steps: steps,
			StartAt: startAt, EndAt: d.EndAt, CatchUp: d.CatchUp, Overlap: d.Overlap,
			Status: status, NextRunAt: next, TzVersion: calendar.Current().Version,
		})
		if errors.Is(postgres.Translate(err), postgres.ErrConflict) {
			return ErrNameTaken
		}
		return err
	})
	if err != nil {
		return Sequence{}, storeError("replace sequence", err)
	}
	return decode(row)
}

// lock reads and locks a sequence for re-planning, with the database's
// clock.
func lock(ctx context.Context, q *store.Queries, projectID, id uuid.UUID) (store.Sequence, time.Time, error) {
	row, err := q.LockSequence(ctx, store.LockSequenceParams{ProjectID: projectID, ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Sequence{}, time.Time{}, ErrNotFound
	}
	if err != nil {
		return store.Sequence{}, time.Time{}, err
	}
	now, err := q.DatabaseNow(ctx)
	if err != nil {
		return store.Sequence{}, time.Time{}, fmt.Errorf("database clock: %w", err)
	}
	return row, now, nil
}

// Get returns one sequence.
func (s *Service) Get(ctx context.Context, projectID, id uuid.UUID) (Sequence, error) {
	row, err := store.New(s.pool).GetSequence(ctx, store.GetSequenceParams{ProjectID: projectID, ID: id})
	if err != nil {
		return Sequence{}, storeError("get sequence", err)
	}
	return decode(row)
}

// Pause stops planning an active sequence's slots; a paused or ended one
// is returned as it is.
func (s *Service) Pause(ctx context.Context, projectID, id uuid.UUID) (Sequence, error) {
	q := store.New(s.pool)
	if _, err := q.PauseSequence(ctx, store.PauseSequenceParams{ProjectID: projectID, ID: id}); err != nil {
		return Sequence{}, storeError("pause sequence", err)
	}
	return s.Get(ctx, projectID, id)
}

// Resume plans a paused (or ended) sequence from now: slots passed while
// paused never run. An active sequence is returned as it is: its progress
// is the scheduler's.
func (s *Service) Resume(ctx context.Context, projectID, id uuid.UUID) (Sequence, error) {
	var row store.Sequence
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		old, now, err := lock(ctx, q, projectID, id)
		if err != nil || old.Status == StatusActive {
			row = old
			return err
		}
		sched, err := scheduleOf(old)
		if err != nil {
			return err
		}
		status, next := plan(sched, old.StartAt, old.EndAt, now, false)
		row, err = q.PlanSequence(ctx, store.PlanSequenceParams{ProjectID: projectID, ID: id, Status: status, NextRunAt: next,
			TzVersion: calendar.Current().Version})
		return err
	})
	if err != nil {
		return Sequence{}, storeError("resume sequence", err)
	}
	return decode(row)
}

// Delete deletes a sequence with its runs, then cancels its pending and
// retry hooks through bulk cancel. The sequence goes first so that no run
// of it can start a hook after the cancel has passed.
func (s *Service) Delete(ctx context.Context, projectID, id uuid.UUID) error {
	n, err := store.New(s.pool).DeleteSequence(ctx, store.DeleteSequenceParams{ProjectID: projectID, ID: id})
	if err != nil {
		return storeError("delete sequence", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	all := &bulk.Range{
		Start: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), End: firstAt,
		Limit: bulk.MaxLimit, SequenceID: &id,
	}
	for range maxCancelRounds {
		cancelled, err := s.cancel.Cancel(ctx, projectID, bulk.Order{Selection: bulk.Selection{Range: all}})
		if err != nil {
			return fmt.Errorf("cancel the hooks of deleted sequence %s: %w", id, err)
		}
		if cancelled.Affected < int64(bulk.MaxLimit) {
			return nil
		}
	}
	return fmt.Errorf("cancel the hooks of deleted sequence %s: more than %d hooks left", id, maxCancelRounds*bulk.MaxLimit)
}

// Trigger records a request for a run now; the scheduler starts the run
// with the returned id.
type Trigger struct {
	RunID, SequenceID uuid.UUID
	RequestedAt       time.Time
}

// Trigger asks for a run of the sequence now, outside its schedule.
func (s *Service) Trigger(ctx context.Context, projectID, id uuid.UUID) (Trigger, error) {
	runID, err := uuid.NewV7()
	if err != nil {
		return Trigger{}, fmt.Errorf("run id: %w", err)
	}
	at, err := store.New(s.pool).InsertSequenceTrigger(ctx, store.InsertSequenceTriggerParams{
		RunID: runID, ProjectID: projectID, SequenceID: id,
	})
	if err != nil {
		return Trigger{}, storeError("trigger sequence", err)
	}
	return Trigger{RunID: runID, SequenceID: id, RequestedAt: at}, nil
}

// Preview returns a stored sequence's next count slots at or after
// max(now, startAt) by the database's clock, read with the sequence.
func (s *Service) Preview(ctx context.Context, projectID, id uuid.UUID, count int) ([]time.Time, error) {
	row, err := store.New(s.pool).GetSequenceAtNow(ctx, store.GetSequenceAtNowParams{ProjectID: projectID, ID: id})
	if err != nil {
		return nil, storeError("preview sequence", err)
	}
	sched, err := scheduleOf(row.Sequence)
	if err != nil {
		return nil, err
	}
	tt, err := timetable(sched, row.Sequence.StartAt, row.Sequence.EndAt)
	if err != nil {
		// Stored with endAt before its default startAt: no slot.
		return []time.Time{}, nil
	}
	return runTimes(tt, row.DbNow, count), nil
}

// encode renders a definition's schedule and steps as the columns hold
// them.
func encode(d Definition) (schedule, steps json.RawMessage, err error) {
	if schedule, err = json.Marshal(d.Schedule.Spec()); err != nil {
		return nil, nil, fmt.Errorf("encode schedule: %w", err)
	}
	if steps, err = json.Marshal(d.Steps); err != nil {
		return nil, nil, fmt.Errorf("encode steps: %w", err)
	}
	return schedule, steps, nil
}

// decode reads a stored sequence's schedule and steps, which only the
// gateway writes, after validating them.
func decode(row store.Sequence) (Sequence, error) {
	out := Sequence{Sequence: withRunWrittenAhead(row, time.Now())}
	if err := json.Unmarshal(row.Schedule, &out.Spec); err != nil {
		return Sequence{}, fmt.Errorf("sequence %s: stored schedule: %w", row.ID, err)
	}
	if err := json.Unmarshal(row.Steps, &out.StepsList); err != nil {
		return Sequence{}, fmt.Errorf("sequence %s: stored steps: %w", row.ID, err)
	}
	return out, nil
}

// withRunWrittenAhead is row as the API shows it when the scheduler has
// written its next run ahead of the slot (docs/sequences.md, "Runs written
// ahead of their slot"): the scheduler has already moved next_run_at past
// that slot, so until the slot the slot is still nextRunAt, and once it
// has passed it is lastRunAt (the scheduler folds it in at its next move).
// A run written under an older revision is being withdrawn: the row's own
// plan, from the change, stands.
func withRunWrittenAhead(row store.Sequence, now time.Time) store.Sequence {
	if row.PreparedSlot == nil {
		return row
	}
	slot := *row.PreparedSlot
	switch {
	case !slot.After(now):
		if row.LastRunAt == nil || slot.After(*row.LastRunAt) {
			row.LastRunAt = &slot
		}
	case row.PreparedRevision != nil && *row.PreparedRevision == row.Revision:
		row.NextRunAt = &slot
	}
	return row
}

func scheduleOf(row store.Sequence) (calendar.Schedule, error) {
	var spec calendar.Spec
	if err := json.Unmarshal(row.Schedule, &spec); err != nil {
		return calendar.Schedule{}, fmt.Errorf("sequence %s: stored schedule: %w", row.ID, err)
	}
	s, err := calendar.New(spec)
	if err != nil {
		return calendar.Schedule{}, fmt.Errorf("sequence %s: stored schedule: %w", row.ID, err)
	}
	return s, nil
}

// storeError translates the store's errors at the package's boundary.
func storeError(op string, err error) error {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case errors.Is(err, ErrNameTaken):
		return ErrNameTaken
	}
	return fmt.Errorf("%s: %w", op, err)
}
