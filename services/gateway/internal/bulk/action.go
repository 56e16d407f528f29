package bulk

// Action names a bulk action.
type Action string

// The bulk actions.
const (
	ActionRetry  Action = "retry"
	ActionReplay Action = "replay"
	ActionCancel Action = "cancel"
)

// Valid reports a known action.
func (a Action) Valid() bool {
	switch a {
	case ActionRetry, ActionReplay, ActionCancel:
		return true
	}
	return false
}

// edits reports whether the action takes an edit: retry changes the hook
// and replay its copy; cancel has nothing to apply one to.
func (a Action) edits() bool {
	return a == ActionRetry || a == ActionReplay
}

// Statuses are the hook statuses the action acts on: a retry's failed
// hooks, a replay's completed ones, a cancel's unfinished ones.
func (a Action) Statuses() []string {
	switch a {
	case ActionRetry:
		return []string{"failed"}
	case ActionReplay:
		return []string{"completed"}
	case ActionCancel:
		return []string{"pending", "retry"}
	}
	return nil
}
