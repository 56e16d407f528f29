package event

import "time"

// Deferral bounds: the one place that says how long a hook a dispatcher
// could not start (eventv1.Outcome_OUTCOME_DEFERRED) waits before it is
// handed out again. The dispatcher suggests a wait (AttemptResult.defer_for)
// and the scheduler clamps it with ClampDefer. At least MinDefer, so that a
// host at its limit does not cost a claim and a result every few
// milliseconds per waiting hook; at most MaxDefer, so that a hook waits for
// a busy host about as long as a slot takes to free, not for a retry delay.
const (
	MinDefer = 50 * time.Millisecond
	MaxDefer = 5 * time.Second
)

// ClampDefer bounds a suggested deferral to [MinDefer, MaxDefer]; a zero or
// negative suggestion (none) is MinDefer.
func ClampDefer(d time.Duration) time.Duration {
	return min(max(d, MinDefer), MaxDefer)
}
