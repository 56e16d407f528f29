// Package credential loads what a project's deliveries are signed and
// authorised with, its signing keys, custom Authorization header and async
// URL secret, and keeps it in a short cache so that a busy project does not
// cost a database query per delivery.
package credential

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
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
	// MaxConcurrency is the project's cap on its deliveries in flight to
	// one host (package hostlimit); 0 when it has none.
	MaxConcurrency int
}

// Store reads credentials from PostgreSQL.
type Store struct {
	q *store.Queries
}

// NewStore returns a Store on db (a pool).
func NewStore(db store.DBTX) *Store {
	return &Store{q: store.New(db)}
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
	set := Set{AsyncSecret: rows[0].AsyncSecret}
	if c := rows[0].MaxConcurrency; c != nil {
		set.MaxConcurrency = int(*c)
	}
	if a := rows[0].AuthorizationHeader; a != nil {
		set.Authorization = *a
	}
	// The query orders the active key first; without one there is nothing
	// to sign with, and retiring keys alone must not stand in for it.
	if rows[0].State == nil || *rows[0].State != "active" {
		return set, nil
	}
	for _, r := range rows {
		if r.Secret != nil {
			set.Keys = append(set.Keys, *r.Secret)
		}
	}
	return set, nil
}
