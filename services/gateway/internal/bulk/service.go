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
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
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

// Result is the outcome of an action, or of its dry run.
type Result struct {
	// Affected is the number of hooks acted on (replay: of hooks created),
	// or that the dry run would act on.
	Affected int64
	// Usage is the quota standing after a committed replay; nil when
	// nothing was replayed (nothing was counted) and for a dry run.
	Usage *quota.Usage
	// DryRun says that nothing was changed.
	DryRun bool
	// Sample is, for a dry run, the first SampleSize hooks it would act on
	// (by postAt, then id), as they stand.
	Sample []Sampled
	// QuotaRefused says that the replay of a dry run would be refused:
	// its new hooks would pass the quota's hard cap.
	QuotaRefused bool
}

// Sampled is a hook of a dry run's sample.
type Sampled struct {
	ID     uuid.UUID
	Path   string
	Status string
	PostAt time.Time
	Tags   []string
}

// SampleSize bounds a dry run's sample.
const SampleSize = 10

// step runs an action's statements in q's transaction and returns the ids
// of the hooks it acted on (replay: the sources it copied), and the quota
// charge of a replay. A replay refused by the quota returns the ids it
// would have copied with the *quota.ExhaustedError.
type step func(ctx context.Context, q *store.Queries, projectID uuid.UUID, o Order) (acted, error)

type acted struct {
	ids    []uuid.UUID
	charge *quota.Charge
}

// Run runs action on o.
func (s *Service) Run(ctx context.Context, projectID uuid.UUID, action Action, o Order) (Result, error) {
	switch action {
	case ActionRetry:
		return s.Retry(ctx, projectID, o)
	case ActionCancel:
		return s.Cancel(ctx, projectID, o)
	case ActionReplay:
		return s.Replay(ctx, projectID, o)
	}
	return Result{}, fmt.Errorf("bulk: unknown action %q", action)
}

// Retry moves the selected failed hooks to pending, due now, each with a
// fresh retry budget (its attempts so far become the budget's base, so
// attempt numbers and history continue), and o.Edit's fields in place of
// its own. Hooks in other states are skipped.
func (s *Service) Retry(ctx context.Context, projectID uuid.UUID, o Order) (Result, error) {
	// A create that gives a key an unfinished hook after the statement's
	// snapshot makes its retry of that key's failed hook collide on the
	// key's unique index; run again, the statement sees the new hook and
	// skips the failed one.
	for range retryRaces {
		r, err := s.perform(ctx, projectID, o, retry)
		if !errors.Is(postgres.Translate(err), postgres.ErrConflict) {
			return r, err
		}
	}
	return s.perform(ctx, projectID, o, retry)
}

// retryRaces bounds how often Retry runs again after losing a race with a
// create of a key.
const retryRaces = 3

func retry(ctx context.Context, q *store.Queries, projectID uuid.UUID, o Order) (acted, error) {
	e := editOf(o.Edit)
	var (
		ids []uuid.UUID
		err error
	)
	if o.Range == nil {
		ids, err = q.RetryFailedHooksByID(ctx, store.RetryFailedHooksByIDParams{
			ProjectID: projectID, Ids: o.IDs, NewPath: e.Path, NewData: e.Data, NewPostAt: e.PostAt,
		})
	} else {
		f := filterOf(o.Range)
		ids, err = q.RetryFailedHooksInRange(ctx, store.RetryFailedHooksInRangeParams{
			ProjectID: projectID, StartTime: f.start, EndTime: f.end,
			Path: f.path, PathBase: f.pathBase, SequenceID: f.sequenceID, Tags: f.tags, MaxHooks: f.limit,
			NewPath: e.Path, NewData: e.Data, NewPostAt: e.PostAt,
		})
	}
	if err != nil {
		return acted{}, fmt.Errorf("bulk retry: %w", err)
	}
	return acted{ids: ids}, nil
}

// Cancel deletes the selected pending and retry hooks with their attempt
// history, as DELETE /v1/hooks/{id} does; a delivery already in flight may
// still arrive. Hooks in other states are skipped.
func (s *Service) Cancel(ctx context.Context, projectID uuid.UUID, o Order) (Result, error) {
	return s.perform(ctx, projectID, o, cancel)
}

func cancel(ctx context.Context, q *store.Queries, projectID uuid.UUID, o Order) (acted, error) {
	var (
		ids []uuid.UUID
		err error
	)
	if o.Range == nil {
		ids, err = q.CancelHooksByID(ctx, store.CancelHooksByIDParams{ProjectID: projectID, Ids: o.IDs})
	} else {
		f := filterOf(o.Range)
		ids, err = q.CancelHooksInRange(ctx, store.CancelHooksInRangeParams{
			ProjectID: projectID, StartTime: f.start, EndTime: f.end,
			Path: f.path, PathBase: f.pathBase, SequenceID: f.sequenceID, Tags: f.tags, MaxHooks: f.limit,
		})
	}
	if err != nil {
		return acted{}, fmt.Errorf("bulk cancel: %w", err)
	}
	return acted{ids: ids}, nil
}

// Replay creates a new hook for each selected completed hook: a new id,
// the same path, domain, data and retryOverride (or o.Edit's), due now
// (or at o.Edit's postAt). The new hooks count against the project's quota
// in the same transaction; if they would pass the hard cap, none is
// created and the error is a *quota.ExhaustedError (a dry run reports it
// as QuotaRefused instead). Hooks in other states are skipped.
func (s *Service) Replay(ctx context.Context, projectID uuid.UUID, o Order) (Result, error) {
	return s.perform(ctx, projectID, o, replay)
}

func replay(ctx context.Context, q *store.Queries, projectID uuid.UUID, o Order) (acted, error) {
	sources, err := lockCompleted(ctx, q, projectID, o.Selection)
	if err != nil || len(sources) == 0 {
		return acted{}, err
	}
	charge, err := quota.Add(ctx, q, projectID, int64(len(sources)))
	if err != nil {
		return acted{ids: sources}, fmt.Errorf("bulk replay: %w", err)
	}
	if err := insertReplays(ctx, q, projectID, sources, editOf(o.Edit)); err != nil {
		return acted{}, err
	}
	return acted{ids: sources, charge: &charge}, nil
}

// Acted is what ActOn did: the hooks acted on (replay: the copies
// created), and a replay's quota charge (nil otherwise).
type Acted struct {
	Affected int64
	Charge   *quota.Charge
}

// ActOn runs action on the project's hooks ids in q's transaction, as the
// action by hookIDs does: a bulk job's batch. A replay the quota refuses
// returns a *quota.ExhaustedError.
func ActOn(ctx context.Context, q *store.Queries, projectID uuid.UUID, action Action, ids []uuid.UUID, edit *hook.Edit) (Acted, error) {
	o := Order{Selection: Selection{IDs: ids}, Edit: edit}
	var st step
	switch action {
	case ActionRetry:
		st = retry
	case ActionReplay:
		st = replay
	case ActionCancel:
		st = cancel
	default:
		return Acted{}, fmt.Errorf("bulk: unknown action %q", action)
	}
	a, err := st(ctx, q, projectID, o)
	if err != nil {
		return Acted{}, err
	}
	return Acted{Affected: int64(len(a.ids)), Charge: a.charge}, nil
}

// perform runs st in a transaction: committed, or for a dry run
// (dryRun) rolled back.
func (s *Service) perform(ctx context.Context, projectID uuid.UUID, o Order, st step) (Result, error) {
	if o.DryRun {
		return s.dryRun(ctx, projectID, o, st)
	}
	var a acted
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		a, err = st(ctx, store.New(tx), projectID, o)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	r := Result{Affected: int64(len(a.ids))}
	if a.charge != nil {
		r.Usage = &a.charge.Usage
		if s.alerts != nil && len(a.charge.Crossed) > 0 {
			s.alerts.Announce(ctx, a.charge.Crossed)
		}
	}
	return r, nil
}

// dryRun runs st in a savepoint and rolls it back, then reads the sample
// of the hooks it acted on, and rolls everything back: the action's own
// statements decide what it would do (no second copy of its selection to
// drift from it), and nothing changes, is counted or alerted. Like the
// action, it locks the hooks it selects while it runs.
func (s *Service) dryRun(ctx context.Context, projectID uuid.UUID, o Order, st step) (Result, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("dry run: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	savepoint, err := tx.Begin(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("dry run: %w", err)
	}
	a, err := st(ctx, store.New(savepoint), projectID, o)
	var exhausted *quota.ExhaustedError
	refused := errors.As(err, &exhausted)
	if err != nil && !refused {
		return Result{}, err
	}
	if err := savepoint.Rollback(ctx); err != nil {
		return Result{}, fmt.Errorf("dry run: %w", err)
	}
	r := Result{Affected: int64(len(a.ids)), DryRun: true, QuotaRefused: refused, Sample: []Sampled{}}
	if len(a.ids) == 0 {
		return r, nil
	}
	rows, err := store.New(tx).SampleHooks(ctx, store.SampleHooksParams{ProjectID: projectID, Ids: a.ids, MaxHooks: SampleSize})
	if err != nil {
		return Result{}, fmt.Errorf("dry run sample: %w", err)
	}
	for _, row := range rows {
		r.Sample = append(r.Sample, Sampled(row))
	}
	return r, nil
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
		return nil, fmt.Errorf("bulk replay: select completed hooks: %w", err)
	}
	return ids, nil
}

// insertReplays copies each source hook under a new time-ordered id, in
// the order of the sources, with the edit's fields in place of the
// source's.
func insertReplays(ctx context.Context, q *store.Queries, projectID uuid.UUID, sources []uuid.UUID, e hook.Edit) error {
	newIDs := make([]uuid.UUID, len(sources))
	for i := range newIDs {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("bulk replay: hook id: %w", err)
		}
		newIDs[i] = id
	}
	n, err := q.InsertReplays(ctx, store.InsertReplaysParams{
		NewIds: newIDs, SourceIds: sources, ProjectID: projectID, NewPath: e.Path, NewData: e.Data, NewPostAt: e.PostAt,
	})
	if err != nil {
		return fmt.Errorf("bulk replay: insert replays: %w", err)
	}
	// The sources are locked, so every one is copied; a shortfall would
	// leave the quota counting hooks that do not exist.
	if n != int64(len(sources)) {
		return fmt.Errorf("bulk replay: insert replays: %d of %d hooks copied", n, len(sources))
	}
	return nil
}

// editOf is the edit as the queries take it: nil fields keep the hook's.
func editOf(e *hook.Edit) hook.Edit {
	if e == nil {
		return hook.Edit{}
	}
	return *e
}

// RetryIDs is POST /v1/hooks/retryIDs: Retry by ids, for the API key's
// project only. Unknown ids and hooks that have not failed are skipped.
func (s *Service) RetryIDs(ctx context.Context, keyProject uuid.UUID, r RetryIDsRequest) (Result, error) {
	ids, err := r.Validate(keyProject)
	if err != nil {
		return Result{}, err
	}
	return s.Retry(ctx, keyProject, Order{Selection: Selection{IDs: ids}, DryRun: r.DryRun})
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
	f.path, f.pathBase = r.Paths()
	return f
}

// Paths is the range's endpoint key as the statements take it: path
// matches the whole path (a key with a query string), pathBase the path
// without its query string; both nil without a key.
func (r *Range) Paths() (path, pathBase *string) {
	key := r.EndpointKey
	switch {
	case key == nil:
		return nil, nil
	case strings.Contains(*key, "?"):
		return key, nil
	}
	return nil, key
}
