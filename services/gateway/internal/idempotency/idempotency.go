// Package idempotency makes POST /v1/hooks and POST /v1/hooks/batch safe to
// repeat: a request with an Idempotency-Key header creates its hooks once,
// and a repeat with the same key within TTL (24 hours) gets those hooks back
// instead of creating others.
//
// Rules, all per project:
//   - A key is 1 to 255 printable ASCII characters (ValidateKey).
//   - A repeat within TTL with the same request (the same canonical
//     fingerprint) names the first request's hooks: nothing is created or
//     counted. A single create and a batch never share a fingerprint.
//   - The same key with a different request within TTL is refused
//     (ErrKeyReused; the API answers 409 idempotency_key_reused).
//   - A repeat one of whose hooks has since been deleted is refused as well
//     (ErrHookDeleted, 409): recreating a hook its owner deleted would be a
//     surprise, and the key still names it.
//   - After TTL the key is free: the next request with it creates a new hook.
//   - Concurrent requests with one key wait for each other in the database:
//     one creates, the others get its hook.
//
// Expired keys are taken over by the next claim, so correctness never waits
// for the Sweeper, which only keeps the table small.
package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// TTL is how long a key names its hook.
const TTL = 24 * time.Hour

// MaxKeyLength is the longest key, in bytes.
const MaxKeyLength = 255

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

var (
	// ErrInvalidKey is a key that is empty, too long or not printable ASCII.
	ErrInvalidKey = errors.New("Idempotency-Key must be 1 to 255 printable ASCII characters")
	// ErrKeyReused is a key that names a different request made within TTL.
	ErrKeyReused = errors.New("Idempotency-Key was already used with a different request in the last 24 hours; use a new key for a new hook")
	// ErrHookDeleted is a key whose hook has been deleted since it was made.
	ErrHookDeleted = errors.New("Idempotency-Key names a hook that has since been deleted; use a new key for a new hook")
)

// ValidateKey checks a key's form: 1 to MaxKeyLength characters from
// 0x20 (space) to 0x7E (tilde).
func ValidateKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyLength {
		return ErrInvalidKey
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return ErrInvalidKey
		}
	}
	return nil
}

// Claim takes key for the hooks hookIDs (at least one, in the request's
// order) that q's transaction is about to create, and returns (hookIDs,
// false). When a live request already holds the key with the same
// fingerprint it returns that request's hook ids, in its order, and true:
// the caller creates nothing. A different fingerprint is ErrKeyReused.
//
// Call it first in the transaction: a concurrent claim of the same key
// waits for this transaction to end, and the key's lock must not be taken
// after locks that the other transaction holds.
func Claim(ctx context.Context, q *store.Queries, projectID uuid.UUID, key string, fingerprint []byte, hookIDs []uuid.UUID, ttl time.Duration) ([]uuid.UUID, bool, error) {
	if len(hookIDs) == 0 {
		return nil, false, errors.New("claim idempotency key: no hook")
	}
	texts := make([]string, len(hookIDs))
	for i, id := range hookIDs {
		texts[i] = id.String()
	}
	_, err := q.ClaimIdempotencyKey(ctx, store.ClaimIdempotencyKeyParams{
		ProjectID: projectID, Key: key, RequestHash: fingerprint, HookID: hookIDs[0], HookIds: texts,
		TtlSeconds: ttl.Seconds(),
	})
	if err == nil {
		return hookIDs, false, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, fmt.Errorf("claim idempotency key: %w", postgres.Translate(err))
	}
	held, err := q.GetIdempotencyKey(ctx, store.GetIdempotencyKeyParams{ProjectID: projectID, Key: key})
	if err != nil {
		return nil, false, fmt.Errorf("read idempotency key: %w", postgres.Translate(err))
	}
	if !bytes.Equal(held.RequestHash, fingerprint) {
		return nil, false, ErrKeyReused
	}
	ids := make([]uuid.UUID, len(held.HookIds))
	for i, t := range held.HookIds {
		if ids[i], err = uuid.Parse(t); err != nil {
			return nil, false, fmt.Errorf("read idempotency key: hook id %q: %w", t, err)
		}
	}
	return ids, true, nil
}

// Sweeper deletes expired keys in the background.
type Sweeper struct {
	q        *store.Queries
	log      *slog.Logger
	ttl      time.Duration
	interval time.Duration
	batch    int
}

// Sweeping bounds: each round deletes at most maxBatches × batch keys, so a
// backlog is worked off over several rounds without a long transaction.
const (
	defaultSweepInterval = time.Minute
	defaultSweepBatch    = 1000
	maxBatches           = 100
)

// NewSweeper returns a Sweeper deleting keys older than ttl once a minute.
func NewSweeper(q *store.Queries, log *slog.Logger, ttl time.Duration) *Sweeper {
	return &Sweeper{q: q, log: log, ttl: ttl, interval: defaultSweepInterval, batch: defaultSweepBatch}
}

// Run sweeps every interval until ctx ends. Several gateways may sweep at
// once: each takes different rows.
func (s *Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "sweep idempotency keys", "err", err)
			}
		}
	}
}

// Sweep deletes expired keys, a batch at a time, until a batch comes back
// short or the round's bound is reached, and returns how many it deleted.
func (s *Sweeper) Sweep(ctx context.Context) (int64, error) {
	var total int64
	for range maxBatches {
		n, err := s.q.DeleteExpiredIdempotencyKeys(ctx, store.DeleteExpiredIdempotencyKeysParams{
			TtlSeconds: s.ttl.Seconds(), MaxKeys: int32(s.batch),
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("delete expired idempotency keys: %w", err)
		}
		if n < int64(s.batch) {
			break
		}
	}
	if total > 0 {
		s.log.InfoContext(ctx, "swept idempotency keys", "deleted", total)
	}
	return total, nil
}
