package calendar

import (
	"errors"
	"time"
)

// zoneSpan is a stretch of time over which a zone keeps one UTC offset.
// A zero start or end means the span is unbounded on that side.
type zoneSpan struct {
	start, end time.Time
	offset     time.Duration
}

func (s zoneSpan) contains(t time.Time) bool {
	return (s.start.IsZero() || !t.Before(s.start)) && (s.end.IsZero() || t.Before(s.end))
}

// searchWindow covers every instant a wall-clock time can denote: UTC
// offsets lie within -12h and +14h, and the largest jump a zone has made is
// a whole day (Pacific/Apia skipped 30 December 2011).
const searchWindow = 50 * time.Hour

// maxSpans bounds the walk over zone transitions within the window.
const maxSpans = 32

// ResolveLocal returns the instant at which the clocks of loc show wall
// (whose UTC fields hold the local date and time). A wall time that happens
// twice (a fold, when clocks go back) resolves to the earlier instant; one
// that never happens (a gap, when clocks go forward) resolves to the first
// instant after the gap, so 02:30 on a spring-forward day becomes 03:00.
//
// time.Date leaves the result for a gap unspecified, so this works from the
// zone's transitions instead: each offset in effect near wall proposes the
// instant wall-offset, which is valid when that offset is in effect then.
func ResolveLocal(wall time.Time, loc *time.Location) (time.Time, error) {
	spans := zoneSpans(loc, wall.Add(-searchWindow), wall.Add(searchWindow))
	var best time.Time
	for _, s := range spans {
		if t := wall.Add(-s.offset); s.contains(t) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	if !best.IsZero() {
		return best, nil
	}
	// A gap: the wall time falls between the old offset's last moment and
	// the new offset's first, so the answer is the transition itself.
	for i := 1; i < len(spans); i++ {
		before, after := spans[i-1], spans[i]
		if !wall.Add(-before.offset).Before(after.start) && wall.Add(-after.offset).Before(after.start) {
			return after.start, nil
		}
	}
	return time.Time{}, errors.New("cannot be resolved in this time zone")
}

// probeStep is how far zoneSpans steps past a bound of Go's it cannot
// use: well under the shortest time a zone has kept an offset.
const probeStep = time.Hour

// zoneSpans lists the offsets loc uses between from and to, in order, the
// first span unbounded before and the last after. It walks Go's
// ZoneBounds but keeps only the bounds where the offset really changes:
// for a stretch ruled by a zone's TZ string (all of a "slim" zone file, as
// in Go's own tz database, and every zone after its last listed
// transition, 2037 in "fat" files), Go cuts the bounds at the year's edge,
// and has returned an end before the instant asked about.
func zoneSpans(loc *time.Location, from, to time.Time) []zoneSpan {
	var spans []zoneSpan
	cur := zoneSpan{offset: offsetAt(loc, from)}
	for t := from; t.Before(to) && len(spans) < maxSpans; {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() {
			break
		}
		if !end.After(t) {
			end = t.Add(probeStep)
		}
		if offsetAt(loc, end) != cur.offset {
			at := end
			if offsetAt(loc, end.Add(-time.Second)) != cur.offset {
				at = transition(loc, t, end)
			}
			cur.end = at
			spans = append(spans, cur)
			cur = zoneSpan{start: at, offset: offsetAt(loc, at)}
		}
		t = end
	}
	return append(spans, cur)
}

func offsetAt(loc *time.Location, t time.Time) time.Duration {
	_, secs := t.In(loc).Zone()
	return time.Duration(secs) * time.Second
}

// transition is the first whole second after lo at which loc's offset
// differs from lo's, given that it differs at hi: a bisection, since zones
// change offset on whole seconds.
func transition(loc *time.Location, lo, hi time.Time) time.Time {
	lo, hi = lo.Truncate(time.Second), hi.Truncate(time.Second)
	before := offsetAt(loc, lo)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if offsetAt(loc, mid) == before {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
