package claim

import (
	"time"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Claim-ahead. A just-in-time claim is a transaction on a database that may
// be busy: 5 ms when it is quiet, 30 to 90 ms on a slow commit. Claimed at
// the instant it is due, a hook would wait for that commit every time. So
// the window claims up to WindowConfig.ClaimAhead before the hooks are due,
// and the claim's hooks are published together at once, each DueHook
// carrying its hold: how long it must still wait. The dispatcher starts the
// delivery no sooner than the hold after the message reached it (its
// dispatch package), and arrival comes after publishing, so a hook is never
// delivered early. The claim is off the delivery's critical path, and so is
// NATS: a claim's hooks (about 100 at 2,000 hooks/s) cross it as one
// message instead of one each at its own instant (docs/benchmarks.md,
// "Later the same day").
//
// The hold needs no estimate of the clock offset: the claim returns the
// database clock (db_now) as each row was written, and the answer reaches
// the scheduler after that, so from the local instant it arrived the
// database clock needs at most due_at - db_now more to reach due_at. Every
// row's db_now was read before the answer left, so the latest of them is
// the tightest such reading: the hold uses it for all the rows of a claim
// (the first rows of a large claim were read several milliseconds before
// its last). The local monotonic clock measures the wait; what it
// over-estimates is the commit and the trip back, a millisecond or two.

// releaseAt is the local instant at which a hook claimed for dueAt may be
// delivered, given that the claim's answer arrived at received (a
// time.Now reading, so the monotonic clock is used) and the database clock
// read dbNow when the row was returned.
func releaseAt(received, dueAt, dbNow time.Time) time.Time {
	if wait := dueAt.Sub(dbNow); wait > 0 {
		return received.Add(wait)
	}
	return received
}

// holdAt is how long after now a hook whose release is at release must
// still wait: zero once it has come.
func holdAt(now, release time.Time) time.Duration {
	return max(release.Sub(now), 0)
}

// latestDBNow is the latest database clock reading among rows.
func latestDBNow(rows []store.ClaimDueHooksRow) time.Time {
	var latest time.Time
	for _, r := range rows {
		if r.DbNow.After(latest) {
			latest = r.DbNow
		}
	}
	return latest
}
