package api

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/attempt"
)

// AttemptLister lists a hook's attempts.
type AttemptLister interface {
	List(ctx context.Context, projectID, hookID uuid.UUID) ([]attempt.Attempt, error)
}

// ListHookAttempts lists a hook's attempts (GET /v1/hooks/{id}/attempts).
func (s *server) ListHookAttempts(ctx context.Context, req gen.ListHookAttemptsRequestObject) (gen.ListHookAttemptsResponseObject, error) {
	if s.Attempts == nil {
		return nil, notImplemented("listing attempts")
	}
	id, err := hookID(req.Id)
	if err != nil {
		return nil, err
	}
	// The hook first: an unknown hook is a 404, a hook without attempts an empty list.
	if _, err := s.Hooks.Get(ctx, projectOf(ctx), id); err != nil {
		return nil, hookError(err)
	}
	rows, err := s.Attempts.List(ctx, projectOf(ctx), id)
	if err != nil {
		return nil, internal(err)
	}
	out := make([]gen.HookAttempt, len(rows))
	for i, r := range rows {
		out[i] = toAttempt(r)
	}
	return gen.ListHookAttempts200JSONResponse{Body: gen.HookAttemptListResponse{Data: out}}, nil
}

func toAttempt(r attempt.Attempt) gen.HookAttempt {
	a := gen.HookAttempt{
		Attempt:         r.Number,
		StartedAt:       r.StartedAt.UTC(),
		DurationSeconds: r.DurationSeconds,
		Outcome:         gen.HookAttemptOutcome(r.Outcome),
		StatusCode:      r.StatusCode,
		Error:           r.Error,
		FailureClass:    (*gen.FailureClass)(r.FailureClass),
		ResponseExcerpt: r.ResponseExcerpt,
	}
	if r.AsyncState != nil && r.AsyncDeadline != nil {
		a.Async = &gen.HookAttemptAsync{
			State:       gen.HookAttemptAsyncState(*r.AsyncState),
			Deadline:    r.AsyncDeadline.UTC(),
			TimeoutSecs: r.AsyncTimeoutSecs,
		}
	}
	if len(r.AckBody) > 0 {
		body := json.RawMessage(r.AckBody)
		a.AckBody = &body
	}
	if r.RequestHeaders != nil {
		h := gen.AttemptHeaders(r.RequestHeaders)
		a.RequestHeaders = &h
	}
	if r.ResponseHeaders != nil {
		h := gen.AttemptHeaders(r.ResponseHeaders)
		a.ResponseHeaders = &h
	}
	a.RequestHeadersOmitted = positive(r.RequestHeadersOmitted)
	a.ResponseHeadersOmitted = positive(r.ResponseHeadersOmitted)
	return a
}

// positive is n when above 0, else nil (left out of the answer).
func positive(n int32) *int32 {
	if n <= 0 {
		return nil
	}
	return &n
}
