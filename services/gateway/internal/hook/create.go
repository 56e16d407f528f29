package hook

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/pkg/calendar"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// created is what a create's transaction produced.
type created struct {
	hook   store.Hook
	charge quota.Charge
}

// pending is a create: its request and the id its hook takes.
type pending struct {
	projectID uuid.UUID
	id        uuid.UUID
	n         New
}

// outcome is a create's answer: err, if any, is its own (the quota
// refused it, say), and the usage comes with it.
type outcome struct {
	out created
	err error
}

func newPending(projectID uuid.UUID, n New) (pending, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return pending{}, fmt.Errorf("hook id: %w", err)
	}
	return pending{projectID: projectID, id: id, n: n}, nil
}

// Create stores a hook and counts it against the project's quota, in one
// transaction: a hook refused by the quota (a *quota.ExhaustedError) is
// neither stored nor counted. The usage is returned in both cases.
//
// With an IdempotencyKey, a repeat of an earlier request (see package
// idempotency) returns the earlier hook and the current usage, creating and
// counting nothing; the same key with another request is
// idempotency.ErrKeyReused, and one whose hook was deleted
// idempotency.ErrHookDeleted.
//
// Usage thresholds reached by the count are claimed in the transaction and
// announced after it commits.
func (s *Service) Create(ctx context.Context, projectID uuid.UUID, n New) (Hook, quota.Usage, error) {
	p, err := newPending(projectID, n)
	if err != nil {
		return Hook{}, quota.Usage{}, err
	}
	return s.answer(ctx, s.create(ctx, p))
}

// answer is what Create returns for a create's outcome, whose crossings it
// announces once committed.
func (s *Service) answer(ctx context.Context, o outcome) (Hook, quota.Usage, error) {
	if o.err != nil {
		return Hook{}, o.out.charge.Usage, o.err
	}
	s.announce(ctx, o.out.charge.Crossed)
	return FromRow(o.out.hook), o.out.charge.Usage, nil
}

// announce publishes the alerts of thresholds claimed by a committed
// transaction.
func (s *Service) announce(ctx context.Context, crossed []quota.Crossing) {
	if s.alerts != nil && len(crossed) > 0 {
		s.alerts.Announce(ctx, crossed)
	}
}

// create is one create in a transaction of its own: a batch of one
// (createBatch), after the claim of its IdempotencyKey and the replace of
// its key's hook when it has them.
func (s *Service) create(ctx context.Context, p pending) outcome {
	if p.n.IdempotencyKey != "" || p.n.Key != "" {
		return s.createAlone(ctx, p)
	}
	outs, err := s.createBatch(ctx, []pending{p})
	if err != nil {
		return outcome{err: err}
	}
	return outs[0]
}

// createTx begins a create's transaction with its statements on generic
// plans, in the one round trip of its BEGIN. PostgreSQL would otherwise plan
// them anew at every execution: a create's arrays hold a few elements,
// which a custom plan counts exactly and the generic plan guesses at 100,
// so the custom plan always looked cheaper, and pg_stat_statements showed
// as many plans as calls, InsertHooks' planning a large share of its time
// (docs/benchmarks.md, "Writes per hook"). The generic plans are those of
// a batch's size, which suits every create: the lookups are by key and the
// inserts go to the indexes' right edge.
var createTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan"}

// createAlone claims the create's IdempotencyKey, if any, and, unless the
// claim finds an earlier hook, replaces its key's hook, if any, and creates
// the hook as a batch of one, in one transaction: a create the quota or
// the key refuses rolls its claim back, and the replaced hook stays.
func (s *Service) createAlone(ctx context.Context, p pending) outcome {
	outs := make([]outcome, 1)
	err := pgx.BeginTxFunc(ctx, s.pool, createTx, func(tx pgx.Tx) error {
		q := store.New(tx)
		if p.n.IdempotencyKey != "" {
			earlier, repeat, err := s.claim(ctx, q, p)
			if err != nil {
				return err
			}
			if repeat {
				outs[0].out, err = repeated(ctx, q, p.projectID, earlier)
				return err
			}
		}
		if err := replace(ctx, q, p.projectID, p.n.Key); err != nil {
			return err
		}
		if err := insertBatch(ctx, q, []pending{p}, outs); err != nil {
			return err
		}
		return outs[0].err
	})
	if err != nil && outs[0].err == nil {
		outs[0].err = err
	}
	return outs[0]
}

// claim claims the create's IdempotencyKey for its hook, and returns the
// earlier hook's id and true when the claim finds one.
func (s *Service) claim(ctx context.Context, q *store.Queries, p pending) (uuid.UUID, bool, error) {
	fingerprint, err := p.n.fingerprint()
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("request fingerprint: %w", err)
	}
	earlier, repeat, err := idempotency.Claim(ctx, q, p.projectID, p.n.IdempotencyKey, fingerprint, []uuid.UUID{p.id}, s.keysTTL)
	if err != nil || !repeat {
		return uuid.Nil, false, err
	}
	return earlier[0], true, nil
}

// repeated answers a repeat of an earlier request: its hook as it is now,
// and the usage, which the repeat does not change.
func repeated(ctx context.Context, q *store.Queries, projectID, hookID uuid.UUID) (created, error) {
	hooks, err := hooksByID(ctx, q, projectID, []uuid.UUID{hookID})
	if err != nil {
		return created{}, err
	}
	u, err := usage(ctx, q, projectID)
	if err != nil {
		return created{}, err
	}
	return created{hook: hooks[0], charge: quota.Charge{Usage: u}}, nil
}

// createBatch creates the batch's hooks in one transaction: outs[i] is the
// outcome of batch[i], whose error, if any, is its own (the quota refused
// it). An error is the whole batch's: nothing was created.
func (s *Service) createBatch(ctx context.Context, batch []pending) ([]outcome, error) {
	outs := make([]outcome, len(batch))
	tx, err := s.pool.BeginTx(ctx, createTx)
	if err != nil {
		return outs, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := insertBatch(ctx, store.New(tx), batch, outs); err != nil {
		return outs, err
	}
	if err := tx.Commit(ctx); err != nil {
		return outs, fmt.Errorf("commit: %w", err)
	}
	return outs, nil
}

// insertBatch creates the batch's hooks in q's transaction, setting
// outs[i] to the outcome of batch[i]. It locks the usage rows of the
// batch's projects first, so that a request the quota refuses is never
// inserted, and counts the hooks taken once per project last.
func insertBatch(ctx context.Context, q *store.Queries, batch []pending, outs []outcome) error {
	projects := make([]uuid.UUID, len(batch))
	for i, p := range batch {
		projects[i] = p.projectID
	}
	tallies, err := quota.Lock(ctx, q, projects)
	if err != nil {
		return err
	}
	taken := judge(batch, tallies, outs)
	if err := insertTaken(ctx, q, batch, taken, outs); err != nil {
		return err
	}
	return quota.Save(ctx, q, tallies)
}

// judge counts each request against its project's quota, in order, and
// returns the indexes of those that may create their hook.
func judge(batch []pending, tallies map[uuid.UUID]*quota.Tally, outs []outcome) []int {
	taken := make([]int, 0, len(batch))
	for i, p := range batch {
		t, ok := tallies[p.projectID]
		if !ok {
			outs[i].err = fmt.Errorf("project plan: %w", postgres.ErrNotFound)
			continue
		}
		outs[i].out.charge, outs[i].err = t.Take()
		if outs[i].err == nil {
			taken = append(taken, i)
		}
	}
	return taken
}

// insertTaken inserts the hooks of the requests at taken in one statement.
func insertTaken(ctx context.Context, q *store.Queries, batch []pending, taken []int, outs []outcome) error {
	if len(taken) == 0 {
		return nil
	}
	arg := store.InsertHooksParams{
		Ids: make([]string, len(taken)), ProjectIds: make([]string, len(taken)),
		Paths: make([]string, len(taken)), Datas: make([]string, len(taken)),
		PostAts: make([]time.Time, len(taken)), PostInSeconds: make([]int64, len(taken)),
		RetryOverrides: make([]string, len(taken)), Keys: make([]string, len(taken)),
		Tags: make([]string, len(taken)), PostAtLocals: make([]string, len(taken)), Timezones: make([]string, len(taken)),
		OrderingKeys: make([]string, len(taken)), TzVersion: calendar.Current().Version,
	}
	for j, i := range taken {
		p := batch[i]
		arg.Ids[j], arg.ProjectIds[j], arg.Paths[j] = p.id.String(), p.projectID.String(), p.n.Path
		arg.Datas[j], arg.RetryOverrides[j] = string(p.n.Data), string(p.n.RetryOverride)
		arg.Keys[j], arg.Tags[j], arg.OrderingKeys[j] = p.n.Key, tagsLiteral(p.n.Tags), p.n.OrderingKey
		arg.PostAtLocals[j], arg.Timezones[j] = p.n.Local.columns()
		arg.PostInSeconds[j] = -1
		if p.n.PostAt != nil {
			arg.PostAts[j] = *p.n.PostAt
		} else {
			arg.PostInSeconds[j] = int64(p.n.PostIn.Seconds())
		}
	}
	rows, err := q.InsertHooks(ctx, arg)
	if err != nil {
		return fmt.Errorf("insert hooks: %w", postgres.Translate(err))
	}
	byID := make(map[uuid.UUID]store.Hook, len(rows))
	for _, h := range rows {
		byID[h.ID] = h
	}
	for _, i := range taken {
		h, ok := byID[batch[i].id]
		if !ok {
			// Its project was deleted after Lock: count nothing.
			return fmt.Errorf("insert hook %s: %w", batch[i].id, postgres.ErrNotFound)
		}
		outs[i].out.hook = h
	}
	return nil
}
