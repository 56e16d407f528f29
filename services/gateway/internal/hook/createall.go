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

// CreateAll stores a batch's hooks and counts them against the project's
// quota, all or none, in one transaction: a batch that does not fit under
// the hard cap (a *quota.ExhaustedError, whose usage is the standing
// without it) or whose insert fails creates and counts nothing. It returns
// the hooks in the batch's order and the usage after them.
//
// With an IdempotencyKey, a repeat of an earlier batch returns that batch's
// hooks as they are now and the current usage, creating and counting
// nothing; the key's other errors are Create's. The hooks of the batch's
// keys are replaced as by Create, all or none: one that cannot be is a
// *ReplaceError and the batch creates nothing. Thresholds reached are
// claimed in the transaction and announced after it commits.
func (s *Service) CreateAll(ctx context.Context, projectID uuid.UUID, b NewBatch) ([]Hook, quota.Usage, error) {
	batch := make([]pending, len(b.Hooks))
	for i, n := range b.Hooks {
		p, err := newPending(projectID, n)
		if err != nil {
			return nil, quota.Usage{}, err
		}
		batch[i] = p
	}
	var (
		hooks  []store.Hook
		charge quota.Charge
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		earlier, err := s.claimBatch(ctx, q, projectID, b, batch)
		if err != nil || earlier != nil {
			hooks = earlier
			if err == nil {
				charge.Usage, err = usage(ctx, q, projectID)
			}
			return err
		}
		if err := replaceAll(ctx, q, projectID, b); err != nil {
			return err
		}
		hooks, charge, err = insertAll(ctx, q, projectID, batch)
		return err
	})
	if err != nil {
		return nil, charge.Usage, err
	}
	s.announce(ctx, charge.Crossed)
	return FromRows(hooks), charge.Usage, nil
}

// claimBatch claims the batch's IdempotencyKey, if it has one, for its
// hooks, and returns the earlier batch's hooks when the claim finds one.
func (s *Service) claimBatch(ctx context.Context, q *store.Queries, projectID uuid.UUID, b NewBatch, batch []pending) ([]store.Hook, error) {
	if b.IdempotencyKey == "" {
		return nil, nil
	}
	fingerprint, err := b.fingerprint()
	if err != nil {
		return nil, fmt.Errorf("request fingerprint: %w", err)
	}
	ids := make([]uuid.UUID, len(batch))
	for i, p := range batch {
		ids[i] = p.id
	}
	earlier, repeat, err := idempotency.Claim(ctx, q, projectID, b.IdempotencyKey, fingerprint, ids, s.keysTTL)
	if err != nil || !repeat {
		return nil, err
	}
	return hooksByID(ctx, q, projectID, earlier)
}

// hooksByID returns the project's hooks ids in their order, or
// idempotency.ErrHookDeleted when one of them is gone.
func hooksByID(ctx context.Context, q *store.Queries, projectID uuid.UUID, ids []uuid.UUID) ([]store.Hook, error) {
	texts := make([]string, len(ids))
	for i, id := range ids {
		texts[i] = id.String()
	}
	rows, err := q.GetHooksByIDs(ctx, store.GetHooksByIDsParams{ProjectID: projectID, Ids: texts})
	if err != nil {
		return nil, fmt.Errorf("get hooks of idempotency key: %w", postgres.Translate(err))
	}
	byID := make(map[uuid.UUID]store.Hook, len(rows))
	for _, h := range rows {
		byID[h.ID] = h
	}
	hooks := make([]store.Hook, len(ids))
	for i, id := range ids {
		h, ok := byID[id]
		if !ok {
			return nil, idempotency.ErrHookDeleted
		}
		hooks[i] = h
	}
	return hooks, nil
}

// usage is the project's standing, which a repeat does not change.
func usage(ctx context.Context, q *store.Queries, projectID uuid.UUID) (quota.Usage, error) {
	limits, err := quota.Read(ctx, q, projectID)
	return limits.Usage, err
}

// insertAll inserts the batch's hooks with one statement (insertProject)
// and then counts them together (quota.Add, last: it locks the project's
// usage row until the commit), so that either all fit or the caller rolls
// back.
func insertAll(ctx context.Context, q *store.Queries, projectID uuid.UUID, batch []pending) ([]store.Hook, quota.Charge, error) {
	hooks, err := insertProject(ctx, q, projectID, batch)
	if err != nil {
		return nil, quota.Charge{}, err
	}
	charge, err := quota.Add(ctx, q, projectID, int64(len(batch)))
	if err != nil {
		return nil, charge, err
	}
	return hooks, charge, nil
}

// insertProject inserts the hooks of one project's batch in one statement
// (InsertProjectHooks: no join, so the rows go in in the batch's order)
// and returns them in that order.
func insertProject(ctx context.Context, q *store.Queries, projectID uuid.UUID, batch []pending) ([]store.Hook, error) {
	arg := store.InsertProjectHooksParams{
		ProjectID: projectID,
		Ids:       make([]string, len(batch)), Paths: make([]string, len(batch)), Datas: make([]string, len(batch)),
		PostAts: make([]time.Time, len(batch)), PostInSeconds: make([]int64, len(batch)),
		RetryOverrides: make([]string, len(batch)), Keys: make([]string, len(batch)),
		Tags: make([]string, len(batch)), PostAtLocals: make([]string, len(batch)), Timezones: make([]string, len(batch)),
		OrderingKeys: make([]string, len(batch)), TzVersion: calendar.Current().Version,
	}
	for i, p := range batch {
		arg.Ids[i], arg.Paths[i] = p.id.String(), p.n.Path
		arg.Datas[i], arg.RetryOverrides[i] = string(p.n.Data), string(p.n.RetryOverride)
		arg.Keys[i], arg.Tags[i], arg.OrderingKeys[i] = p.n.Key, tagsLiteral(p.n.Tags), p.n.OrderingKey
		arg.PostAtLocals[i], arg.Timezones[i] = p.n.Local.columns()
		arg.PostInSeconds[i] = -1
		if p.n.PostAt != nil {
			arg.PostAts[i] = *p.n.PostAt
		} else {
			arg.PostInSeconds[i] = int64(p.n.PostIn.Seconds())
		}
	}
	rows, err := q.InsertProjectHooks(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("insert hooks: %w", postgres.Translate(err))
	}
	return inBatchOrder(batch, rows)
}

// inBatchOrder returns the inserted rows in the batch's order; a hook
// missing from them (its project was deleted meanwhile) fails the batch.
func inBatchOrder(batch []pending, rows []store.Hook) ([]store.Hook, error) {
	if len(rows) == len(batch) {
		// The statement returns them in the batch's order: check each
		// instead of building a map.
		ordered := true
		for i := range rows {
			if rows[i].ID != batch[i].id {
				ordered = false
				break
			}
		}
		if ordered {
			return rows, nil
		}
	}
	hooks := make([]store.Hook, len(batch))
	byID := make(map[uuid.UUID]*store.Hook, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}
	for i, p := range batch {
		h, ok := byID[p.id]
		if !ok {
			return nil, fmt.Errorf("insert hook %s: %w", p.id, postgres.ErrNotFound)
		}
		hooks[i] = *h
	}
	return hooks, nil
}
