package claim

import (
	"time"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Claim-ahead. A claim is a transaction on a possibly busy database, so a
// hook claimed at the instant it is due would wait for that commit. The
// window claims up to WindowConfig.ClaimAhead early and publishes a claim's
// hooks together in one message, each DueHook carrying its hold: how long it
// must still wait. The dispatcher starts the delivery no sooner than the
// hold after the message reached it, so a hook is never delivered early,
// and neither the claim nor NATS is on its critical path
// (docs/benchmarks.md, "Claim ahead and the hold").
//
// The hold needs no estimate of the clock offset: each row carries the
// database clock (db_now) as it was written and arrives after that, so from
// its arrival the database clock needs at most due_at - db_now more. The
// tightest bound is the row read closest before its arrival (answerClock):
// PostgreSQL sends rows a buffer at a time, and a row of an early buffer
// arrives while the statement still runs, whereas the last buffer waits for
// the commit's WAL flush, which would make every hook of the claim late.

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
func answerClock(rows []store.ClaimHooksRow, arrived []time.Time, received time.Time) dbClock {
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
func latestDBNow(rows []store.ClaimHooksRow) time.Time {
	var latest time.Time
	for _, r := range rows {
		if r.DbNow.After(latest) {
			latest = r.DbNow
		}
	}
	return latest
}
