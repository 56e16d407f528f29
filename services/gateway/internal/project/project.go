// Package project creates projects, the tenants of Sundial: each owns a
// domain its hooks are delivered to, API keys, a signing key and a plan.
// It also reads and changes a project's settings (PATCH /v1/project) with
// merge-patch semantics: absent fields stay, null clears what may be
// cleared (the custom Authorization header), and every other field at
// fault is reported with its name.
package project

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/apikey"
	"github.com/sundial-run/sundial/services/gateway/internal/signingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Created is what a new project's owner must be told once: the API key is
// not stored and cannot be shown again.
type Created struct {
	ID         uuid.UUID
	APIKey     string
	SigningKey string
}

// keyAttempts bounds the retries after an API key prefix collision.
const keyAttempts = 3

// Create validates name and domain and creates the project with an API key
// and an active signing key, all in one transaction: a project without a
// key would be unusable, and a key without its project meaningless.
// Its secrets (signing key, async secret) are stored sealed with keys.
func Create(ctx context.Context, pool *pgxpool.Pool, keys *secretbox.Keyring, name, domain string) (Created, error) {
	name, err := ValidateName(name)
	if err != nil {
		return Created{}, err
	}
	domain, err = ValidateDomain(domain)
	if err != nil {
		return Created{}, err
	}
	for attempt := 1; ; attempt++ {
		created, err := createOnce(ctx, pool, keys, name, domain)
		if errors.Is(err, postgres.ErrConflict) && attempt < keyAttempts {
			continue
		}
		return created, err
	}
}

func createOnce(ctx context.Context, pool *pgxpool.Pool, keys *secretbox.Keyring, name, domain string) (Created, error) {
	var created Created
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		created, err = insert(ctx, store.New(tx), keys, name, domain)
		return err
	})
	if err != nil {
		return Created{}, fmt.Errorf("create project: %w", err)
	}
	return created, nil
}

// asyncSecretBytes is the size of a project's async secret, which makes
// its ack and nack URLs' tokens (package asyncurl): at least 32
// (projects_async_secret_check).
const asyncSecretBytes = 32

func insert(ctx context.Context, q *store.Queries, keys *secretbox.Keyring, name, domain string) (Created, error) {
	projectID, err := uuid.NewV7()
	if err != nil {
		return Created{}, err
	}
	asyncSecret := make([]byte, asyncSecretBytes)
	if _, err := rand.Read(asyncSecret); err != nil {
		return Created{}, fmt.Errorf("async secret: %w", err)
	}
	sealed, err := keys.Seal(secretbox.Label(secretbox.ProjectAsyncSecret, projectID), asyncSecret)
	if err != nil {
		return Created{}, fmt.Errorf("async secret: %w", err)
	}
	if err := q.InsertProject(ctx, store.InsertProjectParams{ID: projectID, Name: name, Domain: domain, AsyncSecretSealed: sealed}); err != nil {
		return Created{}, fmt.Errorf("insert project: %w", postgres.Translate(err))
	}
	key, err := apikey.New()
	if err != nil {
		return Created{}, err
	}
	if _, err := apikey.Store(ctx, q, projectID, "", key); err != nil {
		return Created{}, err
	}
	signingKey, err := signingkey.InsertActive(ctx, q, keys, projectID)
	if err != nil {
		return Created{}, err
	}
	return Created{ID: projectID, APIKey: key.Plain, SigningKey: signingKey.Secret}, nil
}

// Plan is a project's hook quota per billing period and its hard cap, a
// percentage of the quota past which hooks are refused.
type Plan struct {
	Quota          int64
	HardCapPercent int32
}

// SetPlan changes a project's plan.
func SetPlan(ctx context.Context, q *store.Queries, projectID uuid.UUID, p Plan) error {
	if p.Quota <= 0 || p.HardCapPercent < 100 {
		return fmt.Errorf("plan: want a positive quota and a hard cap of at least 100%%, got %d and %d%%", p.Quota, p.HardCapPercent)
	}
	n, err := q.SetProjectPlan(ctx, store.SetProjectPlanParams{ID: projectID, PlanQuota: p.Quota, PlanHardCapPercent: p.HardCapPercent})
	if err != nil {
		return fmt.Errorf("set plan: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("set plan: project %s: %w", projectID, postgres.ErrNotFound)
	}
	return nil
}

// SetMaxRetentionDays changes the plan's bound of a project's
// retentionDays, 1 to MaxRetentionDays. A project whose retentionDays is
// above the new bound keeps it, and its hooks are kept no longer than the
// bound (the cleaner takes the lesser).
func SetMaxRetentionDays(ctx context.Context, q *store.Queries, projectID uuid.UUID, days int) error {
	if days < MinRetentionDays || days > MaxRetentionDays {
		return fmt.Errorf("plan: want a retention bound of %d to %d days, got %d", MinRetentionDays, MaxRetentionDays, days)
	}
	n, err := q.SetProjectMaxRetentionDays(ctx, store.SetProjectMaxRetentionDaysParams{ID: projectID, PlanMaxRetentionDays: int32(days)})
	if err != nil {
		return fmt.Errorf("set retention bound: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("set retention bound: project %s: %w", projectID, postgres.ErrNotFound)
	}
	return nil
}

// ActiveSigningKey returns the key that signs the project's deliveries.
func ActiveSigningKey(ctx context.Context, q *store.Queries, keys *secretbox.Keyring, projectID uuid.UUID) (string, error) {
	row, err := q.GetActiveSigningKey(ctx, projectID)
	if err != nil {
		return "", fmt.Errorf("active signing key: %w", postgres.Translate(err))
	}
	key, err := signingkey.FromRow(keys, row)
	if err != nil {
		return "", err
	}
	return key.Secret, nil
}
