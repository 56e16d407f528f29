package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/orderingkey"
)

// OrderingKeys reads and resumes a project's ordering keys (package
// orderingkey).
type OrderingKeys interface {
	Get(ctx context.Context, projectID uuid.UUID, key string) (orderingkey.Key, error)
	ListHeld(ctx context.Context, projectID uuid.UUID, pg orderingkey.Page) (orderingkey.HeldPage, error)
	Resume(ctx context.Context, projectID uuid.UUID, key string) (orderingkey.Key, error)
}

// OrderingKeyDeps is what /v1/ordering-keys needs, set by app.New.
type OrderingKeyDeps struct {
	OrderingKeys OrderingKeys
}

// orderingKeyManagement serves /v1/ordering-keys.
type orderingKeyManagement struct {
	OrderingKeyDeps
}

var errOrderingKeyNotFound = newError(http.StatusNotFound, CodeNotFound,
	"no such ordering key in this project: none of its hooks was delivered, and none is pending or waiting to retry")

// ListHeldOrderingKeys lists the project's held keys (GET
// /v1/ordering-keys?held=true).
func (m orderingKeyManagement) ListHeldOrderingKeys(ctx context.Context, req gen.ListHeldOrderingKeysRequestObject) (gen.ListHeldOrderingKeysResponseObject, error) {
	if err := onlyParams(ctx, "held", "limit", "cursor"); err != nil {
		return nil, err
	}
	if !req.Params.Held {
		return nil, invalid(Detail{Field: "held", Message: "must be true: only held keys are listed"})
	}
	pg, err := orderingkey.ValidPage(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, orderingKeyError(err)
	}
	page, err := m.OrderingKeys.ListHeld(ctx, projectOf(ctx), pg)
	if err != nil {
		return nil, orderingKeyError(err)
	}
	data := make([]gen.OrderingKey, len(page.Keys))
	for i, k := range page.Keys {
		data[i] = toOrderingKey(k)
	}
	meta := gen.ListMeta{TotalItems: page.TotalItems, TotalItemsCapped: page.Capped}
	if page.NextCursor != "" {
		meta.NextCursor = &page.NextCursor
	}
	return gen.ListHeldOrderingKeys200JSONResponse{OrderingKeyPageJSONResponse: gen.OrderingKeyPageJSONResponse{
		Body: gen.OrderingKeyListResponse{Data: data, Meta: meta},
	}}, nil
}

// GetOrderingKey returns a key's state (GET /v1/ordering-keys/{key}).
func (m orderingKeyManagement) GetOrderingKey(ctx context.Context, req gen.GetOrderingKeyRequestObject) (gen.GetOrderingKeyResponseObject, error) {
	if err := orderingKeyName(req.Key); err != nil {
		return nil, err
	}
	k, err := m.OrderingKeys.Get(ctx, projectOf(ctx), req.Key)
	if err != nil {
		return nil, orderingKeyError(err)
	}
	return gen.GetOrderingKey200JSONResponse{OrderingKeyFoundJSONResponse: orderingKeyFound(k)}, nil
}

// ResumeOrderingKey frees a held key for its next hook (POST
// /v1/ordering-keys/{key}/resume).
func (m orderingKeyManagement) ResumeOrderingKey(ctx context.Context, req gen.ResumeOrderingKeyRequestObject) (gen.ResumeOrderingKeyResponseObject, error) {
	if err := orderingKeyName(req.Key); err != nil {
		return nil, err
	}
	k, err := m.OrderingKeys.Resume(ctx, projectOf(ctx), req.Key)
	if err != nil {
		return nil, orderingKeyError(err)
	}
	return gen.ResumeOrderingKey200JSONResponse{OrderingKeyFoundJSONResponse: orderingKeyFound(k)}, nil
}

// orderingKeyName refuses a path key no hook can have, by the rules of a
// hook's orderingKey, naming the path parameter.
func orderingKeyName(key string) error {
	if err := hook.ValidateKey(key); err != nil {
		return invalid(Detail{Field: "key", Message: err.Error()})
	}
	return nil
}

// orderingKeyError maps the orderingkey package's errors to responses.
func orderingKeyError(err error) error {
	var (
		notHeld *orderingkey.NotHeldError
		bad     *orderingkey.InvalidError
	)
	switch {
	case errors.Is(err, orderingkey.ErrNotFound):
		return errOrderingKeyNotFound
	case errors.As(err, &notHeld):
		return newError(http.StatusConflict, CodeConflict, notHeld.Error())
	case errors.As(err, &bad):
		return invalid(Detail{Field: bad.Field, Message: bad.Message})
	}
	return internal(err)
}

func orderingKeyFound(k orderingkey.Key) gen.OrderingKeyFoundJSONResponse {
	return gen.OrderingKeyFoundJSONResponse{Body: gen.OrderingKeyResponse{Data: toOrderingKey(k)}}
}

// toOrderingKey is the OrderingKey resource; headHookId is null, not
// absent, for a free key.
func toOrderingKey(k orderingkey.Key) gen.OrderingKey {
	return gen.OrderingKey{Key: k.Key, HeadHookId: k.HeadHookID, Held: k.Held, Unfinished: k.Unfinished}
}
