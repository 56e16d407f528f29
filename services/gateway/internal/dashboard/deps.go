package dashboard

import (
	"context"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/attempt"
	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
	"github.com/sundial-run/sundial/services/gateway/internal/hooklist"
	"github.com/sundial-run/sundial/services/gateway/internal/quota"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// FigureReader reads the overview's delivery figures (*store.Queries).
type FigureReader interface {
	ListDeliveryMinutes(ctx context.Context, arg store.ListDeliveryMinutesParams) ([]store.ListDeliveryMinutesRow, error)
}

// HookLister lists hooks as GET /v1/hooks does (*hooklist.Lister).
type HookLister interface {
	List(ctx context.Context, projectID uuid.UUID, q hooklist.Query) (hooklist.Page, error)
}

// HookGetter reads one hook as GET /v1/hooks/{id} and GET
// /v1/hooks/by-key do (*hook.Service); a hook of another project is
// hook.ErrNotFound.
type HookGetter interface {
	Get(ctx context.Context, projectID, id uuid.UUID) (hook.Hook, error)
	GetByKey(ctx context.Context, projectID uuid.UUID, key string) (hook.Hook, error)
}

// HookCreator schedules a hook as POST /v1/hooks does: the API's own
// hook service (api.Hooks), with its quota alerts and create batching.
type HookCreator interface {
	Create(ctx context.Context, projectID uuid.UUID, n hook.New) (hook.Hook, quota.Usage, error)
}

// AttemptLister lists a hook's attempts as GET /v1/hooks/{id}/attempts
// does (*attempt.Lister).
type AttemptLister interface {
	List(ctx context.Context, projectID, hookID uuid.UUID) ([]attempt.Attempt, error)
}

// BulkService runs the bulk actions, and their dry runs, as POST
// /v1/hooks/bulk/* does (*bulk.Service).
type BulkService interface {
	Run(ctx context.Context, projectID uuid.UUID, action bulk.Action, o bulk.Order) (bulk.Result, error)
}
