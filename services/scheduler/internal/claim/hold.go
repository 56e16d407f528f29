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
// database clock (db_now) as each row was written, and each row reaches
// the scheduler after that, so from the local instant a row arrived the
// database clock needs at most due_at - db_now more to reach due_at. Any
// row gives such a bound; the tightest is the row whose reading came
// closest before its arrival (answerClock), and the hold uses it for all
// the rows of a claim. The local monotonic clock measures the wait; what it
// over-estimates is that row's trip, from its reading to its arrival.
//
// Which row that is follows from how PostgreSQL answers: it sends rows as
// it writes them, a buffer (8 KiB) at a time, and the last buffer only once
// the claim has committed. Paired with the last reading and the whole
// answer's arrival, the bound took in the commit (a WAL flush, up to
// several milliseconds on a busy database), and every hook of the claim
// was late by it; a row of an earlier buffer arrives while the statement
// still runs (a claim small enough for one buffer gains nothing).
// Measured at 2,000 hooks/s on 2 vCPUs: the bound's over-estimate p50
// 2.1 -> 1.5 ms, p90 5.5 -> 3.2 ms, p99 12.2 -> 7.5 ms (docs/benchmarks.md,
// "The hold's floor").

// dbClock pairs a database clock reading with a local instant after it: by
// local, the database clock had reached db.
type dbClock struct {
	local, db time.Time
}

// answerClock is the tightest dbClock a claim's answer gives: of its rows
// (arrived[i] the local instant rows[i] was read), the one whose db_now
// came closest before its arrival. Without an arrival for every row, it is
// the latest reading paired with received, the instant the whole answer
// was in.
func answerClock(rows []store.ClaimDueHooksRow, arrived []time.Time, received time.Time) dbClock {
	best := dbClock{local: received, db: latestDBNow(rows)}
	if len(arrived) != len(rows) {
		return best
	}
	for i, r := range rows {
		if r.DbNow.Sub(arrived[i]) > best.db.Sub(best.local) {
			best = dbClock{local: arrived[i], db: r.DbNow}
		}
	}
	return best
}

// releaseAt is the local instant at which a hook claimed for dueAt may be
// delivered, given that the database clock had reached clock.db by
// clock.local (a time.Now reading, so the monotonic clock is used).
func (clock dbClock) releaseAt(dueAt time.Time) time.Time {
	if wait := dueAt.Sub(clock.db); wait > 0 {
		return clock.local.Add(wait)
	}
	return clock.local
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
