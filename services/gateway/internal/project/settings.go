package project

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/orderingkey"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// RetryPolicy is a project's default retry settings; a hook's
// retryOverride wins over them.
type RetryPolicy = retry.Policy

// Quota is the project's plan: hooks per billing period, the hard cap
// as a percentage of it, and the most days its finished hooks may be kept
// (the bound of RetentionDays). Only an operator changes it (SetPlan,
// SetMaxRetentionDays).
type Quota struct {
	Limit            int64
	HardCapPercent   int32
	MaxRetentionDays int
}

// Alerts are the project's notification settings: how long failures are
// gathered into one message, how follow-ups back off, and who gets the
// usage e-mails (docs/notifications.md).
type Alerts struct {
	GroupWaitSecs   int
	FollowUpMinSecs int
	FollowUpMaxSecs int
	OwnerEmails     []string
}

// Settings is a project as its owner sees and changes it. The custom
// Authorization header is write-only: only whether it is set is shown.
type Settings struct {
	ID                     uuid.UUID
	Name                   string
	Domain                 string
	RetryPolicy            RetryPolicy
	AsyncTimeoutSecs       int
	AuthorizationHeaderSet bool
	Quota                  Quota
	Alerts                 Alerts
	// SignatureScheme is the delivery signature headers, one of
	// signing.SignatureSchemes.
	SignatureScheme string
	// MaxConcurrency is the project's cap on its deliveries in flight to
	// one host from one dispatcher; nil: none (the dispatcher's adaptive
	// limit under its ceiling decides).
	MaxConcurrency *int
	// RetentionDays is how many days completed and failed hooks are kept
	// after they finished (the scheduler's cleaner then deletes them with
	// their attempts), 1 to Quota.MaxRetentionDays.
	RetentionDays int
	// FailurePolicy is the action per failure class the project chose
	// (pkg/failclass); a class it leaves out is retried.
	FailurePolicy failclass.Policy
	// OrderingOnFailure is what an ordering key does when its head hook
	// fails for good: OrderingContinue or OrderingHold.
	OrderingOnFailure string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// settingsRow is every query's view of a project's settings (sqlc makes
// one identical type per query; they convert to this one).
type settingsRow = store.GetProjectSettingsRow

func fromRow(r settingsRow) Settings {
	return Settings{
		ID:     r.ID,
		Name:   r.Name,
		Domain: r.Domain,
		RetryPolicy: retry.Columns{
			MinRetries: r.RetryMinRetries, DelaySecs: r.RetryDelaySecs, Strategy: r.RetryStrategy,
			BackoffFactor: r.RetryBackoffFactor, MaxDelaySecs: r.RetryMaxDelaySecs, Jitter: r.RetryJitter,
		}.Project(),
		AsyncTimeoutSecs:       int(r.AsyncTimeoutSecs),
		AuthorizationHeaderSet: r.AuthorizationHeaderSet,
		Quota: Quota{Limit: r.PlanQuota, HardCapPercent: r.PlanHardCapPercent,
			MaxRetentionDays: int(r.PlanMaxRetentionDays)},
		Alerts: Alerts{
			GroupWaitSecs:   int(r.AlertGroupWaitSecs),
			FollowUpMinSecs: int(r.AlertFollowupMinSecs),
			FollowUpMaxSecs: int(r.AlertFollowupMaxSecs),
			OwnerEmails:     r.OwnerEmails,
		},
		SignatureScheme: r.SignatureScheme,
		MaxConcurrency:  intPtr(r.MaxConcurrency),
		RetentionDays:   int(r.RetentionDays),
		// Written by Update alone, always valid; Decode leaves out what
		// this release cannot take.
		FailurePolicy:     decodePolicy(r.FailurePolicy),
		OrderingOnFailure: r.OrderingOnFailure,
		CreatedAt:         r.CreatedAt,
		UpdatedAt:         r.UpdatedAt,
	}
}

// decodePolicy reads the failure_policy column; one that is not a JSON
// object of strings (a manual edit) retries every class.
func decodePolicy(raw []byte) failclass.Policy {
	p, err := failclass.Decode(raw)
	if err != nil {
		return failclass.Policy{}
	}
	return p
}

// intPtr converts a nullable column.
func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// int32Ptr converts to a nullable column.
func int32Ptr(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

// Service reads and changes project settings.
type Service struct {
	pool *pgxpool.Pool
	// keys seal the Authorization header value.
	keys *secretbox.Keyring
}

// NewService returns a Service on pool, sealing the Authorization header
// value with keys.
func NewService(pool *pgxpool.Pool, keys *secretbox.Keyring) *Service {
	return &Service{pool: pool, keys: keys}
}

// Get returns the project's settings, or postgres.ErrNotFound.
func (s *Service) Get(ctx context.Context, projectID uuid.UUID) (Settings, error) {
	row, err := store.New(s.pool).GetProjectSettings(ctx, projectID)
	if err != nil {
		return Settings{}, fmt.Errorf("project %s: %w", projectID, postgres.Translate(err))
	}
	return fromRow(row), nil
}

// Update applies p: the fields it sets change, the others stay. Every
// problem is reported at once, as an *InvalidSettingsError, and nothing
// changes then. An empty patch changes nothing, updatedAt included. The
// project's row is locked while p is merged into it, so that concurrent
// updates of different fields both take effect. A change of
// orderingOnFailure from "hold" to "continue" resumes the project's held
// keys in the same transaction (orderingkey.ResumeAllHeld).
func (s *Service) Update(ctx context.Context, projectID uuid.UUID, p Patch) (Settings, error) {
	if err := p.check(); err != nil {
		return Settings{}, err
	}
	if p.empty() {
		return s.Get(ctx, projectID)
	}
	var updated Settings
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		updated, err = update(ctx, store.New(tx), s.keys, projectID, p)
		return err
	})
	if err != nil {
		return Settings{}, fmt.Errorf("update project: %w", err)
	}
	return updated, nil
}

func update(ctx context.Context, q *store.Queries, keys *secretbox.Keyring, projectID uuid.UUID, p Patch) (Settings, error) {
	row, err := q.LockProjectSettings(ctx, projectID)
	if err != nil {
		return Settings{}, fmt.Errorf("project %s: %w", projectID, postgres.Translate(err))
	}
	cur := fromRow(settingsRow(row))
	next, err := p.apply(cur)
	if err != nil {
		return Settings{}, err
	}
	var authorization *string
	if v := p.AuthorizationHeader.Ptr(); v != nil {
		sealed, err := keys.SealString(secretbox.Label(secretbox.ProjectAuthorization, projectID), *v)
		if err != nil {
			return Settings{}, fmt.Errorf("authorizationHeader: %w", err)
		}
		authorization = &sealed
	}
	// Keys held under "hold" would otherwise wait, after the change, for
	// the scheduler's periodic look at their next hooks. They are resumed
	// in this transaction, before the setting is written: a key is held
	// only while the setting says "hold".
	if cur.OrderingOnFailure == OrderingHold && next.OrderingOnFailure == OrderingContinue {
		if _, err := orderingkey.ResumeAllHeld(ctx, q, projectID); err != nil {
			return Settings{}, err
		}
	}
	rp := next.RetryPolicy
	updated, err := q.UpdateProjectSettings(ctx, store.UpdateProjectSettingsParams{
		ID:                        projectID,
		Name:                      next.Name,
		Domain:                    next.Domain,
		RetryMinRetries:           int32(rp.MinRetries),
		RetryDelaySecs:            int32(rp.DelaySecs),
		RetryStrategy:             rp.Strategy,
		RetryBackoffFactor:        rp.BackoffFactor,
		RetryMaxDelaySecs:         int32(rp.MaxDelaySecs),
		RetryJitter:               rp.Jitter,
		AsyncTimeoutSecs:          int32(next.AsyncTimeoutSecs),
		AlertGroupWaitSecs:        int32(next.Alerts.GroupWaitSecs),
		AlertFollowupMinSecs:      int32(next.Alerts.FollowUpMinSecs),
		AlertFollowupMaxSecs:      int32(next.Alerts.FollowUpMaxSecs),
		OwnerEmails:               nonNil(next.Alerts.OwnerEmails),
		SignatureScheme:           next.SignatureScheme,
		MaxConcurrency:            int32Ptr(next.MaxConcurrency),
		RetentionDays:             int32(next.RetentionDays),
		FailurePolicy:             next.FailurePolicy.Encode(),
		OrderingOnFailure:         next.OrderingOnFailure,
		SetAuthorizationHeader:    p.AuthorizationHeader.Set,
		AuthorizationHeaderSealed: authorization,
	})
	if err != nil {
		return Settings{}, fmt.Errorf("store: %w", postgres.Translate(err))
	}
	return fromRow(settingsRow(updated)), nil
}

// nonNil is s, or an empty list for nil: a nil slice is SQL NULL, and the
// column is NOT NULL.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
