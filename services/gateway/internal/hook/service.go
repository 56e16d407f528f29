package hook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// ErrNotFound is a hook that does not exist in the project asking for it,
// whether it exists in another project or not at all.
var ErrNotFound = errors.New("hook not found")

// Announcer publishes the alerts of usage thresholds that a committed
// transaction claimed (quota.Alerts).
type Announcer interface {
	Announce(ctx context.Context, crossed []quota.Crossing)
}

// Service stores hooks.
type Service struct {
	pool    *pgxpool.Pool
	alerts  Announcer
	keysTTL time.Duration
}

// Option configures a Service.
type Option func(*Service)

// WithAnnouncer publishes quota threshold alerts through a; without it
// thresholds are still claimed, and no alert is sent.
func WithAnnouncer(a Announcer) Option {
	return func(s *Service) { s.alerts = a }
}

// WithIdempotencyTTL changes how long an Idempotency-Key names its hook
// (idempotency.TTL by default); tests shorten it.
func WithIdempotencyTTL(d time.Duration) Option {
	return func(s *Service) { s.keysTTL = d }
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool, opts ...Option) *Service {
	s := &Service{pool: pool, keysTTL: idempotency.TTL}
	for _, o := range opts {
		o(s)
	}
	return s
}

// created is what Create's transaction produced.
type created struct {
	hook   store.Hook
	charge quota.Charge
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
func (s *Service) Create(ctx context.Context, projectID uuid.UUID, n New) (store.Hook, quota.Usage, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return store.Hook{}, quota.Usage{}, fmt.Errorf("hook id: %w", err)
	}
	out, err := s.create(ctx, projectID, id, n)
	if err != nil {
		return store.Hook{}, out.charge.Usage, err
	}
	s.announce(ctx, out.charge.Crossed)
	return out.hook, out.charge.Usage, nil
}

// announce publishes the alerts of thresholds claimed by a committed
// transaction.
func (s *Service) announce(ctx context.Context, crossed []quota.Crossing) {
	if s.alerts != nil && len(crossed) > 0 {
		s.alerts.Announce(ctx, crossed)
	}
}

// create is Create's transaction, for a hook whose id is chosen.
func (s *Service) create(ctx context.Context, projectID, id uuid.UUID, n New) (created, error) {
	var (
		fingerprint []byte
		err         error
	)
	if n.IdempotencyKey != "" {
		if fingerprint, err = n.fingerprint(); err != nil {
			return created{}, fmt.Errorf("request fingerprint: %w", err)
		}
	}
	var out created
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if n.IdempotencyKey != "" {
			earlier, repeat, err := idempotency.Claim(ctx, q, projectID, n.IdempotencyKey, fingerprint, id, s.keysTTL)
			if err != nil {
				return err
			}
			if repeat {
				out, err = repeated(ctx, q, projectID, earlier)
				return err
			}
		}
		out, err = insert(ctx, q, id, projectID, n)
		return err
	})
	return out, err
}

// insert creates the hook and then counts it: the count locks the project's
// usage row until commit, so it comes last to hold that lock briefly.
func insert(ctx context.Context, q *store.Queries, id, projectID uuid.UUID, n New) (created, error) {
	plan, err := q.GetProjectPlan(ctx, projectID)
	if err != nil {
		return created{}, fmt.Errorf("project plan: %w", postgres.Translate(err))
	}
	h, err := q.InsertHook(ctx, insertParams(id, projectID, plan.Domain, n))
	if err != nil {
		return created{}, fmt.Errorf("insert hook: %w", postgres.Translate(err))
	}
	charge, err := quota.Add(ctx, q, projectID, 1)
	if err != nil {
		return created{charge: charge}, err
	}
	return created{hook: h, charge: charge}, nil
}

// repeated answers a repeat of an earlier request: its hook as it is now,
// and the usage, which the repeat does not change.
func repeated(ctx context.Context, q *store.Queries, projectID, hookID uuid.UUID) (created, error) {
	h, err := q.GetHook(ctx, store.GetHookParams{ProjectID: projectID, ID: hookID})
	if err != nil {
		if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
			return created{}, idempotency.ErrHookDeleted
		}
		return created{}, fmt.Errorf("get hook of idempotency key: %w", err)
	}
	limits, err := quota.Read(ctx, q, projectID)
	if err != nil {
		return created{}, err
	}
	return created{hook: h, charge: quota.Charge{Usage: limits.Usage}}, nil
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
