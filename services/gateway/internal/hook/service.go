package hook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
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

// Get returns a hook of the project, or ErrNotFound.
func (s *Service) Get(ctx context.Context, projectID, id uuid.UUID) (Hook, error) {
	h, err := store.New(s.pool).GetHook(ctx, store.GetHookParams{ProjectID: projectID, ID: id})
	if err != nil {
		if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
			return Hook{}, ErrNotFound
		}
		return Hook{}, fmt.Errorf("get hook: %w", err)
	}
	return FromRow(h), nil
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
