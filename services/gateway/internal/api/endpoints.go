package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/endpoint"
)

// Endpoints lists a project's endpoints and records resume requests
// (package endpoint).
type Endpoints interface {
	List(ctx context.Context, projectID uuid.UUID) ([]endpoint.Endpoint, error)
	Resume(ctx context.Context, projectID uuid.UUID, domain string) (endpoint.Endpoint, error)
}

// EndpointDeps is what /v1/endpoints needs, set by app.New.
type EndpointDeps struct {
	Endpoints Endpoints
}

// endpointManagement serves /v1/endpoints.
type endpointManagement struct {
	EndpointDeps
}

// maxDomainLength is a domain's longest form (projects.domain).
const maxDomainLength = 253

var errEndpointNotFound = newError(http.StatusNotFound, CodeNotFound, "no such endpoint in this project: its hooks never failed")

// ListEndpoints lists the project's endpoints (GET /v1/endpoints).
func (m endpointManagement) ListEndpoints(ctx context.Context, _ gen.ListEndpointsRequestObject) (gen.ListEndpointsResponseObject, error) {
	list, err := m.Endpoints.List(ctx, projectOf(ctx))
	if err != nil {
		return nil, internal(err)
	}
	data := make([]gen.Endpoint, len(list))
	for i, e := range list {
		data[i] = toEndpoint(e)
	}
	return gen.ListEndpoints200JSONResponse{Body: gen.EndpointListResponse{Data: data}}, nil
}

// ResumeEndpoint asks to end an endpoint's pause now (POST
// /v1/endpoints/resume).
func (m endpointManagement) ResumeEndpoint(ctx context.Context, req gen.ResumeEndpointRequestObject) (gen.ResumeEndpointResponseObject, error) {
	if req.Body == nil || req.Body.Domain == "" || len(req.Body.Domain) > maxDomainLength {
		return nil, invalid(Detail{Field: "domain", Message: "must be the endpoint's domain, 1 to 253 characters"})
	}
	e, err := m.Endpoints.Resume(ctx, projectOf(ctx), req.Body.Domain)
	switch {
	case errors.Is(err, postgres.ErrNotFound):
		return nil, errEndpointNotFound
	case err != nil:
		return nil, internal(err)
	}
	return gen.ResumeEndpoint202JSONResponse{Body: gen.EndpointResponse{Data: toEndpoint(e)}}, nil
}

func toEndpoint(e endpoint.Endpoint) gen.Endpoint {
	out := gen.Endpoint{
		Domain: e.Domain, State: gen.EndpointState(e.State), ConsecutiveFailures: int(e.ConsecutiveFailures),
		ResumeRequested: e.ResumeRequested, LastError: nonEmptyText(e.LastError),
	}
	if e.State == endpoint.StatePaused {
		cause := gen.EndpointCause(e.Cause)
		probing := e.Probing
		out.Cause, out.Reason, out.Probing = &cause, nonEmptyText(e.Reason), &probing
		out.PausedAt, out.PausedUntil = e.PausedAt, e.PausedUntil
	}
	return out
}

func nonEmptyText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
