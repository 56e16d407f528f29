// Package report sends the dispatcher's attempt results to the scheduler: a
// Batcher gathers the results of concurrent deliveries for a few
// milliseconds and publishes them as one AttemptResults message, which
// saves a JetStream publish, a stored message and an acknowledgement per
// result. Every result goes out in an AttemptResults message, through a
// bus.Retrying with DefaultRetry.
package report

import (
	"time"

	"github.com/sundial-run/sundial/pkg/bus"
)

// DefaultRetry tries for at least 16 s when every publish fails at once, so
// that a result outlasts a JetStream cluster electing a new leader
// (docs/operations.md, "A NATS node dies"): a result given up is a hook
// delivered again when its lease ends. While results wait, the handler's pool stops
// taking new deliveries (dispatch.Handler), so an outage holds back
// deliveries instead of repeating them. A result published after its
// hook's lease is refused as stale, and the hook is delivered again, as it
// would have been without the wait.
var DefaultRetry = bus.RetryPolicy{Tries: 7, Backoff: 250 * time.Millisecond, Timeout: 2 * time.Second}
