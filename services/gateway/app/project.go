package app

import (
	"context"
	"fmt"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
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

// Database is what the administrative operations need of the
// configuration: where the database is, and the keyring its secrets are
// sealed with (SUNDIAL_SECRET_KEYS).
type Database struct {
	URL        string
	SecretKeys string
}

// Database is the configuration's database.
func (c Config) Database() Database {
	return Database{URL: c.DatabaseURL, SecretKeys: c.SecretKeys}
}

// CreateProject creates a project delivering to domain (host[:port]), with
// an API key and an active signing key, in one transaction. A bad name or
// domain is an error wrapping ErrInvalidProject.
func CreateProject(ctx context.Context, db Database, name, domain string) (Credentials, error) {
	if _, err := project.ValidateName(name); err != nil {
		return Credentials{}, err
	}
	if _, err := project.ValidateDomain(domain); err != nil {
		return Credentials{}, err
	}
	keys, err := secretbox.Parse(db.SecretKeys)
	if err != nil {
		return Credentials{}, fmt.Errorf("config: %w", err)
	}
	pool, err := postgres.Connect(ctx, db.URL, 2)
	if err != nil {
		return Credentials{}, err
	}
	defer pool.Close()
	created, err := project.Create(ctx, pool, keys, name, domain)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{ProjectID: created.ID.String(), APIKey: created.APIKey, SigningKey: created.SigningKey}, nil
}
