package claim

import (
	"context"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Paused endpoints (docs/security.md, "Circuit breaker and Retry-After").
// The claim statement does not lease a due hook whose endpoint is paused:
// they move its run_at to the pause's end in the same statement and return
// it with Deferred set. Such a hook spends no attempt and holds no lease;
// the claimer only leaves it out of what it publishes, and gives its room
// under MaxInFlight back. The one hook of an endpoint whose pause has ended
// that the statement lets through is the probe: an ordinary delivery whose
// result decides (package breaker). A project whose listener is in its
// resume window (docs/listener.md, "Routing") has its due hooks held the
// same way, until the window's end or its listener's return (package
// release).

// leaveOutDeferred returns the rows that were leased, in order, and how
// many were deferred instead.
func (c *Claimer) leaveOutDeferred(ctx context.Context, rows []store.ClaimHooksRow) ([]store.ClaimHooksRow, int) {
	leased := rows[:0:0]
	deferred := 0
	for _, r := range rows {
		if r.Deferred {
			deferred++
			continue
		}
		leased = append(leased, r)
	}
	if deferred == 0 {
		return rows, 0
	}
	c.instruments.deferred.Add(ctx, int64(deferred))
	c.log.DebugContext(ctx, "hooks of paused endpoints or held listeners deferred", "count", deferred)
	return leased, deferred
}
