// Package orderingkey shows and resumes a project's ordering keys (GET
// /v1/ordering-keys/{key}, GET /v1/ordering-keys?held=true, POST
// /v1/ordering-keys/{key}/resume). Hooks of a project that share an
// ordering key are delivered one at a time, in order of postAt, then
// createdAt, then id; the scheduler's claim enforces it by keeping each
// key's head, the one hook of the key that may be delivered (migration
// 00036). A key whose head failed for good, in a project whose
// orderingOnFailure is "hold", is held: its next hooks wait until it is
// resumed here, or until that hook is deleted or retried.
package orderingkey

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Key is an ordering key as the API shows it.
type Key struct {
	Key string
	// HeadHookID is the hook the key is on: being delivered, waiting for a
	// retry or an async answer, or, when the key is held, the failed hook
	// it waits behind; nil when the key is free for its next hook.
	HeadHookID *uuid.UUID
	// Held says the key waits for a resume.
	Held bool
	// Unfinished counts the key's pending and retry hooks.
	Unfinished int64
}

// ErrNotFound is a key the project has no trace of: no head was ever
// taken for it, and it has no unfinished hook.
var ErrNotFound = errors.New("ordering key not found")

// NotHeldError is a resume of a key that is not held; Key is its state.
type NotHeldError struct {
	Key Key
}

func (e *NotHeldError) Error() string {
	if e.Key.HeadHookID != nil {
		return fmt.Sprintf("ordering key is not held: its hook %s is being delivered, or waits for a retry or an async answer; there is nothing to resume", *e.Key.HeadHookID)
	}
	return "ordering key is not held: no failed hook holds it, and its hooks are delivered in turn; there is nothing to resume"
}

// Service reads and resumes ordering keys.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool}
}

// Get returns the project's key, or ErrNotFound.
func (s *Service) Get(ctx context.Context, projectID uuid.UUID, key string) (Key, error) {
	return get(ctx, store.New(s.pool), projectID, key)
}

func get(ctx context.Context, q *store.Queries, projectID uuid.UUID, key string) (Key, error) {
	row, err := q.GetOrderingKey(ctx, store.GetOrderingKeyParams{ProjectID: projectID, OrderingKey: key})
	if err != nil {
		if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
			// The project itself is gone (deleted during the request).
			return Key{}, ErrNotFound
		}
		return Key{}, fmt.Errorf("get ordering key: %w", err)
	}
	if !row.Known && row.Unfinished == 0 {
		return Key{}, ErrNotFound
	}
	return Key{Key: key, HeadHookID: row.HeadHookID, Held: row.Held, Unfinished: row.Unfinished}, nil
}

// Resume frees a held key for its next hook and returns its new state: in
// one transaction, the key's next unfinished hook is made due now (or at
// its postAt, if later), then the key's head is cleared, as long as the
// key is still held then. The hook it was held behind stays failed. A key
// that is not held is a *NotHeldError, and nothing changes; one the
// project has no trace of is ErrNotFound.
//
// The order is the scheduler's claim's, hooks then the key's row, so that
// a resume and a claim of the same key wait for each other instead of
// deadlocking.
func (s *Service) Resume(ctx context.Context, projectID uuid.UUID, key string) (Key, error) {
	var out Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := q.WakeOrderingKey(ctx, store.WakeOrderingKeyParams{ProjectID: projectID, OrderingKey: key}); err != nil {
			return fmt.Errorf("wake ordering key: %w", err)
		}
		released, err := q.ReleaseHeldOrderingKey(ctx, store.ReleaseHeldOrderingKeyParams{ProjectID: projectID, OrderingKey: key})
		if err != nil {
			return fmt.Errorf("release ordering key: %w", err)
		}
		state, err := get(ctx, q, projectID, key)
		if err != nil {
			return err
		}
		if released == 0 {
			// Returning an error rolls the wake back.
			return &NotHeldError{Key: state}
		}
		out = state
		return nil
	})
	if err != nil {
		return Key{}, err
	}
	return out, nil
}

// ResumeAllHeld frees every key the project holds, as Resume frees one, in
// the caller's transaction q, and returns how many it freed: each key's
// next unfinished hook is made due now (or at its postAt, if later), then
// the keys lose their heads. Two statements whatever the number of keys:
// the wakes, in key order, then the keys' rows, in key order, the order of
// the scheduler's claim. "Held" needs the project's orderingOnFailure to be
// "hold" still: a change to "continue" calls this before it writes the
// setting.
func ResumeAllHeld(ctx context.Context, q *store.Queries, projectID uuid.UUID) (int64, error) {
	if _, err := q.WakeHeldOrderingKeys(ctx, projectID); err != nil {
		return 0, fmt.Errorf("wake held ordering keys: %w", err)
	}
	released, err := q.ReleaseHeldOrderingKeys(ctx, projectID)
	if err != nil {
		return 0, fmt.Errorf("release held ordering keys: %w", err)
	}
	return released, nil
}
