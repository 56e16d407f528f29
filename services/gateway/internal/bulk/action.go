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
