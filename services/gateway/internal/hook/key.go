package hook

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// A hook's key names it in its project while it is unfinished (pending or
// retry; migration 00031's hooks_live_key_idx): a create with the key of
// such a hook replaces it, deleting it and creating the new one in one
// transaction, as long as it was never claimed (pending, no lease, no
// attempt: it never left the database). One that was claimed may be on
// its way to its endpoint, or has been delivered or tried, and stays: the
// create is a *ReplaceError. Once the hook has finished, a create with its
// key creates a new hook beside it.

// ReplaceError is a create whose key names an unfinished hook that was
// claimed: it is being delivered, or waits for a retry or for its 202's
// answer. Deleting that hook (DeleteByKey) frees the key.
type ReplaceError struct {
	Key    string
	HookID uuid.UUID
}

func (e *ReplaceError) Error() string {
	return fmt.Sprintf("key names hook %s, which has been claimed for delivery and cannot be replaced; delete it first, or wait until it has finished", e.HookID)
}

// replace deletes the project's unfinished hook of key, if any and never
// claimed, in q's transaction, which then creates the hook that replaces
// it; nothing for an empty key.
func replace(ctx context.Context, q *store.Queries, projectID uuid.UUID, key string) error {
	if key == "" {
		return nil
	}
	if err := q.LockHookKey(ctx, store.LockHookKeyParams{ProjectID: projectID, HookKey: key}); err != nil {
		return fmt.Errorf("lock hook key: %w", err)
	}
	live, err := q.ReplaceKeyedHook(ctx, store.ReplaceKeyedHookParams{ProjectID: projectID, HookKey: key})
	if err != nil {
		return fmt.Errorf("replace hook of key: %w", postgres.Translate(err))
	}
	for _, h := range live {
		if !h.Replaced {
			return &ReplaceError{Key: key, HookID: h.ID}
		}
	}
	return nil
}

// replaceAll is replace for each key of a batch, in the keys' order, so
// that two batches sharing keys lock them in the same order.
func replaceAll(ctx context.Context, q *store.Queries, projectID uuid.UUID, b NewBatch) error {
	var keys []string
	for _, n := range b.Hooks {
		if n.Key != "" {
			keys = append(keys, n.Key)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := replace(ctx, q, projectID, k); err != nil {
			return err
		}
	}
	return nil
}

// GetByKey returns the hook key names in the project: its unfinished hook,
// or when there is none its newest finished one; else ErrNotFound.
func (s *Service) GetByKey(ctx context.Context, projectID uuid.UUID, key string) (Hook, error) {
	h, err := store.New(s.pool).GetHookByKey(ctx, store.GetHookByKeyParams{ProjectID: projectID, HookKey: key})
	if err != nil {
		if err = postgres.Translate(err); errors.Is(err, postgres.ErrNotFound) {
			return Hook{}, ErrNotFound
		}
		return Hook{}, fmt.Errorf("get hook by key: %w", err)
	}
	return FromRow(h), nil
}

// DeleteByKey deletes the hook GetByKey would return, as Delete does, or
// returns ErrNotFound. It holds the key's lock, so a create
// replacing the same key's hook comes wholly before or after it.
func (s *Service) DeleteByKey(ctx context.Context, projectID uuid.UUID, key string) error {
	var deleted []uuid.UUID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := q.LockHookKey(ctx, store.LockHookKeyParams{ProjectID: projectID, HookKey: key}); err != nil {
			return fmt.Errorf("lock hook key: %w", err)
		}
		var err error
		deleted, err = q.DeleteHookByKey(ctx, store.DeleteHookByKeyParams{ProjectID: projectID, HookKey: key})
		if err != nil {
			return fmt.Errorf("delete hook by key: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(deleted) == 0 {
		return ErrNotFound
	}
	return nil
}

// ErrInvalidKey is a key no hook can have.
var ErrInvalidKey = fmt.Errorf("must be 1 to %d printable ASCII characters (0x20 to 0x7E)", idempotency.MaxKeyLength)

// ValidateKey checks a key's form. Its bounds are an Idempotency-Key's:
// both are names a client makes up and sends back.
func ValidateKey(key string) error {
	if idempotency.ValidateKey(key) != nil {
		return ErrInvalidKey
	}
	return nil
}
