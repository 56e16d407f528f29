package hook

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// ErrNotFound is a hook that does not exist in the project asking for it,
// whether it exists in another project or not at all.
var ErrNotFound = errors.New("hook not found")

// Service stores hooks.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool}
}

// Create stores a hook and counts it against the project's quota, in one
// transaction: a hook refused by the quota (a *quota.ExhaustedError) is
// neither stored nor counted. The usage is returned in both cases.
func (s *Service) Create(ctx context.Context, projectID uuid.UUID, n New) (store.Hook, quota.Usage, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return store.Hook{}, quota.Usage{}, fmt.Errorf("hook id: %w", err)
	}
	var (
		hook  store.Hook
		usage quota.Usage
	)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		plan, err := q.GetProjectPlan(ctx, projectID)
		if err != nil {
			return fmt.Errorf("project plan: %w", postgres.Translate(err))
		}
		if usage, err = quota.Count(ctx, q, projectID, plan); err != nil {
			return err
		}
		hook, err = q.InsertHook(ctx, insertParams(id, projectID, plan.Domain, n))
		if err != nil {
			return fmt.Errorf("insert hook: %w", postgres.Translate(err))
		}
		return nil
	})
	if err != nil {
		return store.Hook{}, usage, err
	}
	return hook, usage, nil
}

func insertParams(id, projectID uuid.UUID, domain string, n New) store.InsertHookParams {
	p := store.InsertHookParams{
		ID:            id,
		ProjectID:     projectID,
		Path:          n.Path,
		Domain:        domain,
		Data:          n.Data,
		RetryOverride: n.RetryOverride,
		PostAt:        n.PostAt,
	}
	if n.PostAt == nil {
		secs := int64(n.PostIn.Seconds())
		p.PostInSeconds = &secs
	}
	return p
}

// Get returns a hook of the project, or ErrNotFound.
func (s *Service) Get(ctx context.Context, projectID, id uuid.UUID) (store.Hook, error) {
	h, err := store.New(s.pool).GetHook(ctx, store.GetHookParams{ProjectID: projectID, ID: id})
	if err != nil {
		if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
			return store.Hook{}, ErrNotFound
		}
		return store.Hook{}, fmt.Errorf("get hook: %w", err)
	}
	return h, nil
}

// Delete removes a hook of the project in any status, with its attempts, or
// returns ErrNotFound. A delivery already in flight may still arrive.
func (s *Service) Delete(ctx context.Context, projectID, id uuid.UUID) error {
	n, err := store.New(s.pool).DeleteHook(ctx, store.DeleteHookParams{ProjectID: projectID, ID: id})
	if err != nil {
		return fmt.Errorf("delete hook: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
