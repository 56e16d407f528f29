// Package attempt reads a hook's delivery attempts for the API: what each
// delivery got back and, for one answered 202, its async side and the body
// the receiver acked or nacked with.
package attempt

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Attempt is one delivery attempt of a hook as the API and the dashboard
// show it. The async fields are set for an attempt answered 202.
type Attempt struct {
	// Number counts the hook's attempts from 1.
	Number           int32
	StartedAt        time.Time
	DurationSeconds  float64
	Outcome          string
	StatusCode       *int32
	Error            *string
	ResponseExcerpt  *string
	AsyncState       *string
	AsyncDeadline    *time.Time
	AsyncTimeoutSecs *int32
	// AckBody is the body the receiver acked or nacked an async attempt
	// with.
	AckBody json.RawMessage
}

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
func (l *Lister) List(ctx context.Context, projectID, hookID uuid.UUID) ([]Attempt, error) {
	rows, err := l.q.ListHookAttempts(ctx, store.ListHookAttemptsParams{ProjectID: projectID, HookID: hookID})
	if err != nil {
		return nil, fmt.Errorf("list attempts of hook %s: %w", hookID, postgres.Translate(err))
	}
	attempts := make([]Attempt, len(rows))
	for i, r := range rows {
		attempts[i] = Attempt{
			Number: r.Attempt, StartedAt: r.StartedAt, DurationSeconds: r.DurationSeconds, Outcome: r.Outcome,
			StatusCode: r.StatusCode, Error: r.Error, ResponseExcerpt: r.ResponseExcerpt, AsyncState: r.AsyncState,
			AsyncDeadline: r.AsyncDeadline, AsyncTimeoutSecs: r.AsyncTimeoutSecs, AckBody: r.AckBody,
		}
	}
	return attempts, nil
}
