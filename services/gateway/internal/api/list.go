package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
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
	cfg    Config
	bodies *bodyBudget // nil: no bound
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
	release := func() {}
	if l.bodies != nil {
		// One goroutine reads the page's rows.
		var held int64
		q.Take = func(n int) bool {
			if !l.bodies.take(int64(n)) {
				return false
			}
			held += int64(n)
			return true
		}
		release = func() { l.bodies.give(held) }
	}
	page, err := l.Hooks.List(ctx, projectOf(ctx), q)
	if err != nil {
		release()
		return nil, listError(err)
	}
	meta := gen.ListMeta{TotalItems: page.TotalItems, TotalItemsCapped: page.TotalCapped}
	if page.NextCursor != "" {
		meta.NextCursor = &page.NextCursor
	}
	return hookPage{hooks: page.Hooks, meta: meta, release: release}, nil
}

// hookPage writes a page of hooks as gen.HookListResponse, one hook at a
// time: the generated response encodes the whole body into a buffer
// first, a second copy of a page that may hold hooklist.MaxPageBytes. Each
// hook is let go once written, so a slow reader holds less and less.
type hookPage struct {
	hooks []hook.Hook
	meta  gen.ListMeta
	// release gives the page's bytes back to the budget once it is
	// written (admission.go); nil without one.
	release func()
}

// writeBuffer is how much of the page is written to the connection at once.
const writeBuffer = 32 << 10

func (p hookPage) VisitListHooksResponse(w http.ResponseWriter) error {
	if p.release != nil {
		defer p.release()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, writeBuffer)
	enc := json.NewEncoder(bw)
	_, _ = bw.WriteString(`{"data":[`)
	for i := range p.hooks {
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		if err := enc.Encode(toHook(p.hooks[i])); err != nil {
			return err
		}
		p.hooks[i] = hook.Hook{}
	}
	_, _ = bw.WriteString(`],"meta":`)
	if err := enc.Encode(p.meta); err != nil {
		return err
	}
	_, _ = bw.WriteString("}\n")
	return bw.Flush()
}

// listError answers the parameters at fault with a 400 naming each one.
func listError(err error) error {
	if errors.Is(err, hooklist.ErrBusy) {
		return overBudget
	}
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

// queryKey keeps the raw query string of a listing in its context.
type queryKey struct{}

// keptQuery are the operations that read their raw query string: listing
// hooks parses it, and the sequences' listings and preview and the held
// keys' and the bulk jobs' listings refuse the parameters they do not
// define (sequences.go, orderingkeys.go, bulkjobs.go).
var keptQuery = map[string]bool{
	"ListHooks": true, "ListSequences": true, "ListSequenceRuns": true, "PreviewSequence": true,
	"ListHeldOrderingKeys": true, "ListBulkJobs": true,
}

// keepQuery is a strict-handler middleware that hands those operations the
// raw query string, which the generated strict handler does not pass on.
func keepQuery(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if !keptQuery[operationID] {
		return f
	}
	return func(c echo.Context, request any) (any, error) {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), queryKey{}, c.QueryParams())))
		return f(c, request)
	}
}
