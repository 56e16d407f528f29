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

// DefaultRetry tries for about 10 s. With the 10 s delivery limit that stays
// well inside the dispatcher consumer's 30 s AckWait, so JetStream does not
// hand the DueHook to another dispatcher while this one still works on it.
var DefaultRetry = bus.RetryPolicy{Tries: 5, Backoff: 250 * time.Millisecond, Timeout: 2 * time.Second}
