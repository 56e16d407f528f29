package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
)

// ProjectSettings reads and changes a project's settings.
type ProjectSettings interface {
	Get(ctx context.Context, projectID uuid.UUID) (project.Settings, error)
	Update(ctx context.Context, projectID uuid.UUID, p project.Patch) (project.Settings, error)
}

// ProjectDeps is what the project settings need, set by app.New.
type ProjectDeps struct {
	Settings ProjectSettings
}

// projectSettings serves GET and PATCH /v1/project.
type projectSettings struct {
	ProjectDeps
	cfg Config
}

// GetProject returns the project's settings (GET /v1/project).
func (s projectSettings) GetProject(ctx context.Context, _ gen.GetProjectRequestObject) (gen.GetProjectResponseObject, error) {
	settings, err := s.Settings.Get(ctx, projectOf(ctx))
	if err != nil {
		return nil, projectError(err)
	}
	return gen.GetProject200JSONResponse{ProjectSettingsJSONResponse: projectResponse(settings)}, nil
}

// PatchProject changes the project's settings (PATCH /v1/project). The body
// was decoded strictly (strictBinder) into project.PatchRequest, which
// knows a field given as null from one left out.
func (s projectSettings) PatchProject(ctx context.Context, req gen.PatchProjectRequestObject) (gen.PatchProjectResponseObject, error) {
	patch, err := req.Body.Patch()
	if err != nil {
		return nil, projectError(err)
	}
	settings, err := s.Settings.Update(ctx, projectOf(ctx), patch)
	if err != nil {
		return nil, projectError(err)
	}
	return gen.PatchProject200JSONResponse{ProjectSettingsJSONResponse: projectResponse(settings)}, nil
}

// projectError maps the project package's errors to responses: every
// field at fault is named. The project of an authenticated key exists, so
// not finding it means it was deleted during the request, and its keys
// with it (ON DELETE CASCADE): the key is no longer valid.
func projectError(err error) error {
	var bad *project.InvalidSettingsError
	switch {
	case errors.As(err, &bad):
		details := make([]Detail, len(bad.Problems))
		for i, p := range bad.Problems {
			details[i] = Detail{Field: p.Field, Message: p.Message}
		}
		return invalid(details...)
	case errors.Is(err, postgres.ErrNotFound):
		return newError(http.StatusUnauthorized, CodeUnauthorized, "invalid API key: its project no longer exists")
	default:
		return internal(err)
	}
}

func projectResponse(s project.Settings) gen.ProjectSettingsJSONResponse {
	rp := s.RetryPolicy
	return gen.ProjectSettingsJSONResponse{Body: gen.ProjectResponse{Data: gen.Project{
		Id:     s.ID,
		Name:   s.Name,
		Domain: s.Domain,
		RetryPolicy: gen.RetryPolicy{
			MinRetries:    rp.MinRetries,
			DelaySecs:     rp.DelaySecs,
			Strategy:      gen.RetryPolicyStrategy(rp.Strategy),
			BackoffFactor: rp.BackoffFactor,
			MaxDelaySecs:  rp.MaxDelaySecs,
			Jitter:        rp.Jitter,
		},
		AsyncTimeoutSecs:       s.AsyncTimeoutSecs,
		AuthorizationHeaderSet: s.AuthorizationHeaderSet,
		Quota: gen.ProjectQuota{Limit: s.Quota.Limit, HardCapPercent: s.Quota.HardCapPercent,
			MaxRetentionDays: s.Quota.MaxRetentionDays},
		Alerts: gen.AlertSettings{
			GroupWaitSecs:   s.Alerts.GroupWaitSecs,
			FollowUpMinSecs: s.Alerts.FollowUpMinSecs,
			FollowUpMaxSecs: s.Alerts.FollowUpMaxSecs,
			OwnerEmails:     nonNil(s.Alerts.OwnerEmails),
		},
		SignatureScheme:   gen.SignatureScheme(s.SignatureScheme),
		MaxConcurrency:    s.MaxConcurrency,
		RetentionDays:     s.RetentionDays,
		FailurePolicy:     failurePolicy(s.FailurePolicy),
		OrderingOnFailure: gen.OrderingOnFailure(s.OrderingOnFailure),
		CreatedAt:         s.CreatedAt.UTC(),
		UpdatedAt:         s.UpdatedAt.UTC(),
	}}}
}

// failurePolicy shows every class with its action, the defaults included.
func failurePolicy(p failclass.Policy) gen.FailurePolicy {
	out := gen.FailurePolicy{}
	for class, action := range p.Effective() {
		out[class] = gen.FailureAction(action)
	}
	return out
}

// nonNil is s, or an empty list for nil, which JSON would show as null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
