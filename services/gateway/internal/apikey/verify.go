package apikey

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Recording a key's last use is bookkeeping, not part of answering the
// request, so it runs beside the request rather than before it. At most
// touchBudget records run at once; a use that finds the budget spent is
// not recorded, which costs nothing: last_used_at is written at most once
// a minute per key anyway, and the key's next request tries again.
const (
	touchBudget  = 8
	touchTimeout = 5 * time.Second
)

// Identity is who a valid key speaks for.
type Identity struct {
	KeyID     uuid.UUID
	ProjectID uuid.UUID
}

// Verifier resolves API keys to their project. It reads the key's row on
// every call, with no cache of its own; the API puts a short-lived cache
// of valid keys in front of it (package keycache).
type Verifier struct {
	q       *store.Queries
	touches chan struct{} // a slot per record in flight
	wg      sync.WaitGroup
}

// NewVerifier returns a Verifier reading keys through q.
func NewVerifier(q *store.Queries) *Verifier {
	return &Verifier{q: q, touches: make(chan struct{}, touchBudget)}
}

// Verify returns the project of a valid key; ErrInvalid or ErrRevoked when
// the key must be refused; another error when the look-up itself failed.
func (v *Verifier) Verify(ctx context.Context, plain string) (uuid.UUID, error) {
	id, err := v.Identify(ctx, plain)
	return id.ProjectID, err
}

// Identify is Verify that also names the key, for limits kept per key.
func (v *Verifier) Identify(ctx context.Context, plain string) (Identity, error) {
	prefix, err := Prefix(plain)
	if err != nil {
		return Identity{}, err
	}
	row, err := v.q.GetAPIKeyByPrefix(ctx, prefix)
	if err != nil {
		if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
			return Identity{}, ErrInvalid
		}
		return Identity{}, fmt.Errorf("look up api key: %w", err)
	}
	if err := v.check(ctx, plain, row.KeyHash, row.RevokedAt, row.TouchDue, row.ID); err != nil {
		return Identity{}, err
	}
	return Identity{KeyID: row.ID, ProjectID: row.ProjectID}, nil
}

// IdentifyWithLimits is Identify that also reads the project's limits (its
// quota standing and rate limit, as quota.Read does) in the same query:
// every authenticated request needs both, and a round trip less per
// request is a good share of the API's database work. The key's id lets a
// cache of valid keys forget it when it is revoked.
func (v *Verifier) IdentifyWithLimits(ctx context.Context, plain string) (Identity, quota.Limits, error) {
	prefix, err := Prefix(plain)
	if err != nil {
		return Identity{}, quota.Limits{}, err
	}
	row, err := v.q.GetAPIKeyWithLimits(ctx, prefix)
	if err != nil {
		if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
			return Identity{}, quota.Limits{}, ErrInvalid
		}
		return Identity{}, quota.Limits{}, fmt.Errorf("look up api key: %w", err)
	}
	if err := v.check(ctx, plain, row.KeyHash, row.RevokedAt, row.TouchDue, row.ID); err != nil {
		return Identity{}, quota.Limits{}, err
	}
	return Identity{KeyID: row.ID, ProjectID: row.ProjectID}, quota.Limits{
		Usage: quota.Usage{
			Limit:       row.PlanQuota,
			Used:        row.HooksCreated,
			HardCap:     quota.HardCap(row.PlanQuota, row.PlanHardCapPercent),
			PeriodStart: row.PeriodStart,
			ResetsAt:    row.PeriodEnd,
			Now:         row.DbNow,
		},
		RatePerSecond: int(row.RateLimitPerSecond),
		RateBurst:     int(row.RateLimitBurst),
	}, nil
}

// check refuses a key whose hash does not match or that is revoked, and
// records a use of a valid one when one is due.
func (v *Verifier) check(ctx context.Context, plain string, hash []byte, revokedAt *time.Time, touchDue bool, keyID uuid.UUID) error {
	if !Matches(plain, hash) {
		return ErrInvalid
	}
	if revokedAt != nil {
		return ErrRevoked
	}
	if touchDue {
		v.touch(ctx, keyID)
	}
	return nil
}

// touch records a use of the key in the background, if the budget allows.
// It outlives the request (the request's values stay, its cancellation
// does not) and is bounded by touchTimeout; Wait waits for it.
func (v *Verifier) touch(ctx context.Context, keyID uuid.UUID) {
	select {
	case v.touches <- struct{}{}:
	default:
		return
	}
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		defer func() { <-v.touches }()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), touchTimeout)
		defer cancel()
		// A failure loses one timestamp that the key's next request
		// records again; it is not worth a log line per request.
		_, _ = v.q.TouchAPIKey(ctx, keyID)
	}()
}

// Wait waits for the last-use records in flight: call it before closing
// the pool, e.g. once the HTTP server has shut down.
func (v *Verifier) Wait() {
	v.wg.Wait()
}
