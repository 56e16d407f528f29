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
	Number          int32
	StartedAt       time.Time
	DurationSeconds float64
	Outcome         string
	StatusCode      *int32
	Error           *string
	// FailureClass is a failed attempt's class (pkg/failclass).
	FailureClass     *string
	ResponseExcerpt  *string
	AsyncState       *string
	AsyncDeadline    *time.Time
	AsyncTimeoutSecs *int32
	// AckBody is the body the receiver acked or nacked an async attempt
	// with.
	AckBody json.RawMessage
	// RequestHeaders and ResponseHeaders are the delivery's headers as the
	// dispatcher recorded them, bounded and redacted (docs/choices.md,
	// "Attempt headers"): each name with its values; nil when none was
	// recorded. The Omitted counts are the lines the bounds left out.
	RequestHeaders, ResponseHeaders               map[string][]string
	RequestHeadersOmitted, ResponseHeadersOmitted int32
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
			StatusCode: r.StatusCode, Error: r.Error, FailureClass: r.FailureClass, ResponseExcerpt: r.ResponseExcerpt, AsyncState: r.AsyncState,
			AsyncDeadline: r.AsyncDeadline, AsyncTimeoutSecs: r.AsyncTimeoutSecs, AckBody: r.AckBody,
			RequestHeadersOmitted: r.RequestHeadersOmitted, ResponseHeadersOmitted: r.ResponseHeadersOmitted,
		}
		if attempts[i].RequestHeaders, err = headers(r.RequestHeaders); err != nil {
			return nil, fmt.Errorf("attempt %d of hook %s: request headers: %w", r.Attempt, hookID, err)
		}
		if attempts[i].ResponseHeaders, err = headers(r.ResponseHeaders); err != nil {
			return nil, fmt.Errorf("attempt %d of hook %s: response headers: %w", r.Attempt, hookID, err)
		}
	}
	return attempts, nil
}

// headers decodes a side's recorded headers; nil for none.
func headers(raw json.RawMessage) (map[string][]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var h map[string][]string
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, err
	}
	return h, nil
}
