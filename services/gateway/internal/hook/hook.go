package hook

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Hook is a hook as the API and the dashboard show it: its row without
// the scheduler's bookkeeping (leases, the claim's run time, retry
// budgets), which is the scheduler's to change and nobody's to show.
type Hook struct {
	ID                  uuid.UUID
	ProjectID           uuid.UUID
	Path                string
	Domain              string
	Data                json.RawMessage
	PostAt              time.Time
	Status              string
	Attempts            int32
	PostDurationSeconds float64
	FailureError        *string
	// FailureClass is the last failed attempt's class (pkg/failclass).
	FailureClass      *string
	TryAt             *time.Time
	WasNotified       bool
	RetryOverride     json.RawMessage
	SequenceID        *uuid.UUID
	SequenceStep      *string
	SequenceLastRunAt *time.Time
	// Key names the hook in its project (key.go), or is nil.
	Key *string
	// Tags are the hook's tags (tag.go), or nil.
	Tags []string
	// OrderingKey is the ordering key the hook was scheduled with (the
	// project's hooks of one are delivered one at a time), or nil.
	OrderingKey *string
	// Local is the wall time the hook was scheduled at, nil for a hook
	// scheduled by instant or delay; TZVersion the tz database release that
	// resolved it into PostAt.
	Local     *LocalTime
	TZVersion string
	// AsyncDeadline is when a hook answered 202 fails unless its answer
	// comes.
	AsyncDeadline *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// FromRow is the Hook of a stored row.
func FromRow(r store.Hook) Hook {
	h := Hook{
		ID: r.ID, ProjectID: r.ProjectID, Path: r.Path, Domain: r.Domain, Data: r.Data, PostAt: r.PostAt,
		Status: r.Status, Attempts: r.Attempts, PostDurationSeconds: r.PostDurationSeconds,
		FailureError: r.FailureError, FailureClass: r.FailureClass, TryAt: r.TryAt, WasNotified: r.WasNotified, RetryOverride: r.RetryOverride,
		SequenceID: r.SequenceID, SequenceStep: r.SequenceStep, SequenceLastRunAt: r.SequenceLastRunAt,
		Key: r.Key, Tags: r.Tags, OrderingKey: r.OrderingKey, AsyncDeadline: r.AsyncDeadline, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.Timezone != nil && r.PostAtLocal.Valid && r.TzVersion != nil {
		h.Local, h.TZVersion = &LocalTime{Wall: r.PostAtLocal.Time, Zone: *r.Timezone}, *r.TzVersion
	}
	return h
}

// FromRows is FromRow of each row, in order.
func FromRows(rows []store.Hook) []Hook {
	hooks := make([]Hook, len(rows))
	for i, r := range rows {
		hooks[i] = FromRow(r)
	}
	return hooks
}
