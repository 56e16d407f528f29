// Package attempt reads a hook's delivery attempts for the API: what each
// delivery got back and, for one answered 202, its async side and the body
// the receiver acked or nacked with.
package attempt

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Lister lists attempts.
type Lister struct {
	q *store.Queries
}

// NewLister returns a Lister on db (a pool).
func NewLister(db store.DBTX) *Lister {
	return &Lister{q: store.New(db)}
}

// List returns the attempts of the project's hook, oldest first; none when
// the hook has none or is not the project's (the caller tells those apart).
func (l *Lister) List(ctx context.Context, projectID, hookID uuid.UUID) ([]store.ListHookAttemptsRow, error) {
	rows, err := l.q.ListHookAttempts(ctx, store.ListHookAttemptsParams{ProjectID: projectID, HookID: hookID})
	if err != nil {
		return nil, fmt.Errorf("list attempts of hook %s: %w", hookID, postgres.Translate(err))
	}
	return rows, nil
}
