package bulk

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// Action names a bulk action.
type Action string

// The bulk actions.
const (
	ActionRetry  Action = "retry"
	ActionReplay Action = "replay"
	ActionCancel Action = "cancel"
)

// statuses are the hook statuses each action selects (the statuses of
// RetryFailedHooksInRange, LockCompletedHooksInRange and CancelHooksInRange).
var statuses = map[Action][]string{
	ActionRetry:  {"failed"},
	ActionReplay: {"completed"},
	ActionCancel: {"pending", "retry"},
}

// Valid reports a known action.
func (a Action) Valid() bool {
	_, ok := statuses[a]
	return ok
}

// Count returns how many hooks action would act on over rng now (at most
// rng.Limit): the same selection as the action's, without locking. The
// dashboard shows it before asking to confirm; the action itself may then
// find another number, if hooks change meanwhile.
func (s *Service) Count(ctx context.Context, projectID uuid.UUID, action Action, rng Range) (int64, error) {
	st, ok := statuses[action]
	if !ok {
		return 0, fmt.Errorf("bulk count: unknown action %q", action)
	}
	f := filterOf(&rng)
	n, err := store.New(s.pool).CountHooksInRange(ctx, store.CountHooksInRangeParams{
		ProjectID: projectID, Statuses: st, StartTime: f.start, EndTime: f.end,
		Path: f.path, PathBase: f.pathBase, SequenceID: f.sequenceID, Tags: f.tags, MaxHooks: f.limit,
	})
	if err != nil {
		return 0, fmt.Errorf("bulk count: %w", err)
	}
	return n, nil
}

// Run runs action over sel and returns how many hooks it affected.
func (s *Service) Run(ctx context.Context, projectID uuid.UUID, action Action, sel Selection) (int64, error) {
	switch action {
	case ActionRetry:
		return s.Retry(ctx, projectID, sel)
	case ActionCancel:
		return s.Cancel(ctx, projectID, sel)
	case ActionReplay:
		out, err := s.Replay(ctx, projectID, sel)
		return out.Affected, err
	}
	return 0, fmt.Errorf("bulk: unknown action %q", action)
}
