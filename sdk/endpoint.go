package sundial

import (
	"context"
	"time"
)

// Endpoint is a destination server (the project's domain) and its
// circuit breaker.
type Endpoint struct {
	Domain string `json:"domain"`
	// State is "active" or "paused".
	State string `json:"state"`
	// Cause is "failures", "retry_after" or "failure_policy" (until
	// resumed) for a paused endpoint.
	Cause               string    `json:"cause,omitempty"`
	Reason              string    `json:"reason,omitempty"`
	PausedAt            time.Time `json:"pausedAt,omitzero"`
	PausedUntil         time.Time `json:"pausedUntil,omitzero"`
	Probing             bool      `json:"probing,omitempty"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	LastError           string    `json:"lastError,omitempty"`
	ResumeRequested     bool      `json:"resumeRequested"`
}

// EndpointService is the endpoints part of the API.
type EndpointService struct{ c *Client }

// List returns the domains that have failed at least once, with their
// circuit breakers (GET /v1/endpoints).
func (s *EndpointService) List(ctx context.Context) ([]Endpoint, error) {
	return get[[]Endpoint](ctx, s.c, call{method: "GET", path: "/endpoints"})
}

// Resume asks to end a paused endpoint's pause now
// (POST /v1/endpoints/resume).
func (s *EndpointService) Resume(ctx context.Context, domain string) (Endpoint, error) {
	body := struct {
		Domain string `json:"domain"`
	}{domain}
	// Asking twice changes nothing, so it is retried like a GET.
	return get[Endpoint](ctx, s.c, call{method: "POST", path: "/endpoints/resume", body: body, idempotent: true})
}
