package sequence

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// ListPage is a page of sequences.
type ListPage struct {
	Sequences []Sequence
	Total
	NextCursor string
}

// Total is how many items a listing has in all: exact up to maxCount,
// then maxCount with Capped set, so that counting stays bounded.
type Total struct {
	TotalItems int64
	Capped     bool
}

func totalOf(counted int64) Total {
	if counted > maxCount {
		return Total{TotalItems: maxCount, Capped: true}
	}
	return Total{TotalItems: counted}
}

// List returns a page of the project's sequences, newest first.
func (s *Service) List(ctx context.Context, projectID uuid.UUID, pg Page) (ListPage, error) {
	scope := scopeOf("sequences", projectID, uuid.Nil)
	c, ok, err := decodeCursor(pg.Cursor, scope)
	if err != nil {
		return ListPage{}, err
	}
	if !ok {
		c = cursor{at: firstAt, id: firstID}
	}
	q := store.New(s.pool)
	// One more than the page, to know whether another follows.
	rows, err := q.ListSequences(ctx, store.ListSequencesParams{
		ProjectID: projectID, BeforeCreatedAt: c.at, BeforeID: c.id, MaxRows: int32(pg.Limit + 1),
	})
	if err != nil {
		return ListPage{}, fmt.Errorf("list sequences: %w", err)
	}
	total, err := q.CountSequences(ctx, store.CountSequencesParams{ProjectID: projectID, MaxCount: maxCount + 1})
	if err != nil {
		return ListPage{}, fmt.Errorf("count sequences: %w", err)
	}
	out := ListPage{Total: totalOf(total)}
	if len(rows) > pg.Limit {
		rows = rows[:pg.Limit]
		last := rows[len(rows)-1]
		out.NextCursor = cursor{at: last.CreatedAt, id: last.ID, scope: scope}.encode()
	}
	for _, row := range rows {
		seq, err := decode(row)
		if err != nil {
			return ListPage{}, err
		}
		out.Sequences = append(out.Sequences, seq)
	}
	return out, nil
}

// Run is a run of a sequence with its steps.
type Run struct {
	store.SequenceRun
	Steps []store.ListSequenceRunStepsRow
}

// RunPage is a page of a sequence's runs.
type RunPage struct {
	Runs []Run
	Total
	NextCursor string
}

// Runs returns a page of a sequence's runs, newest slot first.
func (s *Service) Runs(ctx context.Context, projectID, id uuid.UUID, pg Page) (RunPage, error) {
	scope := scopeOf("runs", projectID, id)
	c, ok, err := decodeCursor(pg.Cursor, scope)
	if err != nil {
		return RunPage{}, err
	}
	if !ok {
		c = cursor{at: firstAt, id: firstID}
	}
	q := store.New(s.pool)
	exists, err := q.SequenceExists(ctx, store.SequenceExistsParams{ProjectID: projectID, ID: id})
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	if !exists {
		return RunPage{}, ErrNotFound
	}
	rows, err := q.ListSequenceRuns(ctx, store.ListSequenceRunsParams{
		ProjectID: projectID, SequenceID: id, BeforeSlot: c.at, BeforeID: c.id, MaxRows: int32(pg.Limit + 1),
	})
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	total, err := q.CountSequenceRuns(ctx, store.CountSequenceRunsParams{ProjectID: projectID, SequenceID: id, MaxCount: maxCount + 1})
	if err != nil {
		return RunPage{}, fmt.Errorf("count runs: %w", err)
	}
	out := RunPage{Total: totalOf(total)}
	if len(rows) > pg.Limit {
		rows = rows[:pg.Limit]
		last := rows[len(rows)-1]
		out.NextCursor = cursor{at: last.Slot, id: last.ID, scope: scope}.encode()
	}
	out.Runs, err = withSteps(ctx, q, projectID, rows)
	return out, err
}

// withSteps reads the steps of a page of runs in one query.
func withSteps(ctx context.Context, q *store.Queries, projectID uuid.UUID, rows []store.SequenceRun) ([]Run, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(rows))
	byID := make(map[uuid.UUID]int, len(rows))
	runs := make([]Run, len(rows))
	for i, r := range rows {
		ids[i], byID[r.ID] = r.ID, i
		runs[i] = Run{SequenceRun: r, Steps: []store.ListSequenceRunStepsRow{}}
	}
	steps, err := q.ListSequenceRunSteps(ctx, store.ListSequenceRunStepsParams{ProjectID: projectID, RunIds: ids})
	if err != nil {
		return nil, fmt.Errorf("list run steps: %w", err)
	}
	for _, st := range steps {
		i, ok := byID[st.RunID]
		if !ok {
			return nil, errors.New("list run steps: a step of a run not asked for")
		}
		runs[i].Steps = append(runs[i].Steps, st)
	}
	return runs, nil
}
