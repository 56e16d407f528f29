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
// inside the default 30 s lease, so the scheduler does not re-drive the
// hook while this dispatcher still reports its result.
var DefaultRetry = bus.RetryPolicy{Tries: 5, Backoff: 250 * time.Millisecond, Timeout: 2 * time.Second}
