// Package credential loads what a project's deliveries are signed and
// authorised with, its signing keys and signature scheme, custom
// Authorization header and async URL secret, and keeps it in a short cache so that a busy project does not
// cost a database query per delivery.
package credential

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/pkg/signing"
	"github.com/sundial-run/sundial/services/dispatcher/internal/store"
)

// Set is one project's delivery credentials. It holds secrets: never log it.
type Set struct {
	// Keys sign deliveries: the active key first, then retiring keys still
	// in their grace period. Empty when the project has no active key.
	Keys []string
	// Authorization is sent as the Authorization header when not empty.
	Authorization string
	// AsyncSecret makes the tokens of the ack and nack URLs sent with
	// every delivery (package asyncurl).
	AsyncSecret []byte
	// Scheme is the project's choice of signature headers.
	Scheme signing.SignatureScheme
	// MaxConcurrency is the project's cap on its deliveries in flight to
	// one host (package hostlimit); 0 when it has none.
	MaxConcurrency int
}

// Store reads credentials from PostgreSQL and opens them (they are stored
// sealed: package secretbox).
type Store struct {
	q    *store.Queries
	keys *secretbox.Keyring
}

// NewStore returns a Store on db (a pool), opening the secrets with keys.
func NewStore(db store.DBTX, keys *secretbox.Keyring) *Store {
	return &Store{q: store.New(db), keys: keys}
}

// Get returns the project's credentials, or an error wrapping
// postgres.ErrNotFound when the project does not exist.
func (s *Store) Get(ctx context.Context, projectID uuid.UUID) (Set, error) {
	rows, err := s.q.GetDeliveryCredentials(ctx, projectID)
	if err != nil {
		return Set{}, fmt.Errorf("load credentials of project %s: %w", projectID, postgres.Translate(err))
	}
	if len(rows) == 0 {
		return Set{}, fmt.Errorf("project %s: %w", projectID, postgres.ErrNotFound)
	}
	p := rows[0]
	async, err := s.keys.Open(secretbox.Label(secretbox.ProjectAsyncSecret, projectID), p.AsyncSecretSealed)
	if err != nil {
		return Set{}, fmt.Errorf("project %s: %w", projectID, err)
	}
	var auth []byte
	if p.AuthorizationHeaderSealed != nil {
		auth, err = s.keys.Open(secretbox.Label(secretbox.ProjectAuthorization, projectID), *p.AuthorizationHeaderSealed)
		if err != nil {
			return Set{}, fmt.Errorf("project %s: %w", projectID, err)
		}
	}
	set := Set{AsyncSecret: async, Authorization: string(auth), Scheme: signing.SignatureScheme(p.SignatureScheme)}
	if c := p.MaxConcurrency; c != nil {
		set.MaxConcurrency = int(*c)
	}
	// The query orders the active key first; without one there is nothing
	// to sign with, and retiring keys alone must not stand in for it.
	if p.State == nil || *p.State != "active" {
		return set, nil
	}
	for _, r := range rows {
		if r.KeyID == nil || r.SecretSealed == nil {
			continue // no key (the join's NULL row)
		}
		key, err := s.keys.Open(secretbox.Label(secretbox.SigningKeySecret, *r.KeyID), *r.SecretSealed)
		if err != nil {
			return Set{}, fmt.Errorf("project %s: %w", projectID, err)
		}
		set.Keys = append(set.Keys, string(key))
	}
	return set, nil
}
