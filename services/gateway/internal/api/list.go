package api

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist"
)

// HookLister lists a project's hooks a page at a time.
type HookLister interface {
	List(ctx context.Context, projectID uuid.UUID, q hooklist.Query) (hooklist.Page, error)
}

// ListDeps is what listing hooks needs, set by app.New.
type ListDeps struct {
	Hooks HookLister
}

// hookList serves GET /v1/hooks.
type hookList struct {
	ListDeps
	cfg Config
}

// ListHooks lists the project's hooks (GET /v1/hooks). The query string is
// validated by hooklist.Parse from its raw values (keepQuery), not from the
// generated parameters: their binding ignores names the document does not
// declare and takes a date alone for a date-time, where listing refuses a
// misspelt parameter and wants an instant.
func (l hookList) ListHooks(ctx context.Context, _ gen.ListHooksRequestObject) (gen.ListHooksResponseObject, error) {
	values, ok := ctx.Value(queryKey{}).(url.Values)
	if !ok {
		return nil, internal(errors.New("list hooks: the query string was not kept (keepQuery is not installed)"))
	}
	q, err := hooklist.Parse(values)
	if err != nil {
		return nil, listError(err)
	}
	page, err := l.Hooks.List(ctx, projectOf(ctx), q)
	if err != nil {
		return nil, listError(err)
	}
	data := make([]gen.Hook, len(page.Hooks))
	for i, h := range page.Hooks {
		data[i] = toHook(h)
	}
	meta := gen.ListMeta{TotalItems: page.TotalItems, TotalItemsCapped: page.TotalCapped}
	if page.NextCursor != "" {
		meta.NextCursor = &page.NextCursor
	}
	return gen.ListHooks200JSONResponse{Body: gen.ListHooksResponse{Data: data, Meta: meta}}, nil
}

// listError answers the parameters at fault with a 400 naming each one.
func listError(err error) error {
	var bad *hooklist.InvalidError
	if !errors.As(err, &bad) {
		return internal(fmt.Errorf("list hooks: %w", err))
	}
	details := make([]Detail, len(bad.Problems))
	for i, p := range bad.Problems {
		details[i] = Detail(p)
	}
	return invalid(details...)
}

// queryKey keeps the raw query string of a GET /v1/hooks in its context.
type queryKey struct{}

// keepQuery is a strict-handler middleware that hands ListHooks the raw
// query string, which the generated strict handler does not pass on.
func keepQuery(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if operationID != "ListHooks" {
		return f
	}
	return func(c echo.Context, request any) (any, error) {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), queryKey{}, c.QueryParams())))
		return f(c, request)
	}
}
