// Package signingkey manages the keys that sign a project's deliveries:
// listing them, rotating the active key with a grace period, and revoking a
// retiring key early.
//
// A project has one active key, and at most one retiring key: the key that
// the last rotation replaced, which keeps signing deliveries next to the new
// one (Sundial-Signature carries both) until its grace period ends. A
// rotation while a key is still retiring drops that older key at once, so
// receivers must have switched to the previous key within its grace period
// before rotating again. Grace periods run on the database clock, which the
// dispatcher also uses to leave expired keys out; expired keys are omitted
// from the list and deleted by the next rotation or revocation.
package signingkey

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Key states.
const (
	StateActive   = "active"
	StateRetiring = "retiring"
)

// Grace periods of a rotation.
const (
	DefaultGrace = 24 * time.Hour
	MinGrace     = time.Hour
	MaxGrace     = 7 * 24 * time.Hour
)

var (
	// ErrActive refuses to revoke the active key: deliveries would go
	// unsigned. Rotate first, then revoke the retiring key.
	ErrActive = errors.New("the active signing key cannot be revoked: rotate first, then revoke the retiring key")
	// ErrInvalidGrace is a grace period outside MinGrace..MaxGrace.
	ErrInvalidGrace = errors.New("gracePeriodSecs must be from 3600 (1 hour) to 604800 (7 days)")
)

// Key is a signing key as its project's owner sees it, secret included:
// receivers need it to verify deliveries.
type Key struct {
	ID        uuid.UUID
	State     string
	Secret    string
	CreatedAt time.Time
	// ExpiresAt is when a retiring key stops signing; nil for the active key.
	ExpiresAt *time.Time
}

// FromRow opens a stored key, which is sealed.
func FromRow(keys *secretbox.Keyring, r store.SigningKey) (Key, error) {
	secret, err := keys.Open(secretbox.Label(secretbox.SigningKeySecret, r.ID), r.SecretSealed)
	if err != nil {
		return Key{}, fmt.Errorf("signing key %s: %w", r.ID, err)
	}
	return Key{ID: r.ID, State: r.State, Secret: string(secret), CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}, nil
}

// New returns a new secret: sdsig_ and 32 random bytes in base64url.
// Deliveries are signed with the string's bytes as the HMAC key.
func New() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("signing key: %w", err)
	}
	return "sdsig_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// InsertActive makes a new active key for the project in q's transaction,
// stored sealed with keys. The project must have no active key
// (signing_keys_one_active_idx).
func InsertActive(ctx context.Context, q *store.Queries, keys *secretbox.Keyring, projectID uuid.UUID) (Key, error) {
	secret, err := New()
	if err != nil {
		return Key{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Key{}, fmt.Errorf("signing key id: %w", err)
	}
	sealed, err := keys.SealString(secretbox.Label(secretbox.SigningKeySecret, id), secret)
	if err != nil {
		return Key{}, fmt.Errorf("signing key: %w", err)
	}
	row, err := q.InsertActiveSigningKey(ctx, store.InsertActiveSigningKeyParams{ID: id, ProjectID: projectID, SecretSealed: sealed})
	if err != nil {
		return Key{}, fmt.Errorf("insert signing key: %w", postgres.Translate(err))
	}
	return FromRow(keys, row)
}

// Grace returns the grace period for gracePeriodSecs: DefaultGrace when nil,
// ErrInvalidGrace when outside MinGrace..MaxGrace.
func Grace(secs *int) (time.Duration, error) {
	if secs == nil {
		return DefaultGrace, nil
	}
	if *secs < int(MinGrace/time.Second) || *secs > int(MaxGrace/time.Second) {
		return 0, ErrInvalidGrace
	}
	return time.Duration(*secs) * time.Second, nil
}

// Service lists, rotates and revokes signing keys.
type Service struct {
	pool *pgxpool.Pool
	keys *secretbox.Keyring
}

// NewService returns a Service on pool, sealing and opening the keys' secrets with keys.
func NewService(pool *pgxpool.Pool, keys *secretbox.Keyring) *Service {
	return &Service{pool: pool, keys: keys}
}

// List returns the project's keys that sign deliveries: the active key
// first, then the retiring key if its grace period has not ended.
func (s *Service) List(ctx context.Context, projectID uuid.UUID) ([]Key, error) {
	rows, err := store.New(s.pool).ListSigningKeys(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("list signing keys: %w", err)
	}
	keys := make([]Key, len(rows))
	for i, r := range rows {
		if keys[i], err = FromRow(s.keys, r); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// Rotate makes a new active key and retires the current one for grace,
// in one transaction, and returns the new key then the retiring one. Any
// older retiring key is deleted: one retiring key at a time. Rotations of
// one project are serialised on the project's row, so two at once leave
// one active key and the second retires the key the first made. grace must
// come from Grace.
func (s *Service) Rotate(ctx context.Context, projectID uuid.UUID, grace time.Duration) ([]Key, error) {
	if grace < MinGrace || grace > MaxGrace {
		return nil, ErrInvalidGrace
	}
	var keys []Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		keys, err = rotate(ctx, store.New(tx), s.keys, projectID, grace)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rotate signing keys: %w", err)
	}
	return keys, nil
}

func rotate(ctx context.Context, q *store.Queries, box *secretbox.Keyring, projectID uuid.UUID, grace time.Duration) ([]Key, error) {
	if _, err := q.LockProjectKeys(ctx, projectID); err != nil {
		return nil, fmt.Errorf("project %s: %w", projectID, postgres.Translate(err))
	}
	if _, err := q.DeleteRetiringSigningKeys(ctx, projectID); err != nil {
		return nil, fmt.Errorf("delete retiring keys: %w", err)
	}
	retired, err := q.RetireActiveSigningKey(ctx, store.RetireActiveSigningKeyParams{
		ProjectID: projectID, GraceSeconds: grace.Seconds(),
	})
	// A project without an active key (only possible through direct
	// database edits) simply gets one.
	hadActive := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("retire active key: %w", err)
	}
	active, err := InsertActive(ctx, q, box, projectID)
	if err != nil {
		return nil, err
	}
	if !hadActive {
		return []Key{active}, nil
	}
	old, err := FromRow(box, retired)
	if err != nil {
		return nil, err
	}
	return []Key{active, old}, nil
}

// Revoke deletes a retiring key before its grace period ends; deliveries
// stop carrying its signature (after the dispatcher's short key cache).
// It returns ErrActive for the active key and postgres.ErrNotFound for an
// id that is not one of the project's keys. It holds the same lock as
// Rotate, so a key is never judged in a state a concurrent rotation is
// changing.
func (s *Service) Revoke(ctx context.Context, projectID, id uuid.UUID) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return revoke(ctx, store.New(tx), projectID, id)
	})
	if err != nil {
		return fmt.Errorf("revoke signing key: %w", err)
	}
	return nil
}

func revoke(ctx context.Context, q *store.Queries, projectID, id uuid.UUID) error {
	if _, err := q.LockProjectKeys(ctx, projectID); err != nil {
		return fmt.Errorf("project %s: %w", projectID, postgres.Translate(err))
	}
	n, err := q.DeleteRetiringSigningKey(ctx, store.DeleteRetiringSigningKeyParams{ProjectID: projectID, ID: id})
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if n == 1 {
		return nil
	}
	// Not a retiring key of the project: the active one, or none of its keys.
	if _, err := q.GetSigningKeyState(ctx, store.GetSigningKeyStateParams{ProjectID: projectID, ID: id}); err != nil {
		return fmt.Errorf("signing key %s: %w", id, postgres.Translate(err))
	}
	return ErrActive
}
