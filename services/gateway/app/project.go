package app

import (
	"context"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/project"
)

// Credentials are a new project's id and keys. The API key is not stored
// (only its hash is), so this is the one time it can be shown.
type Credentials struct {
	ProjectID  string `json:"projectId"`
	APIKey     string `json:"apiKey"`
	SigningKey string `json:"signingKey"`
}

// ErrInvalidProject wraps a name or domain that CreateProject refuses.
var ErrInvalidProject = project.ErrInvalid

// CreateProject creates a project delivering to domain (host[:port]), with
// an API key and an active signing key, in one transaction. A bad name or
// domain is an error wrapping ErrInvalidProject.
func CreateProject(ctx context.Context, databaseURL, name, domain string) (Credentials, error) {
	if _, err := project.ValidateName(name); err != nil {
		return Credentials{}, err
	}
	if _, err := project.ValidateDomain(domain); err != nil {
		return Credentials{}, err
	}
	pool, err := postgres.Connect(ctx, databaseURL, 2)
	if err != nil {
		return Credentials{}, err
	}
	defer pool.Close()
	created, err := project.Create(ctx, pool, name, domain)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{ProjectID: created.ID.String(), APIKey: created.APIKey, SigningKey: created.SigningKey}, nil
}
