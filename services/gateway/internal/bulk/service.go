package bulk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Announcer publishes the quota threshold alerts that committed replays
// crossed (quota.Alerts).
type Announcer interface {
	Announce(ctx context.Context, crossed []quota.Crossing)
}

// Service runs the bulk actions. Each is one transaction, scoped to the
// caller's project: another project's hooks are never selected, whatever
// ids are given.
type Service struct {
	pool   *pgxpool.Pool
	alerts Announcer
}

// NewService returns a Service on pool. alerts may be nil: replays then
// claim their threshold alerts without publishing them.
func NewService(pool *pgxpool.Pool, alerts Announcer) *Service {
	return &Service{pool: pool, alerts: alerts}
}

// Retry moves the selected failed hooks to pending, due now, each with a
// fresh retry budget (its attempts so far become the budget's base, so
// attempt numbers and history continue). Hooks in other states are
// skipped. It returns how many hooks it moved.
func (s *Service) Retry(ctx context.Context, projectID uuid.UUID, sel Selection) (int64, error) {
	// A create that gives a key an unfinished hook after the statement's
	// snapshot makes its retry of that key's failed hook collide on the
	// key's unique index; run again, the statement sees the new hook and
	// skips the failed one.
	for range retryRaces {
		n, err := s.retry(ctx, projectID, sel)
		if !errors.Is(postgres.Translate(err), postgres.ErrConflict) {
			return n, err
		}
	}
	return s.retry(ctx, projectID, sel)
}

// retryRaces bounds how often Retry runs again after losing a race with a
// create of a key.
const retryRaces = 3

func (s *Service) retry(ctx context.Context, projectID uuid.UUID, sel Selection) (int64, error) {
	q := store.New(s.pool)
	var (
		n   int64
		err error
	)
	if sel.Range == nil {
		n, err = q.RetryFailedHooksByID(ctx, store.RetryFailedHooksByIDParams{ProjectID: projectID, Ids: sel.IDs})
	} else {
		f := filterOf(sel.Range)
		n, err = q.RetryFailedHooksInRange(ctx, store.RetryFailedHooksInRangeParams{
			ProjectID: projectID, StartTime: f.start, EndTime: f.end,
			Path: f.path, PathBase: f.pathBase, SequenceID: f.sequenceID, Tags: f.tags, MaxHooks: f.limit,
		})
	}
	if err != nil {
		return 0, fmt.Errorf("bulk retry: %w", err)
	}
	return n, nil
}

// Cancel deletes the selected pending and retry hooks with their attempt
// history, as DELETE /v1/hooks/{id} does; a delivery already in flight may
// still arrive. Hooks in other states are skipped. It returns how many
// hooks it deleted.
func (s *Service) Cancel(ctx context.Context, projectID uuid.UUID, sel Selection) (int64, error) {
	q := store.New(s.pool)
	var (
		n   int64
		err error
	)
	if sel.Range == nil {
		n, err = q.CancelHooksByID(ctx, store.CancelHooksByIDParams{ProjectID: projectID, Ids: sel.IDs})
	} else {
		f := filterOf(sel.Range)
		n, err = q.CancelHooksInRange(ctx, store.CancelHooksInRangeParams{
			ProjectID: projectID, StartTime: f.start, EndTime: f.end,
			Path: f.path, PathBase: f.pathBase, SequenceID: f.sequenceID, Tags: f.tags, MaxHooks: f.limit,
		})
	}
	if err != nil {
		return 0, fmt.Errorf("bulk cancel: %w", err)
	}
	return n, nil
}

// Replayed is the outcome of a replay.
type Replayed struct {
	// Affected is the number of hooks replayed, and of new hooks created.
	Affected int64
	// Usage is the quota standing after the replays; nil when nothing was
	// replayed (nothing was counted).
	Usage *quota.Usage
}

// Replay creates a new hook for each selected completed hook: a new id,
// the same path, domain, data and retryOverride, due now. The new hooks
// count against the project's quota in the same transaction; if they would
// pass the hard cap, none is created and the error is a
// *quota.ExhaustedError. Hooks in other states are skipped.
func (s *Service) Replay(ctx context.Context, projectID uuid.UUID, sel Selection) (Replayed, error) {
	var (
		out    Replayed
		charge quota.Charge
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		sources, err := lockCompleted(ctx, q, projectID, sel)
		if err != nil || len(sources) == 0 {
			return err
		}
		if charge, err = quota.Add(ctx, q, projectID, int64(len(sources))); err != nil {
			return err
		}
		out.Usage = &charge.Usage
		out.Affected, err = insertReplays(ctx, q, projectID, sources)
		return err
	})
	if err != nil {
		return Replayed{}, fmt.Errorf("bulk replay: %w", err)
	}
	if s.alerts != nil && len(charge.Crossed) > 0 {
		s.alerts.Announce(ctx, charge.Crossed)
	}
	return out, nil
}

// lockCompleted returns the ids of the selected completed hooks, earliest
// first, locked against deletion until the transaction ends.
func lockCompleted(ctx context.Context, q *store.Queries, projectID uuid.UUID, sel Selection) ([]uuid.UUID, error) {
	var (
		ids []uuid.UUID
		err error
	)
	if sel.Range == nil {
		ids, err = q.LockCompletedHooksByID(ctx, store.LockCompletedHooksByIDParams{ProjectID: projectID, Ids: sel.IDs})
	} else {
		f := filterOf(sel.Range)
		ids, err = q.LockCompletedHooksInRange(ctx, store.LockCompletedHooksInRangeParams{
			ProjectID: projectID, StartTime: f.start, EndTime: f.end,
			Path: f.path, PathBase: f.pathBase, SequenceID: f.sequenceID, Tags: f.tags, MaxHooks: f.limit,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("select completed hooks: %w", err)
	}
	return ids, nil
}

// insertReplays copies each source hook under a new time-ordered id, in
// the order of the sources.
func insertReplays(ctx context.Context, q *store.Queries, projectID uuid.UUID, sources []uuid.UUID) (int64, error) {
	newIDs := make([]uuid.UUID, len(sources))
	for i := range newIDs {
		id, err := uuid.NewV7()
		if err != nil {
			return 0, fmt.Errorf("hook id: %w", err)
		}
		newIDs[i] = id
	}
	n, err := q.InsertReplays(ctx, store.InsertReplaysParams{NewIds: newIDs, SourceIds: sources, ProjectID: projectID})
	if err != nil {
		return 0, fmt.Errorf("insert replays: %w", err)
	}
	// The sources are locked, so every one is copied; a shortfall would
	// leave the quota counting hooks that do not exist.
	if n != int64(len(sources)) {
		return 0, fmt.Errorf("insert replays: %d of %d hooks copied", n, len(sources))
	}
	return n, nil
}

// RetryIDs is POST /v1/hooks/retryIDs: Retry by ids, for the API key's
// project only. Unknown ids and hooks that have not failed are skipped.
func (s *Service) RetryIDs(ctx context.Context, keyProject uuid.UUID, r RetryIDsRequest) (int64, error) {
	ids, err := r.Validate(keyProject)
	if err != nil {
		return 0, err
	}
	return s.Retry(ctx, keyProject, Selection{IDs: ids})
}

// filter is a Range as the queries take it.
type filter struct {
	start, end time.Time
	// path matches the whole path (an endpoint key with a query string);
	// pathBase matches the path without its query string.
	path, pathBase *string
	sequenceID     *uuid.UUID
	tags           []string
	limit          int32
}

func filterOf(r *Range) filter {
	f := filter{start: r.Start, end: r.End, sequenceID: r.SequenceID, tags: r.Tags, limit: int32(r.Limit)}
	if key := r.EndpointKey; key != nil {
		if strings.Contains(*key, "?") {
			f.path = key
		} else {
			f.pathBase = key
		}
	}
	return f
}
