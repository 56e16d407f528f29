package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// BulkDeps is what the bulk actions need, set by app.New.
type BulkDeps struct {
	Bulk BulkService
}

// BulkService runs the bulk actions (bulk.Service).
type BulkService interface {
	Retry(ctx context.Context, projectID uuid.UUID, o bulk.Order) (bulk.Result, error)
	Replay(ctx context.Context, projectID uuid.UUID, o bulk.Order) (bulk.Result, error)
	Cancel(ctx context.Context, projectID uuid.UUID, o bulk.Order) (bulk.Result, error)
	RetryIDs(ctx context.Context, keyProject uuid.UUID, r bulk.RetryIDsRequest) (bulk.Result, error)
}

// bulkActions serves POST /v1/hooks/bulk/{retry,replay,cancel} and POST
// /v1/hooks/retryIDs. The bodies were decoded strictly into the bulk
// package's request types (strictBinder); validation is that package's.
type bulkActions struct {
	BulkDeps
	cfg Config
}

// BulkRetry retries failed hooks (POST /v1/hooks/bulk/retry).
func (a bulkActions) BulkRetry(ctx context.Context, req gen.BulkRetryRequestObject) (gen.BulkRetryResponseObject, error) {
	o, err := a.order(bulk.ActionRetry, req.Body)
	if err != nil {
		return nil, err
	}
	r, err := a.Bulk.Retry(ctx, projectOf(ctx), o)
	if err != nil {
		return nil, internal(err)
	}
	return gen.BulkRetry200JSONResponse{BulkActionDoneJSONResponse: done(r)}, nil
}

// BulkReplay replays completed hooks (POST /v1/hooks/bulk/replay). The
// quota headers show the usage after the replays.
func (a bulkActions) BulkReplay(ctx context.Context, req gen.BulkReplayRequestObject) (gen.BulkReplayResponseObject, error) {
	o, err := a.order(bulk.ActionReplay, req.Body)
	if err != nil {
		return nil, err
	}
	r, err := a.Bulk.Replay(ctx, projectOf(ctx), o)
	var exhausted *quota.ExhaustedError
	switch {
	case errors.As(err, &exhausted):
		return nil, a.replayRefused(ctx, exhausted.Usage)
	case err != nil:
		return nil, internal(err)
	}
	if r.Usage != nil {
		r.Usage.SetHeaders(responseHeaders(ctx), a.cfg.HeaderPrefix)
	}
	return gen.BulkReplay200JSONResponse{BulkActionDoneJSONResponse: done(r)}, nil
}

// replayRefused is the 429 of a replay whose new hooks would pass the hard
// cap: none was created, and a smaller selection may still fit.
func (a bulkActions) replayRefused(ctx context.Context, u quota.Usage) error {
	u.SetHeaders(responseHeaders(ctx), a.cfg.HeaderPrefix)
	responseHeaders(ctx).Set("Retry-After", strconv.FormatInt(u.RetryAfter(), 10))
	return newError(http.StatusTooManyRequests, CodeQuotaExhausted, fmt.Sprintf(
		"replaying the selected hooks would pass the hook quota's hard cap (%d of %d hooks used, hard cap %d), so none was replayed; "+
			"%d more hooks can be created until the quota resets at %s",
		u.Used, u.Limit, u.HardCap, max(0, u.HardCap-u.Used), u.ResetsAt.UTC().Format(time.RFC3339)))
}

// BulkCancel cancels pending and retrying hooks (POST /v1/hooks/bulk/cancel).
func (a bulkActions) BulkCancel(ctx context.Context, req gen.BulkCancelRequestObject) (gen.BulkCancelResponseObject, error) {
	o, err := a.order(bulk.ActionCancel, req.Body)
	if err != nil {
		return nil, err
	}
	r, err := a.Bulk.Cancel(ctx, projectOf(ctx), o)
	if err != nil {
		return nil, internal(err)
	}
	return gen.BulkCancel200JSONResponse{BulkActionDoneJSONResponse: done(r)}, nil
}

// RetryIDs retries failed hooks by id (POST /v1/hooks/retryIDs).
func (a bulkActions) RetryIDs(ctx context.Context, req gen.RetryIDsRequestObject) (gen.RetryIDsResponseObject, error) {
	if req.Body == nil {
		return nil, errNoBody
	}
	r, err := a.Bulk.RetryIDs(ctx, projectOf(ctx), *req.Body)
	var invalidReq *bulk.InvalidError
	switch {
	case errors.As(err, &invalidReq):
		return nil, invalidBulk(invalidReq)
	case errors.Is(err, bulk.ErrForbidden):
		return nil, newError(http.StatusForbidden, CodeForbidden, "projectID must be the project of the API key",
			Detail{Field: "projectID", Message: "is not the project of this API key"})
	case err != nil:
		return nil, internal(err)
	}
	return gen.RetryIDs200JSONResponse{BulkActionDoneJSONResponse: done(r)}, nil
}

// order validates a bulk action's body: a field at fault is a 400 naming
// it, an edit's data over the bound a 413 naming edit.data, as a created
// hook's data is.
func (a bulkActions) order(action bulk.Action, body *bulk.Request) (bulk.Order, error) {
	if body == nil {
		return bulk.Order{}, errNoBody
	}
	o, err := body.Order(action, a.cfg.MaxDataBytes)
	var (
		invalidReq *bulk.InvalidError
		tooLarge   *hook.TooLargeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return bulk.Order{}, newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "edit."+tooLarge.Error(),
			Detail{Field: "edit.data", Message: fmt.Sprintf("must be at most %d bytes", tooLarge.Max)})
	case errors.As(err, &invalidReq):
		return bulk.Order{}, invalidBulk(invalidReq)
	}
	return o, err
}

func invalidBulk(e *bulk.InvalidError) *Error {
	details := make([]Detail, len(e.Problems))
	for i, p := range e.Problems {
		details[i] = Detail(p)
	}
	return invalid(details...)
}

// done is the answer of an action, or of its dry run.
func done(r bulk.Result) gen.BulkActionDoneJSONResponse {
	var body gen.BulkActionResponse
	body.Data.Affected = int(r.Affected)
	if r.DryRun {
		sample := make([]gen.BulkSampleHook, len(r.Sample))
		for i, h := range r.Sample {
			sample[i] = sampleHook(h)
		}
		body.Data.DryRun, body.Data.Sample = &r.DryRun, &sample
	}
	if r.QuotaRefused {
		body.Data.QuotaRefused = &r.QuotaRefused
	}
	return gen.BulkActionDoneJSONResponse{Body: body}
}
