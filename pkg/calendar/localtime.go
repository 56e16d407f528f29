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

// zoneSpans lists the offsets loc uses between from and to, in order.
func zoneSpans(loc *time.Location, from, to time.Time) []zoneSpan {
	var spans []zoneSpan
	for t := from; len(spans) < maxSpans; {
		local := t.In(loc)
		_, offsetSecs := local.Zone()
		start, end := local.ZoneBounds()
		spans = append(spans, zoneSpan{start: start, end: end, offset: time.Duration(offsetSecs) * time.Second})
		if end.IsZero() || !end.Before(to) {
			break
		}
		t = end
	}
	return spans
}
