package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/idempotency"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// CreateHook schedules a hook (POST /v1/hooks). The body was decoded
// strictly into hook.CreateRequest (strictBinder); validation is the hook
// package's.
func (s *server) CreateHook(ctx context.Context, req gen.CreateHookRequestObject) (gen.CreateHookResponseObject, error) {
	n, err := s.newHook(*req.Body, req.Params.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	created, usage, err := s.Hooks.Create(ctx, projectOf(ctx), n)
	if err != nil {
		return nil, s.createError(ctx, err, usage)
	}
	usage.SetHeaders(responseHeaders(ctx), s.Config.HeaderPrefix)
	return gen.CreateHook201JSONResponse{Body: gen.HookResponse{Data: toHook(created)}}, nil
}

// CreateHooks schedules a batch of hooks, all or none (POST
// /v1/hooks/batch). The body was decoded strictly into hook.BatchRequest
// (strictBinder, with the batch's body bound); each hook is validated as
// CreateHook's.
func (s *server) CreateHooks(ctx context.Context, req gen.CreateHooksRequestObject) (gen.CreateHooksResponseObject, error) {
	b, err := s.newBatch(*req.Body, req.Params.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	created, usage, err := s.Hooks.CreateAll(ctx, projectOf(ctx), b)
	if err != nil {
		return nil, s.createError(ctx, err, usage)
	}
	usage.SetHeaders(responseHeaders(ctx), s.Config.HeaderPrefix)
	return hooksCreated{hooks: created}, nil
}

// createError translates the error of a create: the quota's 429 with the
// usage without the refused hooks, the Idempotency-Key's 409s, else a
// fault.
func (s *server) createError(ctx context.Context, err error, usage quota.Usage) error {
	var (
		exhausted *quota.ExhaustedError
		replace   *hook.ReplaceError
	)
	switch {
	case errors.As(err, &exhausted):
		usage.SetHeaders(responseHeaders(ctx), s.Config.HeaderPrefix)
		responseHeaders(ctx).Set("Retry-After", strconv.FormatInt(usage.RetryAfter(), 10))
		return newError(http.StatusTooManyRequests, CodeQuotaExhausted,
			fmt.Sprintf("hook quota exhausted for this billing period (%d of %d hooks, hard cap %d); it resets at %s",
				usage.Used, usage.Limit, usage.HardCap, usage.ResetsAt.UTC().Format(time.RFC3339)))
	case errors.Is(err, idempotency.ErrKeyReused), errors.Is(err, idempotency.ErrHookDeleted):
		return newError(http.StatusConflict, CodeConflict, err.Error(),
			Detail{Field: idempotency.Header, Message: err.Error()})
	case errors.As(err, &replace):
		return newError(http.StatusConflict, CodeConflict, replace.Error(),
			Detail{Field: "key", Message: replace.Error()})
	}
	return internal(err)
}

// newHook validates a POST /v1/hooks request.
func (s *server) newHook(req hook.CreateRequest, key *string) (hook.New, error) {
	n, err := req.Validate(s.Config.MaxDataBytes)
	var (
		invalidReq *hook.InvalidError
		tooLarge   *hook.TooLargeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return hook.New{}, newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, tooLarge.Error(),
			Detail{Field: "data", Message: fmt.Sprintf("must be at most %d bytes", tooLarge.Max)})
	case errors.As(err, &invalidReq):
		return hook.New{}, invalidHook(http.StatusBadRequest, CodeInvalidRequest, invalidReq)
	case err != nil:
		return hook.New{}, internal(err)
	}
	n.IdempotencyKey, err = idempotencyKey(key)
	return n, err
}

// newBatch validates a POST /v1/hooks/batch request: a hook's data over
// the limit makes it a 413, as for a single create.
func (s *server) newBatch(req hook.BatchRequest, key *string) (hook.NewBatch, error) {
	b, err := req.Validate(s.Config.MaxDataBytes)
	var invalidReq *hook.BatchInvalidError
	switch {
	case errors.As(err, &invalidReq) && invalidReq.TooLarge:
		return hook.NewBatch{}, invalidHook(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, &invalidReq.InvalidError)
	case errors.As(err, &invalidReq):
		return hook.NewBatch{}, invalidHook(http.StatusBadRequest, CodeInvalidRequest, &invalidReq.InvalidError)
	case err != nil:
		return hook.NewBatch{}, internal(err)
	}
	b.IdempotencyKey, err = idempotencyKey(key)
	return b, err
}

// invalidHook is the error response naming every field at fault.
func invalidHook(status int, code string, e *hook.InvalidError) error {
	details := make([]Detail, len(e.Problems))
	for i, p := range e.Problems {
		details[i] = Detail(p)
	}
	return newError(status, code, "invalid request: "+e.Error(), details...)
}

// idempotencyKey validates the Idempotency-Key header of a create, if any.
func idempotencyKey(key *string) (string, error) {
	if key == nil {
		return "", nil
	}
	if err := idempotency.ValidateKey(*key); err != nil {
		return "", invalid(Detail{Field: idempotency.Header, Message: err.Error()})
	}
	return *key, nil
}

// GetHook returns a hook of the project (GET /v1/hooks/{id}).
func (s *server) GetHook(ctx context.Context, req gen.GetHookRequestObject) (gen.GetHookResponseObject, error) {
	id, err := hookID(req.Id)
	if err != nil {
		return nil, err
	}
	h, err := s.Hooks.Get(ctx, projectOf(ctx), id)
	if err != nil {
		return nil, hookError(err)
	}
	return gen.GetHook200JSONResponse{Body: gen.HookResponse{Data: toHook(h)}}, nil
}

// DeleteHook cancels and deletes a hook of the project (DELETE
// /v1/hooks/{id}).
func (s *server) DeleteHook(ctx context.Context, req gen.DeleteHookRequestObject) (gen.DeleteHookResponseObject, error) {
	id, err := hookID(req.Id)
	if err != nil {
		return nil, err
	}
	if err := s.Hooks.Delete(ctx, projectOf(ctx), id); err != nil {
		return nil, hookError(err)
	}
	return gen.DeleteHook200JSONResponse{Body: gen.EmptyResponse{Data: map[string]any{}}}, nil
}

// GetHookByKey returns the hook a key names in the project (GET
// /v1/hooks/by-key).
func (s *server) GetHookByKey(ctx context.Context, req gen.GetHookByKeyRequestObject) (gen.GetHookByKeyResponseObject, error) {
	if err := hookKey(req.Params.Key); err != nil {
		return nil, err
	}
	h, err := s.Hooks.GetByKey(ctx, projectOf(ctx), req.Params.Key)
	if err != nil {
		return nil, hookError(err)
	}
	return gen.GetHookByKey200JSONResponse{Body: gen.HookResponse{Data: toHook(h)}}, nil
}

// DeleteHookByKey cancels and deletes the hook a key names in the project
// (DELETE /v1/hooks/by-key).
func (s *server) DeleteHookByKey(ctx context.Context, req gen.DeleteHookByKeyRequestObject) (gen.DeleteHookByKeyResponseObject, error) {
	if err := hookKey(req.Params.Key); err != nil {
		return nil, err
	}
	if err := s.Hooks.DeleteByKey(ctx, projectOf(ctx), req.Params.Key); err != nil {
		return nil, hookError(err)
	}
	return gen.DeleteHookByKey200JSONResponse{Body: gen.EmptyResponse{Data: map[string]any{}}}, nil
}

// hookKey refuses a key no hook can have, naming the parameter.
func hookKey(key string) error {
	if err := hook.ValidateKey(key); err != nil {
		return invalid(Detail{Field: "key", Message: err.Error()})
	}
	return nil
}

var errHookNotFound = newError(http.StatusNotFound, CodeNotFound, "hook not found")

// hookID reads a hook id from the path. A malformed id is a 404 like any id
// that names no hook of this project: there is nothing to find under it.
func hookID(raw string) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, errHookNotFound
	}
	return id, nil
}

func hookError(err error) error {
	if errors.Is(err, hook.ErrNotFound) {
		return errHookNotFound
	}
	return internal(err)
}

// toHook shows a stored hook as the document's Hook: times in UTC, optional
// fields only when set.
func toHook(h hook.Hook) gen.Hook {
	out := gen.Hook{
		Id:                  h.ID,
		Path:                h.Path,
		Domain:              h.Domain,
		Data:                h.Data,
		PostAt:              h.PostAt.UTC(),
		Status:              gen.HookStatus(h.Status),
		Attempts:            h.Attempts,
		PostDurationSeconds: h.PostDurationSeconds,
		CreatedAt:           h.CreatedAt.UTC(),
		UpdatedAt:           h.UpdatedAt.UTC(),
		FailureError:        h.FailureError,
		FailureClass:        (*gen.FailureClass)(h.FailureClass),
		TryAt:               utc(h.TryAt),
		RetryOverride:       retryOverride(h.RetryOverride),
		Key:                 h.Key,
		OrderingKey:         h.OrderingKey,
	}
	if len(h.Tags) > 0 {
		out.Tags = &h.Tags
	}
	if h.Local != nil {
		wall := h.Local.WallText()
		out.PostAtLocal, out.Timezone, out.Tzdata = &wall, &h.Local.Zone, &h.TZVersion
	}
	if h.WasNotified {
		out.WasNotified = &h.WasNotified
	}
	if h.SequenceID != nil {
		out.SequenceData = &gen.HookSequenceData{SequenceID: *h.SequenceID, SequenceLastRunAt: utc(h.SequenceLastRunAt)}
		if h.SequenceStep != nil {
			out.SequenceData.StepName = *h.SequenceStep
		}
	}
	return out
}

// retryOverride reads the override stored with a hook. One that does not
// parse can only come from a direct database edit; the scheduler then
// applies the project's defaults, so the hook is shown without one.
func retryOverride(raw json.RawMessage) *gen.RetryOverride {
	if len(raw) == 0 {
		return nil
	}
	var o gen.RetryOverride
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil
	}
	return &o
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
