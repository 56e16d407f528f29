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
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
)

// BulkDeps is what the bulk actions need, set by app.New.
type BulkDeps struct {
	Bulk BulkService
}

// BulkService runs the bulk actions (bulk.Service).
type BulkService interface {
	Retry(ctx context.Context, projectID uuid.UUID, sel bulk.Selection) (int64, error)
	Replay(ctx context.Context, projectID uuid.UUID, sel bulk.Selection) (bulk.Replayed, error)
	Cancel(ctx context.Context, projectID uuid.UUID, sel bulk.Selection) (int64, error)
	RetryIDs(ctx context.Context, keyProject uuid.UUID, r bulk.RetryIDsRequest) (int64, error)
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
	sel, err := selection(req.Body)
	if err != nil {
		return nil, err
	}
	n, err := a.Bulk.Retry(ctx, projectOf(ctx), sel)
	if err != nil {
		return nil, internal(err)
	}
	return gen.BulkRetry200JSONResponse{BulkActionDoneJSONResponse: done(n)}, nil
}

// BulkReplay replays completed hooks (POST /v1/hooks/bulk/replay). The
// quota headers show the usage after the replays.
func (a bulkActions) BulkReplay(ctx context.Context, req gen.BulkReplayRequestObject) (gen.BulkReplayResponseObject, error) {
	sel, err := selection(req.Body)
	if err != nil {
		return nil, err
	}
	out, err := a.Bulk.Replay(ctx, projectOf(ctx), sel)
	var exhausted *quota.ExhaustedError
	switch {
	case errors.As(err, &exhausted):
		return nil, a.replayRefused(ctx, exhausted.Usage)
	case err != nil:
		return nil, internal(err)
	}
	if out.Usage != nil {
		out.Usage.SetHeaders(responseHeaders(ctx), a.cfg.HeaderPrefix)
	}
	return gen.BulkReplay200JSONResponse{BulkActionDoneJSONResponse: done(out.Affected)}, nil
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
	sel, err := selection(req.Body)
	if err != nil {
		return nil, err
	}
	n, err := a.Bulk.Cancel(ctx, projectOf(ctx), sel)
	if err != nil {
		return nil, internal(err)
	}
	return gen.BulkCancel200JSONResponse{BulkActionDoneJSONResponse: done(n)}, nil
}

// RetryIDs retries failed hooks by id (POST /v1/hooks/retryIDs).
func (a bulkActions) RetryIDs(ctx context.Context, req gen.RetryIDsRequestObject) (gen.RetryIDsResponseObject, error) {
	if req.Body == nil {
		return nil, errNoBody
	}
	n, err := a.Bulk.RetryIDs(ctx, projectOf(ctx), *req.Body)
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
	return gen.RetryIDs200JSONResponse{BulkActionDoneJSONResponse: done(n)}, nil
}

// selection validates a bulk action's body.
func selection(body *bulk.Request) (bulk.Selection, error) {
	if body == nil {
		return bulk.Selection{}, errNoBody
	}
	sel, err := body.Validate()
	var invalidReq *bulk.InvalidError
	if errors.As(err, &invalidReq) {
		return bulk.Selection{}, invalidBulk(invalidReq)
	}
	return sel, err
}

func invalidBulk(e *bulk.InvalidError) *Error {
	details := make([]Detail, len(e.Problems))
	for i, p := range e.Problems {
		details[i] = Detail(p)
	}
	return invalid(details...)
}

func done(affected int64) gen.BulkActionDoneJSONResponse {
	var body gen.BulkActionResponse
	body.Data.Affected = int(affected)
	return gen.BulkActionDoneJSONResponse{Body: body}
}
