// Package endpoint shows a project's endpoints (its destination domains)
// with their circuit breakers, and records requests to resume a paused one
// (docs/security.md, "Circuit breaker and Retry-After"). The scheduler owns
// the breakers' state: this package reads it and sets only the resume
// request, which the scheduler applies.
package endpoint

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// States of an endpoint.
const (
	StateActive = "active"
	StatePaused = "paused"
)

// Endpoint is a domain and its breaker, as the API shows it.
type Endpoint struct {
	Domain              string
	State               string
	Cause               string
	Reason              string
	PausedAt            *time.Time
	PausedUntil         *time.Time
	Probing             bool
	ConsecutiveFailures int32
	LastError           string
	ResumeRequested     bool
}

// Service lists and resumes endpoints.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// List returns the project's endpoints that have failed at least once.
func (s *Service) List(ctx context.Context, projectID uuid.UUID) ([]Endpoint, error) {
	rows, err := store.New(s.pool).ListEndpoints(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	out := make([]Endpoint, len(rows))
	for i, r := range rows {
		out[i] = fromRow(store.RequestEndpointResumeRow(r))
	}
	return out, nil
}

// Resume asks the scheduler to end the domain's pause now; it returns the
// endpoint as it is, or postgres.ErrNotFound when the project has no
// endpoint of that domain.
func (s *Service) Resume(ctx context.Context, projectID uuid.UUID, domain string) (Endpoint, error) {
	row, err := store.New(s.pool).RequestEndpointResume(ctx, store.RequestEndpointResumeParams{ProjectID: projectID, Domain: domain})
	if err != nil {
		return Endpoint{}, fmt.Errorf("resume endpoint: %w", postgres.Translate(err))
	}
	return fromRow(row), nil
}

func fromRow(r store.RequestEndpointResumeRow) Endpoint {
	e := Endpoint{
		Domain: r.Domain, State: StateActive, ConsecutiveFailures: r.ConsecutiveFailures,
		LastError: deref(r.LastError), ResumeRequested: r.ResumeRequested,
	}
	if r.PausedAt != nil {
		e.State, e.PausedAt, e.PausedUntil = StatePaused, r.PausedAt, r.PausedUntil
		e.Cause, e.Reason, e.Probing = deref(r.PauseCause), deref(r.PauseReason), r.ProbeHookID != nil
	}
	return e
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
