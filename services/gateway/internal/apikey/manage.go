package apikey

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// MaxNameLength bounds a key's name, in characters.
const MaxNameLength = 100

// ErrLastKey refuses to revoke a project's last usable key: nothing could
// then call the API for the project, and only an operator could give it a
// key again.
var ErrLastKey = errors.New("the project's last usable API key cannot be revoked: create another key first")

// NameError is a key name that cannot be accepted.
type NameError struct {
	Message string
}

func (e *NameError) Error() string { return "name: " + e.Message }

// Info is what may be shown about a stored key: never the key or its hash.
type Info struct {
	ID         uuid.UUID
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Created is a new key and the key itself, which is shown this once.
type Created struct {
	Info
	Plain string
}

// ValidateName checks a key's name (up to 100 characters, no control
// characters; empty is allowed) and returns it without surrounding spaces.
// The length is checked before the spaces go, as the API document's
// maxLength does.
func ValidateName(name string) (string, error) {
	switch {
	case !utf8.ValidString(name):
		return "", &NameError{Message: "must be valid UTF-8"}
	case utf8.RuneCountInString(name) > MaxNameLength:
		return "", &NameError{Message: fmt.Sprintf("at most %d characters", MaxNameLength)}
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", &NameError{Message: "must not contain control characters"}
	}
	return strings.TrimSpace(name), nil
}

// Service creates, lists and revokes a project's keys.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{pool: pool}
}

// storeAttempts bounds the retries after a prefix collision.
const storeAttempts = 3

// Create makes a key for the project. The key is returned once and only
// its prefix and hash are kept.
func (s *Service) Create(ctx context.Context, projectID uuid.UUID, name string) (Created, error) {
	name, err := ValidateName(name)
	if err != nil {
		return Created{}, err
	}
	q := store.New(s.pool)
	for attempt := 1; ; attempt++ {
		k, err := New()
		if err != nil {
			return Created{}, err
		}
		info, err := Store(ctx, q, projectID, name, k)
		if errors.Is(err, postgres.ErrConflict) && attempt < storeAttempts {
			continue
		}
		if err != nil {
			return Created{}, fmt.Errorf("create api key: %w", err)
		}
		return Created{Info: info, Plain: k.Plain}, nil
	}
}

// List returns the project's keys, oldest first, revoked ones included.
func (s *Service) List(ctx context.Context, projectID uuid.UUID) ([]Info, error) {
	rows, err := store.New(s.pool).ListAPIKeys(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	keys := make([]Info, len(rows))
	for i, r := range rows {
		keys[i] = Info(r)
	}
	return keys, nil
}

// Revoke refuses the key from the moment it commits. Revoking a revoked
// key changes nothing and succeeds. It returns postgres.ErrNotFound for an
// id that is not one of the project's keys and ErrLastKey for the
// project's last usable key. Revocations of one project are serialised on
// the project's row, so two at once cannot revoke the last two keys.
func (s *Service) Revoke(ctx context.Context, projectID, id uuid.UUID) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return revoke(ctx, store.New(tx), projectID, id)
	})
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	return nil
}

func revoke(ctx context.Context, q *store.Queries, projectID, id uuid.UUID) error {
	if _, err := q.LockProjectKeys(ctx, projectID); err != nil {
		return fmt.Errorf("project %s: %w", projectID, postgres.Translate(err))
	}
	key, err := q.GetAPIKey(ctx, store.GetAPIKeyParams{ProjectID: projectID, ID: id})
	if err != nil {
		return fmt.Errorf("api key %s: %w", id, postgres.Translate(err))
	}
	if key.RevokedAt != nil {
		return nil
	}
	usable, err := q.CountUsableAPIKeys(ctx, projectID)
	if err != nil {
		return fmt.Errorf("count usable keys: %w", err)
	}
	if usable <= 1 {
		return ErrLastKey
	}
	if _, err := q.RevokeAPIKeyByID(ctx, store.RevokeAPIKeyByIDParams{ProjectID: projectID, ID: id}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}
