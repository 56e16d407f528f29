package claim

import (
	"context"
	"slices"
	"time"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Claim-ahead. A just-in-time claim is a transaction on a database that may
// be busy: 5 ms when it is quiet, 30 to 90 ms on a slow commit. Claimed at
// the instant it is due, a hook would wait for that commit every time. So
// the window claims up to WindowConfig.ClaimAhead before the hooks are due,
// and each DueHook is held here until its run_at has come by the database
// clock; only then is it published. The claim is off the delivery's
// critical path, and a hook is still never handed to a dispatcher early.
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
// published, given that the claim's answer arrived at received (a
// time.Now reading, so the monotonic clock is used) and the database clock
// read dbNow when the row was returned.
func releaseAt(received, dueAt, dbNow time.Time) time.Time {
	if wait := dueAt.Sub(dbNow); wait > 0 {
		return received.Add(wait)
	}
	return received
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

// mustHold reports whether any of rows is not yet due by the database clock.
func mustHold(rows []store.ClaimDueHooksRow) bool {
	return slices.ContainsFunc(rows, func(r store.ClaimDueHooksRow) bool { return r.DueAt.After(r.DbNow) })
}

// publishWhenDue publishes the DueHooks of rows, each no sooner than its
// releaseAt: those already due at once, the others in groups as their time
// comes. The wait is at most the claim-ahead. If ctx ends first the rest is
// not published; their leases re-drive them.
func (c *Claimer) publishWhenDue(ctx context.Context, rows []store.ClaimDueHooksRow, received, start time.Time, how string) {
	dbNow := latestDBNow(rows)
	release := func(r store.ClaimDueHooksRow) time.Time { return releaseAt(received, r.DueAt, dbNow) }
	c.admit.hold(len(rows))
	defer func() { c.admit.hold(-len(rows)) }()
	slices.SortFunc(rows, func(a, b store.ClaimDueHooksRow) int { return release(a).Compare(release(b)) })
	timer := time.NewTimer(0)
	defer timer.Stop()
	for len(rows) > 0 {
		if wait := time.Until(release(rows[0])); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				c.log.Warn("claimed hooks not published: stopped while holding them; leases will re-drive them",
					"count", len(rows), "err", ctx.Err())
				return
			case <-timer.C:
			}
		}
		now := time.Now()
		n := 1
		for n < len(rows) && !release(rows[n]).After(now) {
			n++
		}
		c.publish(ctx, rows[:n], start, how)
		c.admit.hold(-n)
		rows = rows[n:]
	}
}
